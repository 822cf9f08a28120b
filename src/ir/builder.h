// src/ir/builder.h — the only way statements are made: checks operand counts and kinds.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace grove::ir {

// Inserts new statements into a block at an insertion point (by default its
// end). Result types follow type_rules.h; operand types are not forced to
// agree (the type_check pass inserts the casts).
class Builder {
 public:
  explicit Builder(Block* block) : block_(block), pos_(block->size()) {}
  Builder(Block* block, size_t pos) : block_(block), pos_(pos) {}

  Block* block() const { return block_; }
  // Statements made from now on that name a tree instance are bound to the
  // kernel's tree parameter `p` (-1: each tree's own instance).
  void set_tree_param(int p) { tree_param_ = p; }
  int tree_param() const { return tree_param_; }
  size_t position() const { return pos_; }
  void set_insert_point(Block* block, size_t pos) { block_ = block; pos_ = pos; }
  void set_insert_point_to_end(Block* block) { set_insert_point(block, block->size()); }

  Stmt* const_int(DataType t, int64_t v);    // t integral (any width, u1 too)
  Stmt* const_float(DataType t, double v);   // t f32 or f64 (f16 not a value type)
  Stmt* const_bits(DataType t, uint64_t bits);
  Stmt* arg(DataType t, int index);
  Stmt* unary(UnaryOp op, Stmt* x);
  Stmt* cast(DataType t, Stmt* x);
  // The bits of `x` read as type `t` of the same width (32 or 64 bits).
  Stmt* bitcast(DataType t, Stmt* x);
  Stmt* binary(BinaryOp op, Stmt* a, Stmt* b);
  // Like binary() but with an explicit result type (parser, clones).
  Stmt* binary_typed(BinaryOp op, DataType t, Stmt* a, Stmt* b);
  Stmt* unary_typed(UnaryOp op, DataType t, Stmt* x);
  Stmt* select(Stmt* cond, Stmt* a, Stmt* b);
  Stmt* select_typed(DataType t, Stmt* cond, Stmt* a, Stmt* b);
  Stmt* alloca_var(DataType t);
  Stmt* local_load(Stmt* alloca);
  Stmt* local_store(Stmt* alloca, Stmt* value);
  // The result type of a load/atomic is compute_type(field.dtype).
  Stmt* field_load(const FieldDecl& f, std::vector<Stmt*> indices);
  Stmt* field_store(const FieldDecl& f, std::vector<Stmt*> indices, Stmt* value);
  Stmt* field_atomic(AtomicOp op, const FieldDecl& f, std::vector<Stmt*> indices, Stmt* value);
  // Loops and ifs are created with empty blocks; fill them with another Builder.
  Stmt* range_for(Stmt* begin, Stmt* end);
  Stmt* struct_for(const FieldDecl& f);
  Stmt* loop_index(Stmt* loop, int axis);
  Stmt* if_stmt(Stmt* cond);
  Stmt* while_loop();
  Stmt* break_stmt();
  Stmt* stop();          // legal stage (legalize writes it after a failed assertion's record)
  Stmt* message_base();  // legal stage: u32
  Stmt* subgroup_first(Stmt* x);  // x's value in the subgroup's first invocation here
  Stmt* subgroup_elect();         // u1: true in one invocation of the subgroup here
  Stmt* continue_stmt();
  Stmt* print(std::string format, std::vector<Stmt*> values);
  // Fails the launch with `message` (one "{}" per value) unless `cond` holds.
  Stmt* assert_stmt(Stmt* cond, std::string message, std::vector<Stmt*> values);
  // A struct-for over the active cells of an SNode (its own index space).
  Stmt* struct_for_snode(int snode);
  // activate/deactivate: no result; is_active: u1; append/length: i32.
  // `values` only for append (at least one: one per field of the list).
  Stmt* snode_op(SNodeOpKind op, int snode, std::vector<Stmt*> indices, std::vector<Stmt*> values = {});
  // Tree memory. `address` is a u32 word offset into tree `tree`'s buffer.
  // A load yields compute_type(storage); a store converts to `storage`.
  // `atomic`: Stmt::atomic_load.
  Stmt* tree_load(int tree, DataType storage, Stmt* address, bool atomic = false);
  Stmt* tree_store(int tree, DataType storage, Stmt* address, Stmt* value);
  Stmt* tree_atomic(AtomicOp op, int tree, DataType type, Stmt* address, Stmt* value);
  Stmt* tree_cas(int tree, DataType type, Stmt* address, Stmt* expected, Stmt* desired);
  Stmt* task(TaskKind kind, int snode, std::string label);

  // A copy of `s` with its operands remapped by `map` (statements not in the
  // map are kept); nested blocks are cloned recursively and their own
  // statements added to `map`.
  using CloneMap = std::unordered_map<const Stmt*, Stmt*>;
  Stmt* clone(const Stmt* s, CloneMap& map);

 private:
  Stmt* insert(StmtKind kind, DataType type, std::vector<Stmt*> operands);

  Block* block_;
  size_t pos_;
  int tree_param_ = -1;
};

// A copy of `kernel`: signature, tree parameters, forest, stage, messages and body.
std::unique_ptr<Kernel> clone_kernel(const Kernel& kernel);
// The same with `fields` for its field table (a copy of the kernel's, for a
// copy that outlives the kernel's Program or is read on another thread
// while the Program adds fields) and no forest (a lowered kernel's code
// generators do not read it).
std::unique_ptr<Kernel> clone_kernel(const Kernel& kernel, const FieldTable& fields);

}  // namespace grove::ir
