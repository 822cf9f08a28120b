// src/ir/ir.cpp — statement accessors, blocks, kernels and the name tables.
#include "ir/ir.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <sstream>
#include <string_view>
#include <utility>

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
  ids_.emplace(f.name, f.id);
  fields_.push_back(std::move(f));
  return fields_.back();
}

const FieldDecl* FieldTable::find(std::string_view name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? nullptr : &fields_[static_cast<size_t>(it->second)];
}

void FieldTable::rename(int id, std::string name) {
  GROVE_ASSERT(find(name) == nullptr, "field name '" + name + "' is already in the table");
  FieldDecl& f = fields_.at(static_cast<size_t>(id));
  ids_.erase(f.name);
  f.name = std::move(name);
  ids_.emplace(f.name, id);
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
  expect_kind(this, {K::Unary, K::Cast, K::Bitcast, K::SubgroupFirst}, "operand");
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
void Stmt::set_field(int field) {
  expect_kind(this, {K::TreeLoad, K::TreeStore, K::TreeAtomic, K::TreeCas}, "set_field");
  field_ = field;
}
bool Stmt::unlikely() const {
  expect_kind(this, {K::If}, "unlikely");
  return mark_ != 0;
}
void Stmt::set_unlikely(bool unlikely) {
  expect_kind(this, {K::If}, "set_unlikely");
  mark_ = unlikely ? 1 : 0;
}
bool Stmt::grid() const {
  expect_kind(this, {K::RangeFor}, "grid");
  return mark_ != 0;
}
void Stmt::set_grid(bool grid) {
  expect_kind(this, {K::RangeFor}, "set_grid");
  mark_ = grid ? 1 : 0;
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
    case K::Const: case K::Arg: case K::Unary: case K::Cast: case K::Bitcast: case K::Binary: case K::Select:
    case K::Alloca: case K::LocalLoad: case K::FieldLoad: case K::FieldAtomic:
    case K::LoopIndex: case K::TreeLoad: case K::TreeAtomic: case K::TreeCas: case K::MessageBase:
    case K::SubgroupFirst: case K::SubgroupElect:
      return true;
    case K::SNodeOp:
      return snode_op() == SNodeOpKind::is_active || snode_op() == SNodeOpKind::append ||
             snode_op() == SNodeOpKind::length;
    case K::LocalStore: case K::FieldStore: case K::RangeFor: case K::StructFor: case K::If:
    case K::While: case K::Break: case K::Continue: case K::Print: case K::TreeStore: case K::Task:
    case K::Assert: case K::Stop:
      return false;
  }
  return false;
}

bool Stmt::has_side_effects() const {
  switch (kind_) {
    case K::Const: case K::Arg: case K::Unary: case K::Cast: case K::Bitcast: case K::Binary: case K::Select:
    case K::Alloca: case K::LocalLoad: case K::FieldLoad: case K::LoopIndex: case K::TreeLoad:
    case K::MessageBase:
      return false;
    case K::SNodeOp:
      return snode_op() != SNodeOpKind::is_active && snode_op() != SNodeOpKind::length;
    case K::LocalStore: case K::FieldStore: case K::FieldAtomic: case K::RangeFor:
    case K::StructFor: case K::If: case K::While: case K::Break: case K::Continue: case K::Print:
    case K::TreeStore: case K::TreeAtomic: case K::TreeCas: case K::Task: case K::Assert: case K::Stop:
    case K::SubgroupFirst: case K::SubgroupElect:  // (their values depend on where they stand)
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
    case Stage::legal: return "legal";
  }
  return "?";
}

