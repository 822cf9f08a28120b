// src/program/dsl.cpp — the kernel DSL: every call records IR through the
// builder of the kernel being recorded (detail::current()).
#include "grove/dsl.h"

#include "grove/matrix.h"

#include "ir/type_rules.h"
#include "program/program_impl.h"
#include "runtime/core/scalar.h"

namespace grove {

using detail::current;
using ir::BinaryOp;
using ir::UnaryOp;

namespace {

ir::Builder& b() { return current().builder; }

// The statement of `e`, once it is known to be visible where the builder
// records: defined in the current block or one enclosing it. A C++ Expr can
// outlive the loop or branch whose body computed it, or be kept from
// another kernel's body; using it there would be a use its definition does
// not dominate.
ir::Stmt* use(ir::Stmt* def) {
  auto& ctx = current();
  for (ir::Block* block = ctx.builder.block(); block != nullptr;
       block = block->owner() ? block->owner()->parent() : nullptr) {
    if (def->parent() == block) return def;
  }
  throw Error("kernel '" + ctx.record->name + "': a value used here was computed inside a loop or branch "
              "that has ended, or in another kernel; to carry a value out of a loop or branch, assign it "
              "to a Var declared before it");
}
[[noreturn]] void unassigned() {
  detail::kernel_error("an Expr was used before it was given a value; assign it first (Expr e; ... e = x * 2;)");
}
ir::Stmt* use(const Expr& e) {
  if (e.stmt() == nullptr) unassigned();
  return use(e.stmt());
}

[[noreturn]] void fail(const std::string& message) { detail::kernel_error(message); }

Expr binary(BinaryOp op, const Expr& x, const Expr& y) {
  if (ir::needs_integers(op) && (is_float(x.type()) || is_float(y.type())))
    fail(std::string(ir::op_name(op)) + " needs integer operands but got " +
         std::string(type_name(x.type())) + " and " + std::string(type_name(y.type())) +
         "; cast the operands with cast(i32, ...)");
  return Expr(b().binary(op, use(x), use(y)));
}

Expr unary(UnaryOp op, const Expr& x) {
  if (ir::needs_integers(op) && is_float(x.type()))
    fail(std::string(ir::op_name(op)) + " needs an integer operand but got " +
         std::string(type_name(x.type())) + "; cast it with cast(i32, ...)");
  return Expr(b().unary(op, use(x)));
}

// Runs `body` with the builder inserting at the end of `block`.
template <typename F>
void in_block(ir::Block* block, F&& body) {
  auto& ctx = current();
  if (ctx.blocks_open >= ir::kMaxNesting)
    fail("loops and branches nested more than " + std::to_string(ir::kMaxNesting) +
         " deep (an elif_ counts one); Grove takes at most that many: move the inner part into a "
         "second kernel, or use a loop instead of the deep nest");
  ir::Builder& bl = ctx.builder;
  ir::Block* saved_block = bl.block();
  size_t saved_pos = bl.position();
  bl.set_insert_point_to_end(block);
  struct Restore {
    ir::Builder& bl;
    ir::Block* block;
    size_t pos;
    int& open;
    ~Restore() {
      bl.set_insert_point(block, pos);
      --open;
    }
  } restore{bl, saved_block, saved_pos, ctx.blocks_open};
  ++ctx.blocks_open;
  body();
}

// Tracks enclosing loops for break_/continue_ checks.
template <typename F>
void in_loop(ir::StmtKind kind, bool parallel, F&& body) {
  auto& loops = current().loops;
  loops.push_back(parallel ? ir::StmtKind::StructFor : kind);
  struct Pop {
    std::vector<ir::StmtKind>& loops;
    ~Pop() { loops.pop_back(); }
  } pop{loops};
  body();
}

bool at_kernel_top_level() {
  auto& ctx = current();
  return ctx.builder.block() == ctx.kernel->body();
}

// Handles of another Program carry ids of that Program: checked before any
// id is looked up.
void check_program(const detail::ProgramImpl* owner, std::string_view kind, const std::function<std::string()>& name) {
  auto& ctx = current();
  ctx.program->check_same_program(owner, kind, name, "kernel '" + ctx.record->name + "'");
}

void check_field_program(const Field& f) {
  const detail::ProgramImpl* owner = f.program();  // raises for an empty or dead handle
  check_program(owner, "field", [&] { return f.name(); });
}

void check_snode_program(const SNode& sn) {
  check_program(sn.program(), "SNode", [&] { return sn.name(); });
}

// Checks that statements on `tree` may name the kernel's tree parameter
// `param` (-1: the tree's own instance): a tree type's SNodes and fields are
// reached through a tree argument, and only through one of their type.
void check_tree_param(int tree, int param, const std::string& what) {
  auto& ctx = current();
  const detail::ProgramImpl& p = *ctx.program;
  if (param < 0) {
    if (p.is_tree_type(tree)) {
      const std::string type = p.trees.type(tree).name;
      fail(what + " belongs to tree type '" + type + "', whose data lives in its instances; take the tree as an "
           "argument (arg(" + type + ", \"tr\")) and reach it through args.tree(\"tr\")");
    }
    return;
  }
  const auto& params = ctx.kernel->tree_params;
  if (param >= static_cast<int>(params.size()) || params[static_cast<size_t>(param)].tree != tree)
    fail(what + " comes from a tree argument of another kernel; use this kernel's args.tree(...)");
}

// Stamps the statements recorded in its lifetime with a tree parameter.
class TreeParamScope {
 public:
  explicit TreeParamScope(int param) : saved_(b().tree_param()) { b().set_tree_param(param); }
  ~TreeParamScope() { b().set_tree_param(saved_); }
  TreeParamScope(const TreeParamScope&) = delete;
  TreeParamScope& operator=(const TreeParamScope&) = delete;

