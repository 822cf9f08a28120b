// src/ir/ir.cpp — statement accessors, blocks, kernels and the name tables.
#include "ir/ir.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "ir/assert.h"

namespace grove::ir {

namespace {

struct KindInfo {
  const char* mnemonic;
  int operands;
  int blocks;
  StmtCategory category;
};

constexpr KindInfo kKinds[] = {
#define GROVE_STMT(Kind, mnemonic, operands, blocks, category) {mnemonic, operands, blocks, StmtCategory::category},
#include "ir/statements.def"
};

#define GROVE_NAME(name) #name,
constexpr const char* kUnaryNames[] = {GROVE_UNARY_OPS(GROVE_NAME)};
constexpr const char* kBinaryNames[] = {GROVE_BINARY_OPS(GROVE_NAME)};
constexpr const char* kAtomicNames[] = {GROVE_ATOMIC_OPS(GROVE_NAME)};
constexpr const char* kSNodeOpNames[] = {GROVE_SNODE_OPS(GROVE_NAME)};
constexpr const char* kTaskNames[] = {GROVE_TASK_KINDS(GROVE_NAME)};
#undef GROVE_NAME

template <typename Op, size_t N>
bool parse_name(std::string_view name, const char* const (&names)[N], Op* out) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) {
      *out = static_cast<Op>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

const char* kind_name(StmtKind k) { return kKinds[static_cast<size_t>(k)].mnemonic; }
int kind_operand_count(StmtKind k) { return kKinds[static_cast<size_t>(k)].operands; }
int kind_block_count(StmtKind k) { return kKinds[static_cast<size_t>(k)].blocks; }
StmtCategory kind_category(StmtKind k) { return kKinds[static_cast<size_t>(k)].category; }
const char* op_name(UnaryOp op) { return kUnaryNames[static_cast<size_t>(op)]; }
const char* op_name(BinaryOp op) { return kBinaryNames[static_cast<size_t>(op)]; }
const char* op_name(AtomicOp op) { return kAtomicNames[static_cast<size_t>(op)]; }
bool parse_op(std::string_view name, UnaryOp* out) { return parse_name(name, kUnaryNames, out); }
bool parse_op(std::string_view name, BinaryOp* out) { return parse_name(name, kBinaryNames, out); }
bool parse_op(std::string_view name, AtomicOp* out) { return parse_name(name, kAtomicNames, out); }
const char* op_name(SNodeOpKind op) { return kSNodeOpNames[static_cast<size_t>(op)]; }
const char* op_name(TaskKind op) { return kTaskNames[static_cast<size_t>(op)]; }
bool parse_op(std::string_view name, SNodeOpKind* out) { return parse_name(name, kSNodeOpNames, out); }
bool parse_op(std::string_view name, TaskKind* out) { return parse_name(name, kTaskNames, out); }

// rt::TaskKind lists the task kinds in GROVE_TASK_KINDS's order (their names
// here index by it).
#define GROVE_TASK_ENUM(name) TaskKind::name,
constexpr TaskKind kTaskOrder[] = {GROVE_TASK_KINDS(GROVE_TASK_ENUM)};
#undef GROVE_TASK_ENUM
constexpr bool task_order_matches() {
  for (size_t i = 0; i < std::size(kTaskOrder); ++i)
    if (static_cast<size_t>(kTaskOrder[i]) != i) return false;
  return true;
}
static_assert(task_order_matches(), "rt::TaskKind must list GROVE_TASK_KINDS in order");

bool is_comparison(BinaryOp op) {
  switch (op) {
    case BinaryOp::cmp_lt: case BinaryOp::cmp_le: case BinaryOp::cmp_gt:
    case BinaryOp::cmp_ge: case BinaryOp::cmp_eq: case BinaryOp::cmp_ne:
      return true;
    default:
      return false;
  }
}

bool is_logical(BinaryOp op) { return op == BinaryOp::logic_and || op == BinaryOp::logic_or; }

bool is_bitwise(BinaryOp op) {
  switch (op) {
    case BinaryOp::bit_and: case BinaryOp::bit_or: case BinaryOp::bit_xor:
    case BinaryOp::shl: case BinaryOp::shr:
      return true;
    default:
      return false;
  }
}

// ---- FieldTable ----------------------------------------------------------

const FieldDecl& FieldTable::add(std::string name, DataType dtype, std::vector<int64_t> shape) {
  GROVE_ASSERT(find(name) == nullptr, "field name '" + name + "' is already in the table");
  FieldDecl f;
  f.id = size();
  f.name = std::move(name);
  f.dtype = dtype;
  f.shape = std::move(shape);
  fields_.push_back(std::move(f));
  return fields_.back();
}

const FieldDecl* FieldTable::find(std::string_view name) const {
  for (const FieldDecl& f : fields_)
    if (f.name == name) return &f;
  return nullptr;
}

// ---- Stmt accessors -------------------------------------------------------

namespace {
void expect_kind(const Stmt* s, std::initializer_list<StmtKind> kinds, const char* accessor) {
  for (StmtKind k : kinds)
    if (s->kind() == k) return;
  GROVE_ASSERT(false, std::string("accessor ") + accessor + "() used on a '" + kind_name(s->kind()) +
                          "' statement");
}
}  // namespace

using K = StmtKind;

Stmt* Stmt::operand() const {
  expect_kind(this, {K::Unary, K::Cast}, "operand");
  return operands_[0];
}
Stmt* Stmt::lhs() const {
  expect_kind(this, {K::Binary}, "lhs");
  return operands_[0];
}
Stmt* Stmt::rhs() const {
  expect_kind(this, {K::Binary}, "rhs");
  return operands_[1];
}
Stmt* Stmt::cond() const {
  expect_kind(this, {K::Select, K::If, K::Assert}, "cond");
  return operands_[0];
}
Stmt* Stmt::true_value() const {
  expect_kind(this, {K::Select}, "true_value");
  return operands_[1];
}
Stmt* Stmt::false_value() const {
  expect_kind(this, {K::Select}, "false_value");
  return operands_[2];
}
Stmt* Stmt::ptr() const {
  expect_kind(this, {K::LocalLoad, K::LocalStore}, "ptr");
  return operands_[0];
}
Stmt* Stmt::value() const {
  expect_kind(this, {K::LocalStore, K::FieldStore, K::FieldAtomic, K::TreeStore, K::TreeAtomic}, "value");
  return operands_.back();
}
std::span<Stmt* const> Stmt::values() const {
  expect_kind(this, {K::SNodeOp}, "values");
  GROVE_ASSERT(snode_op() == SNodeOpKind::append, "values() of a non-append snode_op");
  return std::span<Stmt* const>(operands_).last(static_cast<size_t>(bits_));
}
std::span<Stmt* const> Stmt::indices() const {
  expect_kind(this, {K::FieldLoad, K::FieldStore, K::FieldAtomic, K::SNodeOp}, "indices");
  std::span<Stmt* const> all = operands_;
  size_t values = kind_ == K::FieldStore || kind_ == K::FieldAtomic ? 1
                  : kind_ == K::SNodeOp && snode_op() == SNodeOpKind::append ? static_cast<size_t>(bits_)
                                                                             : 0;
  return all.first(all.size() - values);
}
Stmt* Stmt::address() const {
  expect_kind(this, {K::TreeLoad, K::TreeStore, K::TreeAtomic, K::TreeCas}, "address");
  return operands_[0];
}
Stmt* Stmt::expected() const {
  expect_kind(this, {K::TreeCas}, "expected");
  return operands_[1];
}
Stmt* Stmt::desired() const {
  expect_kind(this, {K::TreeCas}, "desired");
  return operands_[2];
}
SNodeOpKind Stmt::snode_op() const {
  expect_kind(this, {K::SNodeOp}, "snode_op");
  return static_cast<SNodeOpKind>(op_);
}
TaskKind Stmt::task_kind() const {
  expect_kind(this, {K::Task}, "task_kind");
  return static_cast<TaskKind>(op_);
}
int Stmt::snode() const {
  expect_kind(this, {K::SNodeOp, K::StructFor, K::Task}, "snode");
  return index_;
}
bool Stmt::atomic_load() const {
  expect_kind(this, {K::TreeLoad}, "atomic_load");
  return mark_ != 0;
}
void Stmt::set_atomic_load(bool atomic) {
  expect_kind(this, {K::TreeLoad}, "set_atomic_load");
  mark_ = atomic ? 1 : 0;
}
Reduction Stmt::reduction() const {
  expect_kind(this, {K::TreeAtomic}, "reduction");
  return static_cast<Reduction>(mark_);
}
void Stmt::set_reduction(Reduction r) {
  expect_kind(this, {K::TreeAtomic}, "set_reduction");
  mark_ = static_cast<uint8_t>(r);
}
const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::none: return "";
    case Reduction::one_cell: return "reduce";
    case Reduction::accumulate: return "accumulate";
  }
  return "";
}
int Stmt::tree() const {
  expect_kind(this, {K::TreeLoad, K::TreeStore, K::TreeAtomic, K::TreeCas}, "tree");
  return index_;
}
Stmt* Stmt::begin() const {
  expect_kind(this, {K::RangeFor}, "begin");
  return operands_[0];
}
Stmt* Stmt::end() const {
  expect_kind(this, {K::RangeFor}, "end");
  return operands_[1];
}
Stmt* Stmt::loop() const {
  expect_kind(this, {K::LoopIndex}, "loop");
  return operands_[0];
}
UnaryOp Stmt::unary_op() const {
  expect_kind(this, {K::Unary}, "unary_op");
  return static_cast<UnaryOp>(op_);
}
BinaryOp Stmt::binary_op() const {
  expect_kind(this, {K::Binary}, "binary_op");
  return static_cast<BinaryOp>(op_);
}
AtomicOp Stmt::atomic_op() const {
  expect_kind(this, {K::FieldAtomic, K::TreeAtomic}, "atomic_op");
  return static_cast<AtomicOp>(op_);
}
Block* Stmt::body() const {
  expect_kind(this, {K::RangeFor, K::StructFor, K::While, K::Task}, "body");
  return blocks_[0].get();
}
Block* Stmt::then_block() const {
  expect_kind(this, {K::If}, "then_block");
  return blocks_[0].get();
}
Block* Stmt::else_block() const {
  expect_kind(this, {K::If}, "else_block");
  return blocks_[1].get();
}

