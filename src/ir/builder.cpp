// src/ir/builder.cpp — statement construction with operand checks.
#include "ir/builder.h"

#include <cstring>

#include "ir/assert.h"
#include "ir/type_rules.h"

namespace grove::ir {

Stmt* Builder::insert(StmtKind kind, DataType type, std::vector<Stmt*> operands) {
  int expected = kind_operand_count(kind);
  GROVE_ASSERT(expected < 0 || static_cast<int>(operands.size()) == expected,
               std::string("'") + kind_name(kind) + "' takes " + std::to_string(expected) +
                   " operands, got " + std::to_string(operands.size()));
  for (Stmt* op : operands)
    GROVE_ASSERT(op != nullptr, std::string("null operand given to '") + kind_name(kind) + "'");
  std::unique_ptr<Stmt> s(new Stmt(kind, type));
  s->operands_ = std::move(operands);
  if (is_tree_bound(kind)) s->tree_param_ = tree_param_;
  for (int i = 0; i < kind_block_count(kind); ++i)
    s->blocks_.push_back(std::make_unique<Block>(s.get()));
  Stmt* raw = block_->insert(pos_, std::move(s));
  ++pos_;
  return raw;
}

Stmt* Builder::const_bits(DataType t, uint64_t bits) {
  GROVE_ASSERT(t != DataType::unknown && t != DataType::f16, "constants need a value type");
  if (bit_width(t) < 64) bits &= (uint64_t{1} << bit_width(t)) - 1;
  Stmt* s = insert(StmtKind::Const, t, {});
  s->bits_ = bits;
  return s;
}

Stmt* Builder::const_int(DataType t, int64_t v) {
  GROVE_ASSERT(is_integral(t), "const_int needs an integral type");
  return const_bits(t, static_cast<uint64_t>(v));
}

Stmt* Builder::const_float(DataType t, double v) {
  if (t == DataType::f64) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    return const_bits(t, b);
  }
  GROVE_ASSERT(t == DataType::f32, "const_float needs f32 or f64");
  float f = static_cast<float>(v);
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return const_bits(t, b);
}

Stmt* Builder::arg(DataType t, int index) {
  Stmt* s = insert(StmtKind::Arg, compute_type(t), {});
  s->index_ = index;
  return s;
}

Stmt* Builder::unary(UnaryOp op, Stmt* x) { return unary_typed(op, unary_type(op, x->type()), x); }

Stmt* Builder::unary_typed(UnaryOp op, DataType t, Stmt* x) {
  Stmt* s = insert(StmtKind::Unary, t, {x});
  s->op_ = static_cast<uint8_t>(op);
  return s;
}

Stmt* Builder::cast(DataType t, Stmt* x) { return insert(StmtKind::Cast, compute_type(t), {x}); }
Stmt* Builder::bitcast(DataType t, Stmt* x) { return insert(StmtKind::Bitcast, t, {x}); }

Stmt* Builder::binary(BinaryOp op, Stmt* a, Stmt* b) {
  return binary_typed(op, binary_result_type(op, a->type(), b->type()), a, b);
}

Stmt* Builder::binary_typed(BinaryOp op, DataType t, Stmt* a, Stmt* b) {
  Stmt* s = insert(StmtKind::Binary, t, {a, b});
  s->op_ = static_cast<uint8_t>(op);
  return s;
}

Stmt* Builder::select(Stmt* cond, Stmt* a, Stmt* b) {
  return select_typed(promote(a->type(), b->type()), cond, a, b);
}

Stmt* Builder::select_typed(DataType t, Stmt* cond, Stmt* a, Stmt* b) {
  return insert(StmtKind::Select, t, {cond, a, b});
}

Stmt* Builder::alloca_var(DataType t) { return insert(StmtKind::Alloca, compute_type(t), {}); }