 private:
  int saved_;
};

const ir::FieldDecl& checked_field(const Field& f, const Indices& index) {
  auto& ctx = current();
  check_field_program(f);
  int id = f.component_ids().at(0);
  const ir::FieldDecl& d = ctx.program->field_decl(id);
  if (ctx.program->forest().place_of(id) < 0)
    fail("field '" + f.name() + "' is used before it is placed; place it first, e.g. "
         "prog.root().dense(i, 16).place(" + f.name() + ")");
  if (f.instance() >= 0)
    fail("field '" + f.name() + "' is a host handle of tree '" + ctx.program->context->name_of(f.instance()) + "'" +
         "; inside a kernel, take the tree as an argument and use args.tree(...).field(...)");
  check_tree_param(ctx.program->tree_of_field(id), f.tree_param(), "field '" + f.name() + "'");
  if (static_cast<int>(index.size()) != d.ndim())
    fail("field '" + f.name() + "' has " + std::to_string(d.ndim()) + " dimension(s) but was indexed with " +
         std::to_string(index.size()) + " index(es); give one index per axis");
  for (size_t a = 0; a < index.size(); ++a)
    if (!is_integral(index[a].type()) || index[a].type() == DataType::u1)
      fail("index " + std::to_string(a) + " of field '" + f.name() + "' is " +
           std::string(type_name(index[a].type())) + "; indices must be integers (use cast(i32, ...))");
  return d;
}

std::vector<ir::Stmt*> stmts(const Indices& index) {
  std::vector<ir::Stmt*> out;
  for (const Expr& e : index) out.push_back(use(e));
  return out;
}

}  // namespace

// ---- Expr -------------------------------------------------------------------

Expr::Expr(int v) : stmt_(b().const_int(DataType::i32, v)) {}
Expr::Expr(unsigned v) : stmt_(b().const_int(DataType::u32, v)) {}
Expr::Expr(long v) : stmt_(b().const_int(DataType::i64, v)) {}
Expr::Expr(unsigned long v) : stmt_(b().const_int(DataType::u64, static_cast<int64_t>(v))) {}
Expr::Expr(long long v) : stmt_(b().const_int(DataType::i64, v)) {}
Expr::Expr(unsigned long long v) : stmt_(b().const_int(DataType::u64, static_cast<int64_t>(v))) {}
Expr::Expr(float v) : stmt_(b().const_float(current().program->config.default_fp, v)) {}
Expr::Expr(double v) : stmt_(b().const_float(current().program->config.default_fp, v)) {}
Expr::Expr(bool v) : stmt_(b().const_int(DataType::u1, v ? 1 : 0)) {}

DataType Expr::type() const {
  if (stmt_ == nullptr) unassigned();
  return stmt_->type();
}

Expr Expr::constant(DataType type, double value) {
  uint64_t bits = 0;
  __builtin_memcpy(&bits, &value, sizeof bits);
  return constant_bits(type, DataType::f64, bits);
}

// A constant of `type` from a value of `from` (i64, u64 or f64), by the
// rule host values follow (rt::argument_problem).
Expr Expr::constant_bits(DataType type, DataType from, uint64_t bits) {
  type = current().program->resolve(type);
  if (type == DataType::unknown) fail("Expr::constant needs a data type (i32, f32, ...), not unknown");
  const std::string problem = rt::argument_problem(from, bits, type);
  if (!problem.empty())
    fail("Expr::constant(" + std::string(type_name(type)) + ", ...) was given " + problem +
         "; give a value the type holds");
  // The bits in the type's compute type (f16: f32), which a constant holds.
  return Expr(b().const_bits(is_float(type) ? compute_type(type) : type, rt::convert_argument(from, bits, type)));
}

Expr operator+(const Expr& a, const Expr& c) { return binary(BinaryOp::add, a, c); }
Expr operator-(const Expr& a, const Expr& c) { return binary(BinaryOp::sub, a, c); }
Expr operator*(const Expr& a, const Expr& c) { return binary(BinaryOp::mul, a, c); }
Expr operator/(const Expr& a, const Expr& c) { return binary(BinaryOp::div, a, c); }
Expr operator%(const Expr& a, const Expr& c) { return binary(BinaryOp::mod, a, c); }
Expr operator<(const Expr& a, const Expr& c) { return binary(BinaryOp::cmp_lt, a, c); }
Expr operator<=(const Expr& a, const Expr& c) { return binary(BinaryOp::cmp_le, a, c); }
Expr operator>(const Expr& a, const Expr& c) { return binary(BinaryOp::cmp_gt, a, c); }
Expr operator>=(const Expr& a, const Expr& c) { return binary(BinaryOp::cmp_ge, a, c); }
Expr operator==(const Expr& a, const Expr& c) { return binary(BinaryOp::cmp_eq, a, c); }
Expr operator!=(const Expr& a, const Expr& c) { return binary(BinaryOp::cmp_ne, a, c); }
Expr operator&&(const Expr& a, const Expr& c) { return binary(BinaryOp::logic_and, a, c); }
Expr operator||(const Expr& a, const Expr& c) { return binary(BinaryOp::logic_or, a, c); }
Expr operator&(const Expr& a, const Expr& c) { return binary(BinaryOp::bit_and, a, c); }
Expr operator|(const Expr& a, const Expr& c) { return binary(BinaryOp::bit_or, a, c); }
Expr operator^(const Expr& a, const Expr& c) { return binary(BinaryOp::bit_xor, a, c); }
Expr operator<<(const Expr& a, const Expr& c) { return binary(BinaryOp::shl, a, c); }
Expr operator>>(const Expr& a, const Expr& c) { return binary(BinaryOp::shr, a, c); }
Expr operator-(const Expr& a) { return unary(UnaryOp::neg, a); }
Expr operator!(const Expr& a) { return unary(UnaryOp::logic_not, a); }
Expr operator~(const Expr& a) { return unary(UnaryOp::bit_not, a); }

Expr sqrt(const Expr& x) { return unary(UnaryOp::sqrt, x); }
Expr rsqrt(const Expr& x) { return unary(UnaryOp::rsqrt, x); }
Expr sin(const Expr& x) { return unary(UnaryOp::sin, x); }
Expr cos(const Expr& x) { return unary(UnaryOp::cos, x); }
Expr tan(const Expr& x) { return unary(UnaryOp::tan, x); }
Expr asin(const Expr& x) { return unary(UnaryOp::asin, x); }
Expr acos(const Expr& x) { return unary(UnaryOp::acos, x); }
Expr atan(const Expr& x) { return unary(UnaryOp::atan, x); }
Expr atan2(const Expr& y, const Expr& x) { return binary(BinaryOp::atan2, y, x); }
Expr tanh(const Expr& x) { return unary(UnaryOp::tanh, x); }
Expr exp(const Expr& x) { return unary(UnaryOp::exp, x); }
Expr log(const Expr& x) { return unary(UnaryOp::log, x); }
Expr pow(const Expr& x, const Expr& y) { return binary(BinaryOp::pow, x, y); }
Expr abs(const Expr& x) { return unary(UnaryOp::abs, x); }
Expr floor(const Expr& x) { return unary(UnaryOp::floor, x); }
Expr ceil(const Expr& x) { return unary(UnaryOp::ceil, x); }
Expr round(const Expr& x) { return unary(UnaryOp::round, x); }
Expr popcnt(const Expr& x) { return unary(UnaryOp::popcnt, x); }
Expr clz(const Expr& x) { return unary(UnaryOp::clz, x); }
Expr ctz(const Expr& x) { return unary(UnaryOp::ctz, x); }
Expr min(const Expr& a, const Expr& c) { return binary(BinaryOp::min, a, c); }
Expr max(const Expr& a, const Expr& c) { return binary(BinaryOp::max, a, c); }
Expr select(const Expr& cond, const Expr& a, const Expr& c) {
  return Expr(b().select(use(cond), use(a), use(c)));
}
Expr cast(DataType type, const Expr& x) {
  type = current().program->resolve(type);
  if (type == DataType::unknown) fail("cast to an unknown type");
  return Expr(b().cast(type, use(x)));
}

// ---- Vec --------------------------------------------------------------------

namespace {
template <typename F>
Vec zip(const Vec& a, const Vec& c, F&& f) {
  if (a.size() != c.size())
    fail("vectors of sizes " + std::to_string(a.size()) + " and " + std::to_string(c.size()) +
         " cannot be combined component-wise");
  std::vector<Expr> out;
  for (int n = 0; n < a.size(); ++n) out.push_back(f(a[n], c[n]));
  return Vec(std::move(out));
}
template <typename F>
Vec each(const Vec& a, F&& f) {
  std::vector<Expr> out;
  for (int n = 0; n < a.size(); ++n) out.push_back(f(a[n]));
  return Vec(std::move(out));
}
}  // namespace

Vec operator+(const Vec& a, const Vec& c) { return zip(a, c, [](const Expr& x, const Expr& y) { return x + y; }); }
Vec operator-(const Vec& a, const Vec& c) { return zip(a, c, [](const Expr& x, const Expr& y) { return x - y; }); }
Vec operator*(const Vec& a, const Vec& c) { return zip(a, c, [](const Expr& x, const Expr& y) { return x * y; }); }
Vec operator*(const Vec& a, const Expr& s) { return each(a, [&](const Expr& x) { return x * s; }); }
Vec operator*(const Expr& s, const Vec& a) { return each(a, [&](const Expr& x) { return s * x; }); }
Vec operator/(const Vec& a, const Expr& s) { return each(a, [&](const Expr& x) { return x / s; }); }
Vec operator+(const Vec& a, const Expr& s) { return each(a, [&](const Expr& x) { return x + s; }); }
Vec operator+(const Expr& s, const Vec& a) { return each(a, [&](const Expr& x) { return s + x; }); }
Vec operator-(const Vec& a, const Expr& s) { return each(a, [&](const Expr& x) { return x - s; }); }
Vec operator-(const Expr& s, const Vec& a) { return each(a, [&](const Expr& x) { return s - x; }); }
Vec operator/(const Expr& s, const Vec& a) { return each(a, [&](const Expr& x) { return s / x; }); }
Vec operator-(const Vec& a) { return each(a, [](const Expr& x) { return -x; }); }
#define GROVE_VEC_COMPARE(OP)                                                                          \
  Vec operator OP(const Vec& a, const Vec& c) {                                                        \
    return zip(a, c, [](const Expr& x, const Expr& y) { return x OP y; });                             \
  }                                                                                                    \
  Vec operator OP(const Vec& a, const Expr& s) { return each(a, [&](const Expr& x) { return x OP s; }); }
GROVE_VEC_COMPARE(<)
GROVE_VEC_COMPARE(<=)
GROVE_VEC_COMPARE(>)
GROVE_VEC_COMPARE(>=)
GROVE_VEC_COMPARE(==)
GROVE_VEC_COMPARE(!=)
#undef GROVE_VEC_COMPARE
Vec pow(const Vec& a, const Expr& e) { return each(a, [&](const Expr& x) { return pow(x, e); }); }
Vec pow(const Vec& a, const Vec& e) { return zip(a, e, [](const Expr& x, const Expr& y) { return pow(x, y); }); }
Vec abs(const Vec& a) { return each(a, [](const Expr& x) { return abs(x); }); }
Vec min(const Vec& a, const Vec& c) { return zip(a, c, [](const Expr& x, const Expr& y) { return min(x, y); }); }
Vec max(const Vec& a, const Vec& c) { return zip(a, c, [](const Expr& x, const Expr& y) { return max(x, y); }); }
Vec select(const Expr& cond, const Vec& a, const Vec& c) {
  return zip(a, c, [&](const Expr& x, const Expr& y) { return select(cond, x, y); });
}
Vec select(const Vec& cond, const Vec& a, const Vec& c) {
  if (cond.size() != a.size() || a.size() != c.size())
    fail("select of vectors of sizes " + std::to_string(cond.size()) + ", " + std::to_string(a.size()) + " and " +
         std::to_string(c.size()));
  std::vector<Expr> out;
  for (int n = 0; n < a.size(); ++n) out.push_back(select(cond[n], a[n], c[n]));
  return Vec(std::move(out));
}

Expr dot(const Vec& a, const Vec& c) {
  Vec p = a * c;
  if (p.size() == 0) fail("dot of empty vectors");
  Expr sum = p[0];
  for (int n = 1; n < p.size(); ++n) sum = sum + p[n];
  return sum;
}
Expr norm_sqr(const Vec& a) { return dot(a, a); }
Expr norm(const Vec& a) { return sqrt(norm_sqr(a)); }

// ---- Var --------------------------------------------------------------------

Var::Var(const Expr& init) : Var(init.type(), init) {}
namespace {
DataType checked_var_type(DataType type) {
  type = current().program->resolve(type);
  if (type == DataType::unknown)
    fail("a Var needs a data type (i32, f32, ...), not unknown; give one, or an initial value to "
         "take the type from");
  return type;
}
}  // namespace

Var::Var(DataType type, const Expr& init) : alloca_(b().alloca_var(checked_var_type(type))) {
  b().local_store(alloca_, use(init));
}
Var::Var(DataType type) : alloca_(b().alloca_var(checked_var_type(type))) {}
Var::Var(const Var& other) : alloca_(nullptr), rows_(other.rows_), cols_(other.cols_) {
  allocate(other.vec().components());
}
Var::Var(const FieldRef& init) : alloca_(nullptr) {
  const Field& f = init.field();
  if (f.components() == 1) {
    allocate({Expr(init)});
    return;
  }
  // A vector or matrix element: a variable of its shape.
  rows_ = f.n();
  cols_ = f.m();
  allocate(init.mat().components());
}
Var::Var(const Vec& init) : Var(Mat(init.size(), 1, init.components())) {}
Var::Var(const Mat& init) : alloca_(nullptr), rows_(init.rows()), cols_(init.cols()) {
  if (init.components().empty()) fail("a Var of an empty vector or matrix");
  allocate(init.components());
}
void Var::allocate(const std::vector<Expr>& components) {
  for (size_t n = 0; n < components.size(); ++n) {
    ir::Stmt* a = b().alloca_var(checked_var_type(components[n].type()));
    b().local_store(a, use(components[n]));
    if (n == 0) alloca_ = a;
    else more_.push_back(a);
  }
}
void Var::check_scalar() const {
  if (rows_ * cols_ != 1)
    fail("this Var holds " + std::to_string(rows_) + "x" + std::to_string(cols_) +
         " components; read it with vec() or mat(), assign it a Vec or Mat, or pick a component");
}
Var& Var::operator=(const Expr& value) {
  check_scalar();
  b().local_store(use(alloca_), use(value));
  return *this;
}
Var& Var::operator=(const Var& other) {
  if (other.rows_ * other.cols_ != 1) return *this = other.mat();
  return *this = Expr(other);
}
Var& Var::operator=(const Vec& value) { return *this = Mat(value.size(), 1, value.components()); }
Var& Var::operator=(const Mat& value) {
  if (value.rows() * value.cols() != rows_ * cols_ || (cols_ != 1 && value.rows() != rows_))
    fail("a Var of " + std::to_string(rows_) + "x" + std::to_string(cols_) + " components assigned a " +
         std::to_string(value.rows()) + "x" + std::to_string(value.cols()) + " value");
  for (size_t n = 0; n < value.components().size(); ++n)
    b().local_store(use(n == 0 ? alloca_ : more_[n - 1]), use(value.components()[n]));
  return *this;
}
Vec Var::vec() const {
  std::vector<Expr> out{Expr(b().local_load(use(alloca_)))};
  for (ir::Stmt* a : more_) out.push_back(Expr(b().local_load(use(a))));
  return Vec(std::move(out));
}
Mat Var::mat() const { return Mat(rows_, cols_, vec().components()); }
Var& Var::operator+=(const Expr& v) { return *this = Expr(*this) + v; }
Var& Var::operator-=(const Expr& v) { return *this = Expr(*this) - v; }
Var& Var::operator*=(const Expr& v) { return *this = Expr(*this) * v; }
Var& Var::operator/=(const Expr& v) { return *this = Expr(*this) / v; }
Var::operator Expr() const {
  check_scalar();
  return Expr(b().local_load(use(alloca_)));
}
DataType Var::type() const { return alloca_->type(); }

// ---- Field access -----------------------------------------------------------

FieldRef Field::operator()(const Indices& index) const {
  program();  // raises for an empty Field or one whose Program is gone
  // A field of another Program is refused here, before anything below asks
  // it for its name or components under that Program's lock.
  if (detail::current_or_null() != nullptr) check_field_program(*this);
  return FieldRef(*this, index);
}

FieldRef::operator Expr() const {
  if (field_.components() != 1)
    fail("field '" + field_.name() + "' has " + std::to_string(field_.components()) +
         " components; read it as a Vec or pick one with [c]");
  const ir::FieldDecl& d = checked_field(field_, index_);
  std::vector<ir::Stmt*> idx = stmts(index_);
  TreeParamScope param(field_.tree_param());
  return Expr(b().field_load(d, std::move(idx)));
}

FieldRef::operator Vec() const { return vec(); }

Vec FieldRef::vec() const {
  std::vector<Expr> out;
  for (int c = 0; c < field_.components(); ++c) out.push_back(Expr((*this)[c]));
  return Vec(std::move(out));
}

FieldRef& FieldRef::operator=(const Expr& value) {
  if (field_.components() != 1)
    fail("field '" + field_.name() + "' has " + std::to_string(field_.components()) +
         " components; assign a Vec, or pick one component with [c]");
  const ir::FieldDecl& d = checked_field(field_, index_);
  std::vector<ir::Stmt*> idx = stmts(index_);
  ir::Stmt* v = use(value);
  TreeParamScope param(field_.tree_param());
  b().field_store(d, std::move(idx), v);
  return *this;
}

FieldRef& FieldRef::operator=(const FieldRef& other) {
  if (field_.components() != 1 || other.field_.components() != 1) return *this = other.vec();
  return *this = Expr(other);
}

FieldRef& FieldRef::operator=(const Vec& value) {
  if (value.size() != field_.components())
    fail("field '" + field_.name() + "' has " + std::to_string(field_.components()) +
         " components but was assigned a vector of " + std::to_string(value.size()));
  for (int c = 0; c < value.size(); ++c) (*this)[c] = value[c];
  return *this;
}

FieldRef& FieldRef::operator+=(const Expr& v) {
  atomic_add(*this, v);
  return *this;
}
FieldRef& FieldRef::operator-=(const Expr& v) {
  atomic_sub(*this, v);
  return *this;
}
FieldRef& FieldRef::operator*=(const Expr& v) { return *this = Expr(*this) * v; }
FieldRef& FieldRef::operator/=(const Expr& v) { return *this = Expr(*this) / v; }
FieldRef& FieldRef::operator+=(const Vec& v) {
  if (v.size() != field_.components())
    fail("field '" + field_.name() + "' has " + std::to_string(field_.components()) +
         " components but was given a vector of " + std::to_string(v.size()));
  for (int c = 0; c < v.size(); ++c) atomic_add((*this)[c], v[c]);
  return *this;
}
FieldRef& FieldRef::operator-=(const Vec& v) {
  if (v.size() != field_.components())
    fail("field '" + field_.name() + "' has " + std::to_string(field_.components()) +
         " components but was given a vector of " + std::to_string(v.size()));
  for (int c = 0; c < v.size(); ++c) atomic_sub((*this)[c], v[c]);
  return *this;
}

FieldRef FieldRef::operator[](int component) const {
  if (component < 0 || component >= field_.components())
    fail("field '" + field_.name() + "' has " + std::to_string(field_.components()) +
         " components; component " + std::to_string(component) + " does not exist");
  return FieldRef(field_[component], index_);
}

FieldRef FieldRef::operator()(int row, int col) const {
  if (field_.m() == 1 || row < 0 || col < 0 || row >= field_.n() || col >= field_.m())
    fail("field '" + field_.name() + "' is " + std::to_string(field_.n()) + "x" +
         std::to_string(field_.m()) + "; component (" + std::to_string(row) + ", " +
         std::to_string(col) + ") does not exist");
  return FieldRef(field_[row * field_.m() + col], index_);
}

namespace {
Expr atomic(ir::AtomicOp op, const FieldRef& dest, const Expr& v) {
  if (dest.field().components() != 1)
    fail("atomic " + std::string(ir::op_name(op)) + " on field '" + dest.field().name() +
         "' needs one component; pick one with [c]");
  const ir::FieldDecl& d = checked_field(dest.field(), dest.index());
  if (ir::needs_integers(op) && is_float(d.dtype))
    fail("atomic " + std::string(ir::op_name(op)) + " needs an integer field, but field '" +
         d.name + "' is " + std::string(type_name(d.dtype)));
  std::vector<ir::Stmt*> idx = stmts(dest.index());
  ir::Stmt* value = use(v);
  TreeParamScope param(dest.field().tree_param());
  return Expr(b().field_atomic(op, d, std::move(idx), value));
}
}  // namespace

Expr atomic_add(const FieldRef& d, const Expr& v) { return atomic(ir::AtomicOp::add, d, v); }
Expr atomic_sub(const FieldRef& d, const Expr& v) { return atomic(ir::AtomicOp::sub, d, v); }
Expr atomic_min(const FieldRef& d, const Expr& v) { return atomic(ir::AtomicOp::min, d, v); }
Expr atomic_max(const FieldRef& d, const Expr& v) { return atomic(ir::AtomicOp::max, d, v); }
Expr atomic_and(const FieldRef& d, const Expr& v) { return atomic(ir::AtomicOp::bit_and, d, v); }
Expr atomic_or(const FieldRef& d, const Expr& v) { return atomic(ir::AtomicOp::bit_or, d, v); }
Expr atomic_xor(const FieldRef& d, const Expr& v) { return atomic(ir::AtomicOp::bit_xor, d, v); }

// ---- control flow -----------------------------------------------------------

namespace {

// Checks a range's bounds. A loop counts in i32 (docs/ir.md, `loop_index`),
// whatever its bounds' type; a constant bound it cannot hold is refused
// rather than cut to 32 bits.
void check_range_bounds(const Expr& begin, const Expr& end) {
  for (const Expr* e : {&begin, &end}) {
    if (!is_integral(e->type()) || e->type() == DataType::u1)
      fail("for_range bounds must be integers, got " + std::string(type_name(e->type())) +
           "; cast them with cast(i32, ...)");
    if (e->stmt()->is_const()) {
      if (!rt::argument_problem(e->type(), e->stmt()->bits(), DataType::i32).empty())
        fail("for_range bound " + rt::describe_value(e->type(), e->stmt()->bits()) +
             " is out of the range of the loop's index, which is i32; split the range into loops of fewer "
             "iterations");
    } else if (e->type() == DataType::i64 || e->type() == DataType::u64 || e->type() == DataType::u32) {
      // Converted to the i32 index, such a value would silently wrap (2^32 + 5
      // iterations ran 5): the conversion is the user's to write.
      fail("for_range bound of type " + std::string(type_name(e->type())) +
           " may not fit the loop's index, which is i32, and would wrap; write cast(i32, bound) where its "
           "values fit");
    }
  }
}

}  // namespace

void for_range(const Expr& begin, const Expr& end, const std::function<void(Expr)>& body) {
  check_range_bounds(begin, end);
  bool parallel = at_kernel_top_level();
  ir::Stmt* loop = b().range_for(use(begin), use(end));
  in_block(loop->body(), [&] {
    in_loop(ir::StmtKind::RangeFor, parallel, [&] { body(Expr(b().loop_index(loop, 0))); });
  });
}

namespace {

// Serial loops over axes[d..], innermost last, then body(I).
void nested_ranges(const std::vector<RangeAxis>& axes, size_t d, Indices& I, const std::function<void(Indices)>& body) {
  if (d == axes.size()) {
    body(I);
    return;
  }
  for_range(axes[d].begin, axes[d].end, [&](Expr v) {
    I[d] = v;
    nested_ranges(axes, d + 1, I, body);
  });
}

// The extent of an axis whose bounds are constants, or -1.
int64_t constant_extent(const RangeAxis& a) {
  const ir::Stmt* b = a.begin.stmt();
  const ir::Stmt* e = a.end.stmt();
  if (b == nullptr || e == nullptr || !b->is_const() || !e->is_const()) return -1;
  return std::max<int64_t>(0, e->const_int() - b->const_int());
}

// The parallel loop over the points of axes [0, upto], times `factor` (-1:
// not constant), counts in i32, as every loop.
void check_iterations(const std::vector<RangeAxis>& ax, size_t upto, int64_t factor) {
  int64_t iterations = factor;
  for (size_t d = 0; d <= upto && iterations >= 0; ++d) {
    const int64_t e = constant_extent(ax[d]);
    if (e < 0 || __builtin_mul_overflow(iterations, e, &iterations)) iterations = e < 0 ? -1 : INT64_MAX;
  }
  if (iterations > INT32_MAX)
    fail("for_range over a shape of more than 2^31 - 1 iterations (" +
         (iterations == INT64_MAX ? std::string("past 2^63") : std::to_string(iterations)) +
         "), the most a loop's i32 index counts; split it into several ranges");
}

// max(end - begin, 0) of the first `count` axes.
std::vector<Expr> extents_of(const std::vector<RangeAxis>& ax, size_t count) {
  std::vector<Expr> out;
  for (size_t d = 0; d < count; ++d) out.push_back(max(ax[d].end - ax[d].begin, Expr(0)));
  return out;
}

Expr point_div(const Expr& a, const Expr& b) { return cast(DataType::i32, cast(DataType::u32, a) / cast(DataType::u32, b)); }
Expr point_mod(const Expr& a, const Expr& b) { return cast(DataType::i32, cast(DataType::u32, a) % cast(DataType::u32, b)); }

// I[0..count) from `rest`, the number of a point of the axes before
// `count` (the last fastest): a division and remainder per axis.
void point_of(Expr rest, const std::vector<RangeAxis>& ax, const std::vector<Expr>& extents, size_t count,
              Indices& I) {
  for (size_t d = count; d-- > 0;) {
    I[d] = (d == 0 ? rest : point_mod(rest, extents[d])) + ax[d].begin;
    if (d > 0) rest = point_div(rest, extents[d]);
  }
}

// A shape on a backend that spreads it over a grid of invocations
// (Backend::grid_axes): the parallel loop runs over the points of the axes
// up to `lead` (with a division per axis when there are several), and each
// axis after it is a grid range_for in the one before, innermost last.
void grid_ranges(const std::vector<RangeAxis>& ax, size_t lead, Indices& I, const std::function<void(Indices)>& body) {
  const std::vector<Expr> extents = extents_of(ax, lead == 0 ? 0 : lead + 1);
  ir::Stmt* loop = nullptr;
  if (lead == 0) {
    loop = b().range_for(use(ax[0].begin), use(ax[0].end));
  } else {
    Expr total = extents[0];
    for (size_t d = 1; d <= lead; ++d) total = total * extents[d];
    loop = b().range_for(use(Expr(0)), use(total));
  }
  std::function<void(size_t)> axis = [&](size_t d) {
    if (d == ax.size()) {
      body(I);
      return;
    }
    ir::Stmt* inner = b().range_for(use(ax[d].begin), use(ax[d].end));
    inner->set_grid(true);
    in_block(inner->body(), [&] {
      // Still the parallel loop's point: break_() is refused here too.
      in_loop(ir::StmtKind::RangeFor, true, [&] {
        I[d] = Expr(b().loop_index(inner, 0));
        axis(d + 1);
      });
    });
  };
  in_block(loop->body(), [&] {
    in_loop(ir::StmtKind::RangeFor, true, [&] {
      const Expr t(b().loop_index(loop, 0));
      if (lead == 0) I[0] = t;
      else point_of(t, ax, extents, lead + 1, I);
      axis(lead + 1);
    });
  });
}

}  // namespace

void for_range(std::initializer_list<RangeAxis> axes, const std::function<void(Indices)>& body, int arity) {
  std::vector<RangeAxis> ax(axes);
  if (ax.empty() || ax.size() > static_cast<size_t>(ir::kMaxAxes))
    fail("for_range over a shape takes 1 to " + std::to_string(ir::kMaxAxes) + " axes, got " +
         std::to_string(ax.size()));
  if (arity >= 0 && arity != static_cast<int>(ax.size()))
    fail("for_range over " + std::to_string(ax.size()) + " axes with a body taking " + std::to_string(arity) +
         " indices; take one Expr per axis, or an Indices");
  for (RangeAxis& a : ax) {
    check_range_bounds(a.begin, a.end);
    // Every bound i32 from here on, as the loop's count (constants stay constants).
    for (Expr* e : {&a.begin, &a.end}) {
      if (e->stmt()->is_const()) *e = Expr::constant(DataType::i32, e->stmt()->const_int());
      else if (e->type() != DataType::i32) *e = cast(DataType::i32, *e);
    }
  }
  Indices I(ax.size());
  if (!at_kernel_top_level() || ax.size() == 1) {
    nested_ranges(ax, 0, I, body);
    return;
  }
  const size_t last = ax.size() - 1;
  const detail::Backend& backend = *current().target;
  if (const size_t grid = std::min<size_t>(backend.grid_axes(), ax.size()); grid > 1) {
    check_iterations(ax, ax.size() - grid, 1);
    grid_ranges(ax, ax.size() - grid, I, body);
    return;
  }
  const std::vector<Expr> extents = extents_of(ax, ax.size());
  // One parallel loop over (points of the axes before the last) x (pieces
  // of the last axis): an iteration finds its point with a division per
  // axis, then runs through its piece of the row. A row of constant extent
  // is cut into equal pieces of constant bounds (one piece: the whole row,
  // a loop with the row's own bounds).
  int64_t piece = backend.range_piece();
  int64_t known_pieces = -1;  // the pieces of a row, when constant
  if (const int64_t e = constant_extent(ax[last]); e >= 0 && piece > 1) {
    known_pieces = std::max<int64_t>(1, (e + piece - 1) / piece);
    piece = std::max<int64_t>(1, (e + known_pieces - 1) / known_pieces);
  }
  Expr pieces = known_pieces > 0 ? Expr(static_cast<int>(known_pieces))
                : piece == 1     ? extents[last]
                                 : (extents[last] + Expr(static_cast<int>(piece - 1))) / static_cast<int>(piece);
  Expr total = pieces;
  for (size_t d = 0; d < last; ++d) total = total * extents[d];
  check_iterations(ax, last - 1, known_pieces > 0 ? known_pieces : constant_extent(ax[last]));
  ir::Stmt* loop = b().range_for(use(Expr(0)), use(total));
  in_block(loop->body(), [&] {
    in_loop(ir::StmtKind::RangeFor, true, [&] {
      const Expr t(b().loop_index(loop, 0));
      const bool whole_rows = known_pieces == 1;
      Expr rest = whole_rows ? t : point_div(t, pieces);
      point_of(rest, ax, extents, last, I);
      if (piece == 1 && !whole_rows) {
        I[last] = point_mod(t, pieces) + ax[last].begin;
        body(I);
        return;
      }
      ir::Stmt* row = nullptr;
      if (whole_rows) {
        row = b().range_for(use(ax[last].begin), use(ax[last].end));
      } else {
        const Expr first = point_mod(t, pieces) * static_cast<int>(piece);
        const Expr end = min(first + static_cast<int>(piece), extents[last]);
        row = b().range_for(use(first + ax[last].begin), use(end + ax[last].begin));
      }
      in_block(row->body(), [&] {
        // Still the parallel loop's point: break_() is refused here too.
        in_loop(ir::StmtKind::RangeFor, true, [&] {
          I[last] = Expr(b().loop_index(row, 0));
          body(I);
        });
      });
    });
  });
}

void for_each(const Field& field, const std::function<void(Indices)>& body) {
  for_each(field, body, -1);
}

void for_each(const Field& field, const std::function<void(Indices)>& body, int arity) {
  auto& ctx = current();
  check_field_program(field);
  int id = field.component_ids().at(0);
  if (ctx.program->forest().place_of(id) < 0)
    fail("for_each over field '" + field.name() + "', which is not placed yet; place it first");
  const ir::FieldDecl& d = ctx.program->field_decl(id);
  if (field.instance() >= 0)
    fail("for_each over field '" + field.name() + "', a host handle of tree '" +
         ctx.program->context->name_of(field.instance()) + "'; inside a kernel, take the tree as an argument "
         "and loop over args.tree(...).field(...)");
  check_tree_param(ctx.program->tree_of_field(id), field.tree_param(), "field '" + field.name() + "'");
  if (arity >= 0 && arity != d.ndim())
    fail("for_each over field '" + field.name() + "' (" + std::to_string(d.ndim()) +
         " axes) with a body taking " + std::to_string(arity) +
         " indices; take one Expr per axis, or an Indices");
  if (!at_kernel_top_level())
    fail("for_each over field '" + field.name() + "' must be at the top level of the kernel "
         "(a struct-for is a parallel loop); move it out of the enclosing loop or branch");
  ir::Stmt* loop = nullptr;
  {
    TreeParamScope param(field.tree_param());
    loop = b().struct_for(d);
  }
  in_block(loop->body(), [&] {
    in_loop(ir::StmtKind::StructFor, true, [&] {
      Indices I;
      for (int a = 0; a < d.ndim(); ++a) I.push_back(Expr(b().loop_index(loop, a)));
      body(I);
    });
  });
}

// ---- SNode operations ---------------------------------------------------------

namespace {

const ir::SNodeDecl& checked_snode(const SNodeRef& ref, const Indices& index, const char* op, bool list_op) {
  auto& ctx = current();
  const SNode& sn = ref.snode();
  check_snode_program(sn);
  const ir::SNodeDecl& s = ctx.program->forest().snode(sn.id());
  check_tree_param(s.tree, ref.tree_param(), std::string(op) + " on SNode '" + s.name() + "'");
  if (s.type == ir::SNodeType::root || s.type == ir::SNodeType::place)
    fail(std::string(op) + " needs a dense, pointer, bitmasked or dynamic SNode, not '" + s.name() + "'");
  bool dyn_list = list_op && s.type == ir::SNodeType::dynamic;
  int want = s.num_indices() - (dyn_list ? 1 : 0);
  if (static_cast<int>(index.size()) != want)
    fail(std::string(op) + " on SNode '" + s.name() + "' takes " + std::to_string(want) + " index(es)" +
         (dyn_list ? " (the list's, without the dynamic axis)" : "") + ", got " + std::to_string(index.size()));
  for (size_t a = 0; a < index.size(); ++a)
    if (!is_integral(index[a].type()) || index[a].type() == DataType::u1)
      fail("index " + std::to_string(a) + " of " + op + " on SNode '" + s.name() + "' is " +
           std::string(type_name(index[a].type())) + "; indices must be integers (use cast(i32, ...))");
  return s;
}

}  // namespace

void activate(const SNodeRef& sn, const Indices& index) {
  const ir::SNodeDecl& s = checked_snode(sn, index, "activate", false);
  std::vector<ir::Stmt*> idx = stmts(index);
  TreeParamScope param(sn.tree_param());
  b().snode_op(ir::SNodeOpKind::activate, s.id, std::move(idx));
}

void deactivate(const SNodeRef& sn, const Indices& index) {
  const ir::SNodeDecl& s = checked_snode(sn, index, "deactivate", true);
  if (!s.is_sparse())
    fail("deactivate on SNode '" + s.name() + "', which is dense; only pointer, bitmasked and dynamic "
         "cells can be deactivated");
  std::vector<ir::Stmt*> idx = stmts(index);
  TreeParamScope param(sn.tree_param());
  b().snode_op(ir::SNodeOpKind::deactivate, s.id, std::move(idx));
}

Expr is_active(const SNodeRef& sn, const Indices& index) {
  const ir::SNodeDecl& s = checked_snode(sn, index, "is_active", false);
  std::vector<ir::Stmt*> idx = stmts(index);
  TreeParamScope param(sn.tree_param());
  return Expr(b().snode_op(ir::SNodeOpKind::is_active, s.id, std::move(idx)));
}

namespace {
Expr append_values(const SNodeRef& sn, const Indices& index, const std::vector<Expr>& values) {
  const ir::SNodeDecl& s = checked_snode(sn, index, "append", true);
  if (s.type != ir::SNodeType::dynamic)
    fail("append on SNode '" + s.name() + "', which is " + ir::snode_type_name(s.type) +
         "; append needs a dynamic SNode");
  if (s.children.empty())
    fail("append on SNode '" + s.name() + "', which has no field placed under it; place one first");
  if (values.size() != s.children.size()) {
    std::string names;
    for (int c : s.children)
      names += (names.empty() ? "'" : ", '") + current().program->field_decl(current().program->forest().snode(c).field).name + "'";
    fail("append on SNode '" + s.name() + "' got " + std::to_string(values.size()) + " value(s); its element has " +
         std::to_string(s.children.size()) + " field(s) (" + names + "): give one value per field, in that order");
  }
  std::vector<ir::Stmt*> v;
  for (const Expr& e : values) v.push_back(use(e));
  std::vector<ir::Stmt*> idx = stmts(index);
  TreeParamScope param(sn.tree_param());
  return Expr(b().snode_op(ir::SNodeOpKind::append, s.id, std::move(idx), std::move(v)));
}
}  // namespace

Expr append(const SNodeRef& sn, const Indices& index, const Expr& value) {
  return append_values(sn, index, std::vector<Expr>{value});
}

Expr append(const SNodeRef& sn, const Indices& index, std::initializer_list<Expr> values) {
  return append_values(sn, index, std::vector<Expr>(values));
}

Expr append(const SNodeRef& sn, const Indices& index, const Vec& values) {
  return append_values(sn, index, values.components());
}

Expr length(const SNodeRef& sn, const Indices& index) {
  const ir::SNodeDecl& s = checked_snode(sn, index, "length", true);
  if (s.type != ir::SNodeType::dynamic)
    fail("length on SNode '" + s.name() + "', which is " + ir::snode_type_name(s.type) +
         "; length needs a dynamic SNode");
  std::vector<ir::Stmt*> idx = stmts(index);
  TreeParamScope param(sn.tree_param());
  return Expr(b().snode_op(ir::SNodeOpKind::length, s.id, std::move(idx)));
}

void for_each(const SNodeRef& sn, const std::function<void(Indices)>& body) { for_each(sn, body, -1); }

void for_each(const SNodeRef& ref, const std::function<void(Indices)>& body, int arity) {
  auto& ctx = current();
  check_snode_program(ref.snode());
  const ir::SNodeDecl& s = ctx.program->forest().snode(ref.snode().id());
  check_tree_param(s.tree, ref.tree_param(), "for_each over SNode '" + s.name() + "'");
  if (arity >= 0 && arity != s.num_indices())
    fail("for_each over SNode '" + s.name() + "' (" + std::to_string(s.num_indices()) +
         " axes) with a body taking " + std::to_string(arity) + " indices; take one Expr per axis, or an Indices");
  if (s.type == ir::SNodeType::root || s.type == ir::SNodeType::place)
    fail("for_each over SNode '" + s.name() + "': loop over a dense, pointer, bitmasked or dynamic SNode");
  if (!at_kernel_top_level())
    fail("for_each over SNode '" + s.name() + "' must be at the top level of the kernel "
         "(a struct-for is a parallel loop); move it out of the enclosing loop or branch");
  ir::Stmt* loop = nullptr;
  {
    TreeParamScope param(ref.tree_param());
    loop = b().struct_for_snode(s.id);
  }
  in_block(loop->body(), [&] {
    in_loop(ir::StmtKind::StructFor, true, [&] {
      Indices I;
      for (int a = 0; a < s.num_indices(); ++a) I.push_back(Expr(b().loop_index(loop, a)));
      body(I);
    });
  });
}

IfBuilder if_(const Expr& cond, const std::function<void()>& then_body) {
  ir::Stmt* s = b().if_stmt(use(cond));
  in_block(s->then_block(), then_body);
  return IfBuilder(s);
}

void IfBuilder::else_(const std::function<void()>& body) {
  if (!stmt_->else_block()->empty()) fail("else_ given twice for the same if_");
  in_block(stmt_->else_block(), body);
}

IfBuilder IfBuilder::elif_(const Expr& cond, const std::function<void()>& body) {
  // `cond` was recorded after the `if` it belongs to (C++ evaluates the
  // argument before the call); move the `if` below it so the condition
  // dominates its use in the else block. The condition's statements run
  // before the `if` instead of in its else branch, which only matters for
  // side effects in the condition (there are none in pure expressions).
  ir::Builder& bl = b();
  ir::Block* block = stmt_->parent();
  if (block != bl.block()) fail("elif_ must directly follow its if_ or elif_");
  // Only the condition's own (pure) statements may lie between the `if` and
  // here: anything with an effect would run before the `if` once it moves.
  for (size_t k = block->position_of(stmt_) + 1; k < block->size(); ++k)
    if (block->at(k)->has_side_effects())
      fail("elif_ must directly follow its if_ or elif_, with nothing in between that writes, prints "
           "or loops; here something runs between them");
  std::unique_ptr<ir::Stmt> owned = block->take(block->position_of(stmt_));
  size_t at = bl.position() - 1;
  block->insert(at, std::move(owned));
  bl.set_insert_point(block, at + 1);
  ir::Stmt* inner = nullptr;
  in_block(stmt_->else_block(), [&] { inner = if_(cond, body).stmt_; });
  return IfBuilder(inner);
}

void loop_(const std::function<void()>& body) {
  ir::Stmt* w = b().while_loop();
  in_block(w->body(), [&] { in_loop(ir::StmtKind::While, false, body); });
}

void while_(const std::function<Expr()>& cond, const std::function<void()>& body) {
  loop_([&] {
    Expr c = cond();
    if_(!c, [] { break_(); });
    body();
  });
}

void break_() {
  auto& loops = current().loops;
  if (loops.empty()) fail("break_() outside a loop");
  if (loops.back() == ir::StmtKind::StructFor)
    fail("break_() directly inside a parallel loop (a top-level for_range or a for_each), whose "
         "iterations run in parallel and cannot stop each other, as in Taichi; use continue_() to end "
         "this iteration, or break_() inside a while_/loop_ or a nested for_range");
  b().break_stmt();
}

// Ends the current iteration of the innermost loop, a parallel one too.
void continue_() {
  if (current().loops.empty()) fail("continue_() outside a loop");
  b().continue_stmt();
}

void detail::print_items(const std::vector<PrintItem>& items) {
  std::string format;
  std::vector<ir::Stmt*> values;
  for (const PrintItem& item : items) {
    if (item.value != nullptr) {
      format += "{}";
      values.push_back(use(item.value));
      continue;
    }
    for (char c : item.text) {
      if (c == '{' || c == '}') format += c;
      format += c;
    }
  }
  format += '\n';
  b().print(std::move(format), std::move(values));
}

}  // namespace grove
