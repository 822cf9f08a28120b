// src/ir/ir.h — the IR's data structures: statements, blocks, kernels, fields.
// Statements are created only through ir::Builder (builder.h), which checks
// operand counts; their meaning is documented in docs/ir.md.
#pragma once

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grove/types.h"
#include "runtime/core/plan.h"

namespace grove::ir {

// The deepest nest of blocks (loops and branches, an elif_ chain counting
// one per elif_) a kernel may have. Every pass and emitter walks nested
// blocks recursively; this bounds their stack use (20,000 nested if_
// overflowed the CPU emitter's stack), and it is checked where blocks are
// made: the DSL's recording and the IR parser.
inline constexpr int kMaxNesting = 256;

enum class StmtKind : uint8_t {
#define GROVE_STMT(Kind, mnemonic, operands, blocks, category) Kind,
#include "ir/statements.def"
};

#define GROVE_UNARY_OPS(X) \
  X(neg) X(logic_not) X(bit_not) X(sqrt) X(rsqrt) X(sin) X(cos) X(tan) X(asin) X(acos) \
  X(atan) X(exp) X(log) X(abs) X(floor) X(ceil) X(round) X(tanh) X(popcnt) X(clz) X(ctz)

#define GROVE_BINARY_OPS(X)                                                       \
  X(add) X(sub) X(mul) X(div) X(mod) X(min) X(max) X(pow) X(atan2) X(bit_and)     \
  X(bit_or) X(bit_xor) X(shl) X(shr) X(logic_and) X(logic_or) X(cmp_lt) X(cmp_le) \
  X(cmp_gt) X(cmp_ge) X(cmp_eq) X(cmp_ne)

#define GROVE_ATOMIC_OPS(X) X(add) X(sub) X(min) X(max) X(bit_and) X(bit_or) X(bit_xor) X(exchange)

// SNode operations of the frontend stage (docs/ir.md).
#define GROVE_SNODE_OPS(X) X(activate) X(deactivate) X(is_active) X(append) X(length)

// What an offloaded task does; the scheduler reads it (docs/ir.md, "Offloaded stage").
#define GROVE_TASK_KINDS(X) \
  X(serial) X(range_for) X(struct_for) X(listgen) X(clear_list) X(gc) X(gc_finish)

#define GROVE_ENUMERATOR(name) name,
enum class UnaryOp : uint8_t { GROVE_UNARY_OPS(GROVE_ENUMERATOR) };
enum class BinaryOp : uint8_t { GROVE_BINARY_OPS(GROVE_ENUMERATOR) };
enum class AtomicOp : uint8_t { GROVE_ATOMIC_OPS(GROVE_ENUMERATOR) };
enum class SNodeOpKind : uint8_t { GROVE_SNODE_OPS(GROVE_ENUMERATOR) };
// What mark_reductions found out about a tree_atomic (docs/ir.md,
// "Reductions"): nothing; a sum into one cell of field data whose old value
// nobody reads (`total[None] += x`), which a code generator may combine
// across invocations (a subgroup sum, one atomic per subgroup); or such a
// sum whose cell the task touches in no other way, which an invocation may
// also accumulate in a register over several iterations and add once.
enum class Reduction : uint8_t { none, one_cell, accumulate };
const char* reduction_name(Reduction r);  // "", "reduce", "accumulate"
// Task kinds are the runtime's (kernel plans carry them): rt::TaskKind lists
// GROVE_TASK_KINDS in the same order.
using TaskKind = rt::TaskKind;
#undef GROVE_ENUMERATOR

// The families of statements.def's last column.
enum class StmtCategory : uint8_t {
  value,    // const, arg, unary, cast, binary, select: pure, recomputable anywhere
  local,    // alloca, local_load, local_store: a kernel's variables
  field,    // field_load, field_store, field_atomic (frontend to offloaded)
  control,  // loops, loop indices, if, while, break, continue
  effect,   // print, assert
  snode,    // snode_op (frontend to offloaded)
  tree,     // tree_load, tree_store, tree_atomic, tree_cas: the words of a tree buffer
  task,     // task (offloaded and lowered)
};

const char* kind_name(StmtKind k);  // the mnemonic of statements.def
StmtCategory kind_category(StmtKind k);
inline bool is_value(StmtKind k) { return kind_category(k) == StmtCategory::value; }
inline bool is_local_access(StmtKind k) { return kind_category(k) == StmtCategory::local && k != StmtKind::Alloca; }
inline bool is_field_access(StmtKind k) { return kind_category(k) == StmtCategory::field; }
inline bool is_tree_access(StmtKind k) { return kind_category(k) == StmtCategory::tree; }
// Kinds that name a tree instance through Stmt::tree_param.
inline bool is_tree_bound(StmtKind k) {
  const StmtCategory c = kind_category(k);
  return c == StmtCategory::field || c == StmtCategory::snode || c == StmtCategory::tree ||
         c == StmtCategory::task || k == StmtKind::StructFor;
}
int kind_operand_count(StmtKind k);  // -1: variable
int kind_block_count(StmtKind k);
const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);
const char* op_name(AtomicOp op);
const char* op_name(SNodeOpKind op);
const char* op_name(TaskKind op);
bool parse_op(std::string_view name, UnaryOp* out);
bool parse_op(std::string_view name, BinaryOp* out);
bool parse_op(std::string_view name, AtomicOp* out);
bool parse_op(std::string_view name, SNodeOpKind* out);
bool parse_op(std::string_view name, TaskKind* out);
// Parallel task kinds hold uniform, side-effect-free statements followed by
// exactly one range_for, the parallel loop; the others run on one thread.
using rt::is_parallel;
using rt::is_runtime_task;
bool is_comparison(BinaryOp op);  // cmp_*: result is u1
bool is_logical(BinaryOp op);     // logic_and / logic_or: u1 operands and result
bool is_bitwise(BinaryOp op);     // bit_*, shl, shr: integer operands only