Stmt* Builder::local_load(Stmt* alloca) {
  GROVE_ASSERT(alloca->kind() == StmtKind::Alloca, "local_load needs an alloca");
  return insert(StmtKind::LocalLoad, alloca->type(), {alloca});
}

Stmt* Builder::local_store(Stmt* alloca, Stmt* value) {
  GROVE_ASSERT(alloca->kind() == StmtKind::Alloca, "local_store needs an alloca");
  return insert(StmtKind::LocalStore, DataType::unknown, {alloca, value});
}

Stmt* Builder::field_load(const FieldDecl& f, std::vector<Stmt*> indices) {
  Stmt* s = insert(StmtKind::FieldLoad, compute_type(f.dtype), std::move(indices));
  s->field_ = f.id;
  return s;
}

Stmt* Builder::field_store(const FieldDecl& f, std::vector<Stmt*> indices, Stmt* value) {
  indices.push_back(value);
  Stmt* s = insert(StmtKind::FieldStore, DataType::unknown, std::move(indices));
  s->field_ = f.id;
  return s;
}

Stmt* Builder::field_atomic(AtomicOp op, const FieldDecl& f, std::vector<Stmt*> indices,
                            Stmt* value) {
  indices.push_back(value);
  Stmt* s = insert(StmtKind::FieldAtomic, compute_type(f.dtype), std::move(indices));
  s->field_ = f.id;
  s->op_ = static_cast<uint8_t>(op);
  return s;
}

Stmt* Builder::range_for(Stmt* begin, Stmt* end) {
  return insert(StmtKind::RangeFor, DataType::unknown, {begin, end});
}

Stmt* Builder::struct_for(const FieldDecl& f) {
  Stmt* s = insert(StmtKind::StructFor, DataType::unknown, {});
  s->field_ = f.id;
  return s;
}

Stmt* Builder::loop_index(Stmt* loop, int axis) {
  GROVE_ASSERT(loop->kind() == StmtKind::RangeFor || loop->kind() == StmtKind::StructFor,
               "loop_index needs a range_for or struct_for");
  Stmt* s = insert(StmtKind::LoopIndex, DataType::i32, {loop});
  s->index_ = axis;
  return s;
}

Stmt* Builder::if_stmt(Stmt* cond) { return insert(StmtKind::If, DataType::unknown, {cond}); }
Stmt* Builder::while_loop() { return insert(StmtKind::While, DataType::unknown, {}); }
Stmt* Builder::break_stmt() { return insert(StmtKind::Break, DataType::unknown, {}); }
Stmt* Builder::continue_stmt() { return insert(StmtKind::Continue, DataType::unknown, {}); }
Stmt* Builder::stop() { return insert(StmtKind::Stop, DataType::unknown, {}); }
Stmt* Builder::message_base() { return insert(StmtKind::MessageBase, DataType::u32, {}); }
Stmt* Builder::subgroup_first(Stmt* x) { return insert(StmtKind::SubgroupFirst, x->type(), {x}); }
Stmt* Builder::subgroup_elect() { return insert(StmtKind::SubgroupElect, DataType::u1, {}); }

Stmt* Builder::print(std::string format, std::vector<Stmt*> values) {
  Stmt* s = insert(StmtKind::Print, DataType::unknown, std::move(values));
  s->text_ = std::move(format);
  return s;
}

Stmt* Builder::assert_stmt(Stmt* cond, std::string message, std::vector<Stmt*> values) {
  values.insert(values.begin(), cond);
  Stmt* s = insert(StmtKind::Assert, DataType::unknown, std::move(values));
  s->text_ = std::move(message);
  return s;
}

Stmt* Builder::struct_for_snode(int snode) {
  Stmt* s = insert(StmtKind::StructFor, DataType::unknown, {});
  s->index_ = snode;
  return s;
}

