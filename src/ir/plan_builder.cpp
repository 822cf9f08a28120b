// src/ir/plan_builder.cpp — kernel plans from lowered IR (see plan_builder.h).
#include "ir/plan_builder.h"

#include <set>
#include <unordered_map>

#include "ir/assert.h"
#include "ir/snode.h"
#include "ir/visitor.h"

namespace grove::ir {

namespace {

using Op = rt::CountExpr::Op;

// Appends the nodes of one value to a count expression; -1 when the value
// cannot be computed on the host. Every kind says what it is.
class CountBuilder : public ConstStmtVisitor<CountBuilder, int32_t> {
 public:
  explicit CountBuilder(rt::CountExpr& out) : out_(out) {}

  int32_t build(const Stmt* s) {
    auto it = done_.find(s);
    if (it != done_.end()) return it->second;
    if (depth_ > 64 || !is_integral(s->type()) || s->type() == DataType::u1) return -1;
    ++depth_;
    const int32_t n = visit(s);
    --depth_;
    done_[s] = n;
    return n;
  }

  int32_t visit_Const(const Stmt* s) { return add(Op::constant, s->type(), s->const_int()); }
  int32_t visit_Arg(const Stmt* s) { return add(Op::arg, s->type(), s->index()); }
  int32_t visit_Cast(const Stmt* s) {
    const int32_t a = build(s->operand());
    return a < 0 ? -1 : add(Op::cast, s->type(), 0, a);
  }
  int32_t visit_Binary(const Stmt* s) {
    Op op = Op::constant;  // every case below sets it or returns
    switch (s->binary_op()) {
      case BinaryOp::add: op = Op::add; break;
      case BinaryOp::sub: op = Op::sub; break;
      case BinaryOp::mul: op = Op::mul; break;
      case BinaryOp::div: op = Op::div; break;
      case BinaryOp::min: op = Op::min; break;
      case BinaryOp::max: op = Op::max; break;
      case BinaryOp::mod: case BinaryOp::pow: case BinaryOp::atan2: case BinaryOp::bit_and:
      case BinaryOp::bit_or: case BinaryOp::bit_xor: case BinaryOp::shl: case BinaryOp::shr:
      case BinaryOp::logic_and: case BinaryOp::logic_or: case BinaryOp::cmp_lt: case BinaryOp::cmp_le:
      case BinaryOp::cmp_gt: case BinaryOp::cmp_ge: case BinaryOp::cmp_eq: case BinaryOp::cmp_ne:
        return -1;
    }
    if (s->lhs()->type() != s->type() || s->rhs()->type() != s->type()) return -1;  // typed IR computes in one type
    const int32_t a = build(s->lhs()), b = build(s->rhs());
    return a < 0 || b < 0 ? -1 : add(op, s->type(), 0, a, b);
  }
  // Everything else is known only where the kernel runs.
  int32_t visit_Unary(const Stmt*) { return -1; }
  int32_t visit_Bitcast(const Stmt*) { return -1; }
  int32_t visit_Select(const Stmt*) { return -1; }
  int32_t visit_Alloca(const Stmt*) { return -1; }
  int32_t visit_LocalLoad(const Stmt*) { return -1; }
  int32_t visit_LocalStore(const Stmt*) { return -1; }
  int32_t visit_FieldLoad(const Stmt*) { return -1; }
  int32_t visit_FieldStore(const Stmt*) { return -1; }
  int32_t visit_FieldAtomic(const Stmt*) { return -1; }
  int32_t visit_RangeFor(const Stmt*) { return -1; }
  int32_t visit_StructFor(const Stmt*) { return -1; }
  int32_t visit_LoopIndex(const Stmt*) { return -1; }
  int32_t visit_If(const Stmt*) { return -1; }
  int32_t visit_While(const Stmt*) { return -1; }
  int32_t visit_Break(const Stmt*) { return -1; }
  int32_t visit_Continue(const Stmt*) { return -1; }
  int32_t visit_Stop(const Stmt*) { return -1; }
  int32_t visit_MessageBase(const Stmt*) { return -1; }
  int32_t visit_Print(const Stmt*) { return -1; }
  int32_t visit_Assert(const Stmt*) { return -1; }
  int32_t visit_SubgroupFirst(const Stmt*) { return -1; }
  int32_t visit_SubgroupElect(const Stmt*) { return -1; }
  int32_t visit_SNodeOp(const Stmt*) { return -1; }
  int32_t visit_TreeLoad(const Stmt*) { return -1; }
  int32_t visit_TreeStore(const Stmt*) { return -1; }
  int32_t visit_TreeAtomic(const Stmt*) { return -1; }
  int32_t visit_TreeCas(const Stmt*) { return -1; }
  int32_t visit_Task(const Stmt*) { return -1; }

 private:
  int32_t add(Op op, DataType t, int64_t value, int32_t a = -1, int32_t b = -1) {
    out_.nodes.push_back({op, t, value, a, b});
    return static_cast<int32_t>(out_.nodes.size()) - 1;
  }