bool parse_stage(std::string_view name, Stage* out) {
  for (Stage s : {Stage::frontend, Stage::typed, Stage::offloaded, Stage::lowered, Stage::legal}) {
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

Numbering::Numbering() {
  static std::atomic<uint64_t> serials{0};
  serial_ = serials.fetch_add(1, std::memory_order_relaxed) + 1;  // 0: never numbered
}

void replace_all_uses(Block* root, Stmt* from, Stmt* to) {
  walk(root, [&](Stmt* s) { s->replace_operand(from, to); });
}

}  // namespace grove::ir

// ---- fingerprint -----------------------------------------------------------

namespace grove::ir {

// Two 64-bit lanes, each folding 64-bit words pairwise through a full
// 64 x 64 -> 128-bit multiply (high xor low: the mixing step of wyhash).
// A statement's members are packed into four words and mixed in two
// independent products before they reach the lanes, so that a statement
// costs one dependent step per lane. Statements are numbered in program
// order (as the text form numbers them): operands hash as numbers, not
// addresses.
class Fingerprinter {
 public:
  explicit Fingerprinter(const Kernel& kernel) : kernel_(kernel) {}

  Fingerprint run(std::initializer_list<std::string_view> extra) {
    lanes(extra.size(), 0);
    for (std::string_view e : extra) str(e);
    str(kernel_.name());
    lanes(kernel_.args().size(), kernel_.tree_params.size() << 8 | static_cast<uint64_t>(kernel_.stage));
    for (const KernelArg& a : kernel_.args()) {
      str(a.name);
      lanes(static_cast<uint64_t>(a.type), 1);
    }
    for (const TreeParam& t : kernel_.tree_params) {
      str(t.name);
      lanes(static_cast<uint64_t>(static_cast<int64_t>(t.tree)), 2);
    }
    for (const rt::MessagePlan& m : kernel_.messages) {
      lanes(m.types.size() << 1 | (m.is_assert ? 1 : 0), 4);
      str(m.format);
      for (DataType t : m.types) lanes(static_cast<uint64_t>(t), 5);
    }
    block(kernel_.body());
    return {mum(a_ ^ kS[0], count_ ^ kS[1]), mum(b_ ^ kS[2], count_ ^ kS[3])};
  }
  Fingerprint run_task(const Stmt* task, std::initializer_list<std::string_view> extra) {
    lanes(extra.size(), 6);
    for (std::string_view e : extra) str(e);
    stmt(task);
    return {mum(a_ ^ kS[0], count_ ^ kS[1]), mum(b_ ^ kS[2], count_ ^ kS[3])};
  }

 private:
  static constexpr uint64_t kS[8] = {0xa0761d6478bd642full, 0xe7037ed1a0b428dbull, 0x8ebc6af09c88c6e3ull,
                                     0x589965cc75374cc3ull, 0x1d8e4e27c47d124full, 0x9e3779b97f4a7c15ull,
                                     0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull};
  __extension__ typedef unsigned __int128 U128;  // GCC and Clang, on every 64-bit target Grove builds for
  static uint64_t mum(uint64_t x, uint64_t y) {
    const U128 p = static_cast<U128>(x) * y;
    return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
  }
  // Folds the pair (x, y) into both lanes.
  void lanes(uint64_t x, uint64_t y) {
    a_ = mum(a_ ^ x ^ kS[0], y ^ kS[1]);
    b_ = mum(b_ ^ y ^ kS[2], x ^ kS[3]);
    ++count_;
  }
  void str(std::string_view s) {
    size_t i = 0;
    for (; i + 16 <= s.size(); i += 16) {
      uint64_t w[2];
      std::memcpy(w, s.data() + i, 16);
      lanes(w[0], w[1]);
    }
    uint64_t tail[2] = {0, 0};
    std::memcpy(tail, s.data() + i, s.size() - i);
    lanes(tail[0] ^ s.size() << 56, tail[1] ^ s.size());
  }

  // The number of statement `s` (its place in program order).
  uint64_t number_of(const Stmt* s) const {
    return numbering_.has(s) ? numbering_.get(s) : ~0ull;  // ~0: not defined before its use
  }
  void number(const Stmt* s) { numbering_.set(s, next_++); }

  void block(const Block* b) {
    lanes(b->size(), 3);
    for (size_t i = 0; i < b->size(); ++i) stmt(b->at(i));
  }
  void stmt(const Stmt* s) {
    number(s);
    const uint64_t w0 = static_cast<uint64_t>(s->kind_) | static_cast<uint64_t>(s->type_) << 8 |
                        static_cast<uint64_t>(s->op_) << 16 | static_cast<uint64_t>(s->storage_) << 24 |
                        static_cast<uint64_t>(s->mark_) << 32 | static_cast<uint64_t>(s->blocks_.size()) << 40 |
                        static_cast<uint64_t>(std::min<size_t>(s->text_.size(), 0xffff)) << 48;
    const uint64_t w1 = static_cast<uint64_t>(static_cast<uint32_t>(s->index_)) |
                        static_cast<uint64_t>(static_cast<uint32_t>(s->tree_param_)) << 32;
    const uint64_t w2 = static_cast<uint64_t>(static_cast<uint32_t>(s->field_)) |
                        static_cast<uint64_t>(s->operands_.size()) << 32;
    // Operands, two numbers to a word.
    uint64_t ops = kS[4];
    const size_t n = s->operands_.size();
    for (size_t i = 0; i < n; i += 2) {
      const uint64_t lo = number_of(s->operands_[i]);
      const uint64_t hi = i + 1 < n ? number_of(s->operands_[i + 1]) : 0xffffffffull;
      ops = mum(ops ^ (lo | hi << 32), kS[5] ^ i);
    }
    const uint64_t m1 = mum(w0 ^ kS[6], w1 ^ kS[7]);
    const uint64_t m2 = mum(w2 ^ kS[1], s->bits_ ^ kS[3]);
    lanes(m1 ^ ops, m2 + ops);
    if (!s->text_.empty()) str(s->text_);  // its length is in w0
    if (s->field_ >= 0 && s->field_ < kernel_.fields().size()) str(kernel_.fields().get(s->field_).name);
    for (const auto& b : s->blocks_) block(b.get());
  }

  const Kernel& kernel_;
  uint64_t a_ = 0x6a09e667f3bcc908ull, b_ = 0xbb67ae8584caa73bull, count_ = 0;
  Numbering numbering_;
  uint32_t next_ = 0;
};

Fingerprint fingerprint(const Kernel& kernel, std::initializer_list<std::string_view> extra) {
  return Fingerprinter(kernel).run(extra);
}

Fingerprint fingerprint_task(const Kernel& kernel, const Stmt* task, std::initializer_list<std::string_view> extra) {
  return Fingerprinter(kernel).run_task(task, extra);
}

}  // namespace grove::ir