int64_t Stmt::const_int() const {
  expect_kind(this, {K::Const}, "const_int");
  GROVE_ASSERT(is_integral(type_), "const_int() of a float constant");
  int w = bit_width(type_);
  if (w == 64) return static_cast<int64_t>(bits_);
  uint64_t mask = (uint64_t{1} << w) - 1;
  uint64_t v = bits_ & mask;
  if (is_signed(type_) && (v >> (w - 1)) & 1) v |= ~mask;
  return static_cast<int64_t>(v);
}

double Stmt::const_float() const {
  expect_kind(this, {K::Const}, "const_float");
  if (type_ == DataType::f64) {
    double d;
    std::memcpy(&d, &bits_, sizeof d);
    return d;
  }
  GROVE_ASSERT(type_ == DataType::f32, "const_float() of a non-float constant");
  float f;
  uint32_t b = static_cast<uint32_t>(bits_);
  std::memcpy(&f, &b, sizeof f);
  return f;
}

void Stmt::replace_operand(Stmt* from, Stmt* to) {
  for (Stmt*& s : operands_)
    if (s == from) s = to;
}

bool Stmt::has_result() const {
  switch (kind_) {
    case K::Const: case K::Arg: case K::Unary: case K::Cast: case K::Binary: case K::Select:
    case K::Alloca: case K::LocalLoad: case K::FieldLoad: case K::FieldAtomic:
    case K::LoopIndex: case K::TreeLoad: case K::TreeAtomic: case K::TreeCas:
      return true;
    case K::SNodeOp:
      return snode_op() == SNodeOpKind::is_active || snode_op() == SNodeOpKind::append ||
             snode_op() == SNodeOpKind::length;
    case K::LocalStore: case K::FieldStore: case K::RangeFor: case K::StructFor: case K::If:
    case K::While: case K::Break: case K::Continue: case K::Print: case K::TreeStore: case K::Task:
    case K::Assert:
      return false;
  }
  return false;
}