class Block;
class Kernel;

// A 128-bit hash of everything a kernel's text form says (its name,
// arguments, tree parameters, stage and every statement with its
// attributes, operands and blocks), computed without printing it: what a
// code cache that must answer in microseconds keys on, with `extra` (what
// else decides the code: options, a plan's bytes). Kernels that print
// alike have equal fingerprints; unequal texts collide with odds of 2^-128.
struct Fingerprint {
  uint64_t a = 0, b = 0;
  bool operator==(const Fingerprint&) const = default;
};
Fingerprint fingerprint(const Kernel& kernel, std::initializer_list<std::string_view> extra = {});
class Stmt;
// One task of `kernel` alone, its statements numbered from the task on (so
// that the same task in two kernels has the same fingerprint), with the
// fields it names; not the kernel's name, arguments or messages, which a
// task reads only through its statements; with `extra`, as fingerprint's.
Fingerprint fingerprint_task(const Kernel& kernel, const Stmt* task,
                             std::initializer_list<std::string_view> extra = {});
class SNodeForest;

// A field as the IR sees it: a typed, n-dimensional array of scalars. The
// program (or a test) owns the table; statements refer to fields by id.
// References to entries stay valid as fields are added (a deque).
struct FieldDecl {
  int id = -1;
  std::string name;
  DataType dtype = DataType::unknown;
  std::vector<int64_t> shape;  // extent per index; shape.size() is the dimension
  // Taichi's offset=: index d of an element runs over [offset[d],
  // offset[d] + shape[d]). Empty when every offset is 0.
  std::vector<int64_t> offset;
  int ndim() const { return static_cast<int>(shape.size()); }
  int64_t offset_of(int d) const { return offset.empty() ? 0 : offset[static_cast<size_t>(d)]; }
  bool has_offset() const;
};

class FieldTable {
 public:
  // Adds a field; its id is its position. Names must be unique.
  const FieldDecl& add(std::string name, DataType dtype, std::vector<int64_t> shape);
  const FieldDecl& get(int id) const { return fields_.at(static_cast<size_t>(id)); }
  // For everything but the name, which rename() changes.
  FieldDecl& get_mutable(int id) { return fields_.at(static_cast<size_t>(id)); }
  const FieldDecl* find(std::string_view name) const;  // nullptr if absent; constant time
  // Gives field `id` a name no field has (its old name is free again).
  void rename(int id, std::string name);
  int size() const { return static_cast<int>(fields_.size()); }

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::deque<FieldDecl> fields_;
  std::unordered_map<std::string, int, NameHash, std::equal_to<>> ids_;  // by name
};

