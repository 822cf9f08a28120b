// src/ir/passes/dce.cpp — dead-code elimination, iterated to a fixed point.
//
// Each round: (1) drops the statements that follow a break/continue in the
// same block (unreachable, whatever they are, loops included); (2) counts the
// uses of every statement and the local_loads of every alloca; (3) sweeps the
// kernel in reverse program order, removing
//   * statements without side effects whose result is unused,
//   * local_stores into allocas that are never loaded (the alloca follows,
//     once its last store is gone),
//   * ifs whose then and else blocks are both empty.
// Reverse order means a removed statement's operands are visited after it, so
// a dead chain goes in one sweep. Loops, field stores, atomics, prints and
// break/continue are never removed by (3), nor are tree stores, tree atomics
// and compare-and-swaps, tasks (even empty ones) and the SNode operations
// that change state (activate, deactivate, append); unused tree_loads and
// is_active/length snode_ops have no side effects and go.
#include "ir/passes/dce.h"

#include "ir/stmt_map.h"

namespace grove::ir {

namespace {

class Dce {
 public:
  explicit Dce(Kernel& kernel) : kernel_(kernel) {}

  bool run() {
    bool any = false;
    for (;;) {
      bool changed = drop_unreachable(kernel_.body());
      count_uses();
      changed |= sweep(kernel_.body());
      if (!changed) return any;
      any = true;
    }
  }

 private:
  static bool drop_unreachable(Block* block) {
    bool changed = false;
    for (size_t i = 0; i < block->size(); ++i) {
      Stmt* s = block->at(i);
      if (s->kind() == StmtKind::Break || s->kind() == StmtKind::Continue) {
        while (block->size() > i + 1) {
          block->take(block->size() - 1);
          changed = true;
        }
        break;
      }
      for (const auto& inner : s->blocks()) changed |= drop_unreachable(inner.get());
    }
    return changed;
  }

  void count_uses() {
    uses_.clear();
    loads_.clear();
    walk(kernel_.body(), [&](Stmt* s) {
      for (Stmt* op : s->operands()) ++uses_[op];
      if (s->kind() == StmtKind::LocalLoad) ++loads_[s->ptr()];
    });
  }

  // A store to a variable nobody reads, an `if` with nothing in it, or a
  // statement without effects whose value nobody uses.
  bool removable(const Stmt* s) {
    if (s->kind() == StmtKind::LocalStore) return loads_[s->ptr()] == 0;
    if (s->kind() == StmtKind::If) return s->then_block()->empty() && s->else_block()->empty();
    return !s->has_side_effects() && uses_[s] == 0;
  }

  bool sweep(Block* block) {
    bool changed = false;
    for (size_t i = block->size(); i-- > 0;) {
      Stmt* s = block->at(i);
      for (size_t b = s->blocks().size(); b-- > 0;) changed |= sweep(s->blocks()[b].get());
      if (!removable(s)) continue;
      for (Stmt* op : s->operands()) {
        --uses_[op];
        if (s->kind() == StmtKind::LocalLoad) --loads_[op];
      }
      block->take(i);
      changed = true;
    }
    return changed;
  }

  Kernel& kernel_;
  StmtMap<int> uses_;
  StmtMap<int> loads_;  // local_loads per alloca
};

}  // namespace

bool eliminate_dead_code(Kernel& kernel) { return Dce(kernel).run(); }

}  // namespace grove::ir