bool Stmt::has_side_effects() const {
  switch (kind_) {
    case K::Const: case K::Arg: case K::Unary: case K::Cast: case K::Binary: case K::Select:
    case K::Alloca: case K::LocalLoad: case K::FieldLoad: case K::LoopIndex: case K::TreeLoad:
      return false;
    case K::SNodeOp:
      return snode_op() != SNodeOpKind::is_active && snode_op() != SNodeOpKind::length;
    case K::LocalStore: case K::FieldStore: case K::FieldAtomic: case K::RangeFor:
    case K::StructFor: case K::If: case K::While: case K::Break: case K::Continue: case K::Print:
    case K::TreeStore: case K::TreeAtomic: case K::TreeCas: case K::Task: case K::Assert:
      return true;
  }
  return true;
}

bool FieldDecl::has_offset() const {
  for (int64_t o : offset)
    if (o != 0) return true;
  return false;
}

// ---- Block ----------------------------------------------------------------

void Block::move_gap(size_t pos) const {
  const size_t gap = gap_size();
  if (pos < gap_begin_) {
    for (size_t k = gap_begin_; k-- > pos;) buf_[k + gap] = std::move(buf_[k]);
  } else {
    for (size_t k = gap_begin_; k < pos; ++k) buf_[k] = std::move(buf_[k + gap]);
  }
  gap_begin_ = pos;
  gap_end_ = pos + gap;
}