class Stmt {
 public:
  StmtKind kind() const { return kind_; }
  DataType type() const { return type_; }
  void set_type(DataType t) { type_ = t; }
  void set_text(std::string t) { text_ = std::move(t); }
  Block* parent() const { return parent_; }

  // ---- operands, read through the names of statements.def ----
  std::span<Stmt* const> operands() const { return operands_; }
  Stmt* operand() const;      // Unary, Cast, Bitcast, SubgroupFirst
  Stmt* lhs() const;          // Binary
  Stmt* rhs() const;          // Binary
  Stmt* cond() const;         // Select, If, Assert
  Stmt* true_value() const;   // Select
  Stmt* false_value() const;  // Select
  Stmt* ptr() const;          // LocalLoad, LocalStore: the Alloca
  Stmt* value() const;        // LocalStore, FieldStore, FieldAtomic, TreeStore, TreeAtomic
  // SNodeOp append: one value per field placed under the dynamic node, in
  // placement order (their number is the statement's bits()).
  std::span<Stmt* const> values() const;
  std::span<Stmt* const> indices() const;  // FieldLoad, FieldStore, FieldAtomic, SNodeOp
  Stmt* begin() const;        // RangeFor
  Stmt* end() const;          // RangeFor
  Stmt* loop() const;         // LoopIndex: the RangeFor or StructFor
  Stmt* address() const;      // TreeLoad, TreeStore, TreeAtomic, TreeCas: a u32 word offset
  Stmt* expected() const;     // TreeCas
  Stmt* desired() const;      // TreeCas

  // Replaces operand slot `i` (used by passes that rewrite uses).
  void set_operand(size_t i, Stmt* s) { operands_.at(i) = s; }
  void replace_operand(Stmt* from, Stmt* to);

  // ---- attributes ----
  UnaryOp unary_op() const;
  BinaryOp binary_op() const;
  AtomicOp atomic_op() const;    // FieldAtomic, TreeAtomic
  SNodeOpKind snode_op() const;  // SNodeOp
  TaskKind task_kind() const;    // Task
  int index() const { return index_; }       // Arg: argument number; LoopIndex: axis
  int field() const { return field_; }       // FieldLoad/Store/Atomic, StructFor (-1: over an SNode)
  // Tree statements: what the word they access holds: an element of field
  // `field()` (set by lower_access), the sparse runtime's own words
  // (kRuntimeWords: slots, masks, lengths, lists; reads only), or
  // anything (-1). Accesses of two different kinds never touch one word,
  // which the LLVM backend tells its optimiser (docs/ir.md).
  void set_field(int field);
  int snode() const;                         // SNodeOp, StructFor, Task (-1 if none)
  int tree() const;                          // TreeLoad/Store/Atomic/Cas: the tree (its id: its type)
  // Field and SNode operations, struct_for, tree statements and tasks: the
  // kernel's tree parameter whose instance they work on (Kernel::tree_params),
  // or -1 for the tree's own (implicit) instance.
  int tree_param() const { return tree_param_; }
  void set_tree_param(int p) { tree_param_ = p; }
  DataType storage() const { return storage_; }  // TreeLoad/Store: the type in memory
  // TreeLoad: an atomic (relaxed) load, for runtime words that other
  // invocations of the same task may change with atomics (docs/memory.md,
  // "Memory ordering"). 32-bit storage only.
  bool atomic_load() const;
  void set_atomic_load(bool atomic);
  // If: its condition is rarely true (the sparse runtime's allocation, once
  // per block a kernel activates), so an executor may lay the then-block
  // out of the way: the LLVM backend weights the branch and compiles each
  // distinct large one once, as a function of its own.
  bool unlikely() const;
  void set_unlikely(bool unlikely);
  // RangeFor: an axis of its enclosing parallel loop's grid. It stands last
  // in the body of the parallel range_for (or of another grid range_for),
  // after side-effect-free statements only, and its iterations are as
  // independent as the parallel loop's (no break leaves it): an executor may
  // run it in order, as any range_for, or spread it over a second or third
  // axis of invocations (Vulkan and CUDA workgroups), with no division to
  // find an invocation's point. docs/ir.md, "Grid loops".
  bool grid() const;
  void set_grid(bool grid);
  Reduction reduction() const;   // TreeAtomic (set by mark_reductions)
  void set_reduction(Reduction r);
  uint64_t bits() const { return bits_; }    // Const: the value's bit pattern (see const_*)
  const std::string& text() const { return text_; }  // Print, Assert, Task