Stmt* Builder::snode_op(SNodeOpKind op, int snode, std::vector<Stmt*> indices, std::vector<Stmt*> values) {
  DataType t = DataType::unknown;
  if (op == SNodeOpKind::is_active) t = DataType::u1;
  if (op == SNodeOpKind::append || op == SNodeOpKind::length) t = DataType::i32;
  GROVE_ASSERT((op == SNodeOpKind::append) == !values.empty(), "append (only) takes values");
  const size_t count = values.size();
  indices.insert(indices.end(), values.begin(), values.end());
  Stmt* s = insert(StmtKind::SNodeOp, t, std::move(indices));
  s->op_ = static_cast<uint8_t>(op);
  s->index_ = snode;
  s->bits_ = count;
  return s;
}

Stmt* Builder::tree_load(int tree, DataType storage, Stmt* address, bool atomic) {
  Stmt* s = insert(StmtKind::TreeLoad, compute_type(storage), {address});
  s->index_ = tree;
  s->storage_ = storage;
  s->mark_ = atomic ? 1 : 0;
  return s;
}

Stmt* Builder::tree_store(int tree, DataType storage, Stmt* address, Stmt* value) {
  Stmt* s = insert(StmtKind::TreeStore, DataType::unknown, {address, value});
  s->index_ = tree;
  s->storage_ = storage;
  return s;
}

Stmt* Builder::tree_atomic(AtomicOp op, int tree, DataType type, Stmt* address, Stmt* value) {
  Stmt* s = insert(StmtKind::TreeAtomic, type, {address, value});
  s->index_ = tree;
  s->op_ = static_cast<uint8_t>(op);
  s->storage_ = type;
  return s;
}

Stmt* Builder::tree_cas(int tree, DataType type, Stmt* address, Stmt* expected, Stmt* desired) {
  Stmt* s = insert(StmtKind::TreeCas, type, {address, expected, desired});
  s->index_ = tree;
  s->storage_ = type;
  return s;
}

Stmt* Builder::task(TaskKind kind, int snode, std::string label) {
  Stmt* s = insert(StmtKind::Task, DataType::unknown, {});
  s->op_ = static_cast<uint8_t>(kind);
  s->index_ = snode;
  s->text_ = std::move(label);
  return s;
}

Stmt* Builder::clone(const Stmt* s, CloneMap& map) {
  std::vector<Stmt*> ops;
  for (Stmt* op : s->operands()) {
    auto it = map.find(op);
    ops.push_back(it == map.end() ? op : it->second);
  }
  Stmt* c = insert(s->kind(), s->type(), std::move(ops));
  c->op_ = s->op_;
  c->index_ = s->index_;
  c->field_ = s->field_;
  c->bits_ = s->bits_;
  c->storage_ = s->storage_;
  c->text_ = s->text_;
  c->tree_param_ = s->tree_param_;
  c->mark_ = s->mark_;
  map[s] = c;
  for (size_t b = 0; b < s->blocks_.size(); ++b) {
    Builder inner(c->blocks_[b].get());
    inner.set_tree_param(tree_param_);
    for (const auto& child : s->blocks_[b]->stmts()) inner.clone(child.get(), map);
  }
  return c;
}

namespace {

std::unique_ptr<Kernel> clone_onto(const Kernel& kernel, const FieldTable* fields, const SNodeForest* forest) {
  auto copy = std::make_unique<Kernel>(kernel.name(), kernel.args(), fields);
  copy->tree_params = kernel.tree_params;
  copy->forest = forest;
  copy->stage = kernel.stage;
  copy->messages = kernel.messages;
  Builder b(copy->body());
  Builder::CloneMap map;
  for (const auto& s : kernel.body()->stmts()) b.clone(s.get(), map);
  return copy;
}

}  // namespace

std::unique_ptr<Kernel> clone_kernel(const Kernel& kernel) {
  return clone_onto(kernel, kernel.field_table(), kernel.forest);
}

std::unique_ptr<Kernel> clone_kernel(const Kernel& kernel, const FieldTable& fields) {
  return clone_onto(kernel, &fields, nullptr);
}

}  // namespace grove::ir