void Block::close_gap() const {
  if (gap_size() == 0) return;
  move_gap(size());
  buf_.resize(gap_begin_);
  gap_end_ = gap_begin_;
}

const std::vector<std::unique_ptr<Stmt>>& Block::stmts() const {
  close_gap();
  return buf_;
}

Stmt* Block::insert(size_t pos, std::unique_ptr<Stmt> s) {
  GROVE_ASSERT(pos <= size(), "insert position past the end of the block");
  s->parent_ = this;
  Stmt* raw = s.get();
  if (gap_size() == 0) {
    // Full: a new buffer with a gap as large as the statements, at `pos`.
    const size_t n = size(), grown = std::max<size_t>(8, 2 * n);
    std::vector<std::unique_ptr<Stmt>> fresh(grown);
    for (size_t k = 0; k < pos; ++k) fresh[k] = std::move(buf_[k]);
    for (size_t k = pos; k < n; ++k) fresh[grown - n + k] = std::move(buf_[k]);
    buf_ = std::move(fresh);
    gap_begin_ = pos;
    gap_end_ = grown - n + pos;
  } else {
    move_gap(pos);
  }
  buf_[gap_begin_++] = std::move(s);
  return raw;
}

std::unique_ptr<Stmt> Block::take(size_t pos) {
  GROVE_ASSERT(pos < size(), "take position past the end of the block");
  move_gap(pos);
  std::unique_ptr<Stmt> s = std::move(buf_[gap_end_++]);
  s->parent_ = nullptr;
  return s;
}

std::vector<std::unique_ptr<Stmt>> Block::take_all() {
  close_gap();
  std::vector<std::unique_ptr<Stmt>> out = std::move(buf_);
  buf_.clear();
  gap_begin_ = gap_end_ = 0;
  for (auto& s : out) s->parent_ = nullptr;
  return out;
}

size_t Block::position_of(const Stmt* s) const {
  for (size_t i = 0, n = size(); i < n; ++i)
    if (at(i) == s) return i;
  GROVE_ASSERT(false, std::string("statement '") + kind_name(s->kind()) + "' is not in this block");
  return 0;
}

// ---- Stage ----------------------------------------------------------------

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::frontend: return "frontend";
    case Stage::typed: return "typed";
    case Stage::offloaded: return "offloaded";
    case Stage::lowered: return "lowered";
  }
  return "?";
}

bool parse_stage(std::string_view name, Stage* out) {
  for (Stage s : {Stage::frontend, Stage::typed, Stage::offloaded, Stage::lowered}) {
    if (name == stage_name(s)) {
      *out = s;
      return true;
    }
  }
  return false;
}

// ---- Kernel ---------------------------------------------------------------

Kernel::Kernel(std::string name, std::vector<KernelArg> args, const FieldTable* fields)
    : name_(std::move(name)), args_(std::move(args)), fields_(fields),
      body_(std::make_unique<Block>(nullptr)) {}

void replace_all_uses(Block* root, Stmt* from, Stmt* to) {
  walk(root, [&](Stmt* s) { s->replace_operand(from, to); });
}

}  // namespace grove::ir