  // Const values, read in the statement's own type.
  int64_t const_int() const;    // integral types, sign- or zero-extended
  double const_float() const;   // float types
  bool is_const() const { return kind_ == StmtKind::Const; }

  // ---- nested blocks ----
  Block* body() const;          // RangeFor, StructFor, While, Task
  Block* then_block() const;    // If
  Block* else_block() const;    // If
  std::span<const std::unique_ptr<Block>> blocks() const { return blocks_; }

  bool has_result() const;      // whether the statement defines a value
  bool has_side_effects() const;  // may not be removed even when unused

 private:
  friend class Builder;
  friend class Block;
  friend class Fingerprinter;  // reads every member below: keep it in step
  friend class Numbering;
  Stmt(StmtKind kind, DataType type) : kind_(kind), type_(type) {}

  StmtKind kind_;
  DataType type_;
  uint8_t op_ = 0;
  DataType storage_ = DataType::unknown;
  int index_ = 0;
  int field_ = -1;
  int tree_param_ = -1;
  uint64_t bits_ = 0;
  uint8_t mark_ = 0;  // TreeLoad: atomic_load; TreeAtomic: Reduction; If: unlikely; RangeFor: grid
  // Its number in the last Numbering that reached it, and that numbering.
  mutable uint32_t number_ = 0;
  mutable uint64_t numbering_ = 0;
  std::string text_;
  std::vector<Stmt*> operands_;
  std::vector<std::unique_ptr<Block>> blocks_;
  Block* parent_ = nullptr;
};

// An ordered list of statements; owned by a kernel or by a statement.
//
// Passes edit blocks while they sweep them: take the statement at the
// cursor, insert a few before it. The statements are kept in a gap buffer
// (a vector with a run of empty slots at the last edit), so such a sweep
// costs O(size) in all rather than O(size) per edit, however large the block.
class Block {
 public:
  explicit Block(Stmt* owner) : owner_(owner) {}
  Stmt* owner() const { return owner_; }  // nullptr for a kernel's body
  size_t size() const { return buf_.size() - gap_size(); }
  bool empty() const { return size() == 0; }
  Stmt* at(size_t i) const { return (i < gap_begin_ ? buf_[i] : buf_[i + gap_size()]).get(); }
  // The statements in order (closes the gap first: O(size) after an edit).
  const std::vector<std::unique_ptr<Stmt>>& stmts() const;

  // Inserts `s` before position `pos` and returns it.
  Stmt* insert(size_t pos, std::unique_ptr<Stmt> s);
  Stmt* append(std::unique_ptr<Stmt> s) { return insert(size(), std::move(s)); }
  // Removes the statement at `pos` and returns ownership of it.
  std::unique_ptr<Stmt> take(size_t pos);
  // Removes every statement and returns them in order (for passes that
  // rebuild a block in one pass rather than edit it statement by statement).
  std::vector<std::unique_ptr<Stmt>> take_all();
  size_t position_of(const Stmt* s) const;  // asserts that s is here

 private:
  size_t gap_size() const { return gap_end_ - gap_begin_; }
  void move_gap(size_t pos) const;  // the gap starts at statement `pos`
  void close_gap() const;

  Stmt* owner_;
  // Statements [0, gap_begin_) then [gap_end_, buf_.size()); the slots of
  // the gap are empty.
  mutable std::vector<std::unique_ptr<Stmt>> buf_;
  mutable size_t gap_begin_ = 0, gap_end_ = 0;
};