  rt::CountExpr& out_;
  std::unordered_map<const Stmt*, int32_t> done_;
  int depth_ = 0;
};

}  // namespace

bool counted_on_host(const Stmt* loop) {
  return count_expr(loop->begin()).known() && count_expr(loop->end()).known();
}

std::vector<const Stmt*> grid_nest(const Stmt* parallel_loop, size_t most) {
  std::vector<const Stmt*> nest{parallel_loop};
  if (!counted_on_host(parallel_loop)) return nest;
  while (nest.size() < most) {
    const Block* body = nest.back()->body();
    const Stmt* inner = body->empty() ? nullptr : body->at(body->size() - 1);
    if (inner == nullptr || inner->kind() != StmtKind::RangeFor || !inner->grid() || !counted_on_host(inner)) break;
    nest.push_back(inner);
  }
  return nest;
}

int64_t constant_iterations(const Stmt* loop) {
  if (!loop->begin()->is_const() || !loop->end()->is_const()) return -1;
  return std::max<int64_t>(0, loop->end()->const_int() - loop->begin()->const_int());
}

GridLayout grid_layout(const Stmt* parallel_loop, uint32_t invocations) {
  GridLayout out;
  out.nest = grid_nest(parallel_loop);
  if (out.nest.size() == 1) return out;
  for (const Stmt* loop : out.nest) out.counts.push_back(constant_iterations(loop));
  out.sizes = rt::grid_group_sizes(out.counts, invocations);
  for (size_t a = 1; a < out.nest.size(); ++a) {
    rt::GridAxis g;
    g.static_iterations = out.counts[a];
    g.begin = count_expr(out.nest[a]->begin());
    g.end = count_expr(out.nest[a]->end());
    g.local_size = out.sizes[a];
    out.axes.push_back(std::move(g));
  }
  return out;
}

rt::CountExpr count_expr(const Stmt* value) {
  rt::CountExpr c;
  c.root = CountBuilder(c).build(value);
  if (c.root < 0) c.nodes.clear();
  return c;
}

int slot_of(const rt::KernelPlan& plan, int tree, int tree_param) {
  for (size_t s = 0; s < plan.slots.size(); ++s)
    if (plan.slots[s].tree_type == tree && plan.slots[s].param == tree_param) return static_cast<int>(s);
  GROVE_ASSERT(false, "kernel '" + plan.name + "' names no tree " + std::to_string(tree) + " through parameter " +
                          std::to_string(tree_param));
  return -1;
}

rt::KernelPlan plan_kernel(const Kernel& kernel, const std::vector<TaskInfo>& tasks, const PlanOptions& options) {
  GROVE_ASSERT(is_lowered(kernel.stage), "a plan of a kernel that is not lowered");
  rt::KernelPlan plan;
  plan.name = kernel.name();
  for (const KernelArg& a : kernel.args()) plan.args.push_back({a.name, a.type, 0, 0});
  // Slots: every tree instance the kernel's statements name, and those of
  // the SNodes its tasks visit and modify (a listgen's list lives in its
  // instance): a tree through one of the kernel's tree parameters, or a
  // tree's own instance.
  std::set<std::pair<int, int>> trees;  // (tree, tree_param)
  walk(kernel.body(), [&](Stmt* s) {
    // The context is bound beside the trees, not in a slot.
    if (accesses_tree_buffer(s)) trees.insert({s->tree(), s->tree_param()});
  });
  const SNodeForest* forest = kernel.forest;
  if (forest != nullptr) {
    for (const TaskInfo& t : tasks) {
      if (t.snode >= 0) trees.insert({forest->snode(t.snode).tree, t.tree_param});
      for (const BoundSNode& m : t.modifies) trees.insert({forest->snode(m.snode).tree, m.tree_param});
    }
  }
  for (auto [t, param] : trees) {
    rt::TreeSlotPlan slot;
    slot.kind = t == options.scratch_tree ? rt::TreeSlotPlan::Kind::scratch : rt::TreeSlotPlan::Kind::tree;
    slot.tree_type = t;
    slot.param = param;
    plan.slots.push_back(slot);
  }
  const Block* body = kernel.body();
  GROVE_ASSERT(body->size() == tasks.size(), "kernel '" + kernel.name() + "' has " + std::to_string(body->size()) +
                                                 " tasks but offload reported " + std::to_string(tasks.size()));
  for (size_t i = 0; i < body->size(); ++i) {
    const Stmt* task = body->at(i);
    GROVE_ASSERT(task->kind() == StmtKind::Task, "a lowered kernel's body holds only tasks");
    rt::TaskPlan t;
    t.kind = task->task_kind();
    t.label = task->text();
    t.snode = tasks[i].snode;
    t.tree_slot = t.snode >= 0 && forest != nullptr ? slot_of(plan, forest->snode(t.snode).tree, tasks[i].tree_param) : -1;
    for (const BoundSNode& m : tasks[i].modifies)
      t.modifies.push_back({slot_of(plan, forest->snode(m.snode).tree, m.tree_param), m.snode});
    t.parallel = is_parallel(t.kind);
    if (t.parallel) {
      const Block* b = task->body();
      GROVE_ASSERT(!b->empty() && b->at(b->size() - 1)->kind() == StmtKind::RangeFor,
                   "a parallel task ends with its range_for");
      const Stmt* loop = b->at(b->size() - 1);
      t.static_iterations = constant_iterations(loop);
      t.begin = count_expr(loop->begin());
      t.end = count_expr(loop->end());
    }
    plan.may_allocate = plan.may_allocate || !t.modifies.empty();
    plan.tasks.push_back(std::move(t));
  }
  walk(kernel.body(), [&](Stmt* s) { plan.prints = plan.prints || s->kind() == StmtKind::Print; });
  for (const rt::MessagePlan& m : kernel.messages) plan.prints = plan.prints || !m.is_assert;  // legalized prints
  plan.scratch_words = options.scratch_words;
  return plan;
}

}  // namespace grove::ir