// The stages of docs/ir.md; the verifier checks what each one allows.
// frontend -> typed (type_check) -> offloaded (offload: the body becomes tasks)
// -> lowered (lower_access: field and SNode operations become tree memory)
// -> legal (legalize: what the target lacks is written in primitives, whose
// operands then keep the primitives' preconditions; docs/ir.md).
enum class Stage : uint8_t { frontend, typed, offloaded, lowered, legal };
// Lowered or legal: only tree memory is left, as a code generator takes it.
inline bool is_lowered(Stage s) { return s == Stage::lowered || s == Stage::legal; }
const char* stage_name(Stage s);  // "frontend", "typed", ... (the textual form's `stage` word)
bool parse_stage(std::string_view name, Stage* out);

struct KernelArg {
  std::string name;
  DataType type = DataType::unknown;
};

// A parameter of a kernel that is a tree instance of one tree type (the
// tree `tree` of the forest, whose layout is the type's): statements bound
// to it (Stmt::tree_param) work on the instance the launch passes.
struct TreeParam {
  std::string name;
  int tree = -1;
};

// One kernel: its signature, its fields' table and its body.
class Kernel {
 public:
  Kernel(std::string name, std::vector<KernelArg> args, const FieldTable* fields);
  const std::string& name() const { return name_; }
  const std::vector<KernelArg>& args() const { return args_; }
  const FieldTable& fields() const { return *fields_; }
  const FieldTable* field_table() const { return fields_; }  // null for a kernel that uses no fields
  std::vector<TreeParam> tree_params;
  // The SNode trees the kernel's fields live in (set by the program; the
  // lowering passes need it, the text form does not).
  const SNodeForest* forest = nullptr;
  Block* body() const { return body_.get(); }
  Stage stage = Stage::frontend;
  // Stage legal: the print and assert messages legalize wrote as records
  // (docs/ir.md, "Print and assert"), in the order of their numbers; a
  // record carries message_base + its message's number.
  std::vector<rt::MessagePlan> messages;

 private:
  std::string name_;
  std::vector<KernelArg> args_;
  const FieldTable* fields_;
  std::unique_ptr<Block> body_;
};

// Visits every statement of `block` and its nested blocks in program order,
// a statement before its nested blocks.
template <typename F>
void walk(Block* block, F&& f) {
  for (size_t i = 0; i < block->size(); ++i) {
    Stmt* s = block->at(i);
    f(s);
    for (const auto& b : s->blocks()) walk(b.get(), f);
  }
}

// Numbers statements in program order for the printer and the fingerprint
// without a map: a statement keeps the number the last numbering gave it,
// stamped with that numbering's serial, so that a statement this numbering
// has not reached (one defined later, or outside the kernel) reads as
// unnumbered. A kernel is numbered (printed, fingerprinted) by one thread at
// a time, like every other use of the IR.
class Numbering {
 public:
  Numbering();
  void set(const Stmt* s, uint32_t number) const {
    s->number_ = number;
    s->numbering_ = serial_;
  }
  bool has(const Stmt* s) const { return s->numbering_ == serial_; }
  uint32_t get(const Stmt* s) const { return s->number_; }  // when has(s)

 private:
  uint64_t serial_;
};

// A tree statement's field() for the sparse runtime's own words (Stmt::set_field).
inline constexpr int kRuntimeWords = -2;
// The tree() of a tree statement on the launch's context buffer (legal
// stage: the records of print and assert, runtime/core/context_layout.h);
// written `@context`. It is no tree of the forest and takes no tree
// parameter: every target binds the context beside its trees.
inline constexpr int kContextTree = -3;
// A tree statement on a tree instance (one of the kernel's buffers), not
// on the context.
inline bool accesses_tree_buffer(const Stmt* s) { return is_tree_access(s->kind()) && s->tree() != kContextTree; }

// Every use of `from` in `root` (recursively) now refers to `to`.
void replace_all_uses(Block* root, Stmt* from, Stmt* to);

}  // namespace grove::ir
