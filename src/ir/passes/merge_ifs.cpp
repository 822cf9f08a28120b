// src/ir/passes/merge_ifs.cpp — see merge_ifs.h.
#include "ir/passes/merge_ifs.h"

namespace grove::ir {

namespace {

// Moves every statement of `from` to the end of `to`, in order.
void move_all(Block* from, Block* to) {
  for (std::unique_ptr<Stmt>& s : from->take_all()) to->append(std::move(s));
}

bool merge_in(Block* block) {
  bool changed = false;
  for (size_t i = 0; i < block->size(); ++i) {
    Stmt* first = block->at(i);
    for (const auto& inner : first->blocks()) changed |= merge_in(inner.get());
    if (first->kind() != StmtKind::If) continue;
    for (;;) {
      size_t j = i + 1;
      while (j < block->size() && is_value(block->at(j)->kind())) ++j;
      if (j == block->size()) break;
      Stmt* second = block->at(j);
      if (second->kind() != StmtKind::If || second->cond() != first->cond()) break;
      for (const auto& inner : second->blocks()) merge_in(inner.get());
      // The values between move before the first if (i + 1 .. j - 1 -> i ..).
      for (size_t k = i + 1; k < j; ++k) block->insert(k - 1, block->take(k));
      i = j - 1;  // the first if, now just before the second
      // One condition: rarely true if either says so.
      first->set_unlikely(first->unlikely() || second->unlikely());
      move_all(second->then_block(), first->then_block());
      move_all(second->else_block(), first->else_block());
      block->take(j);
      changed = true;
    }
  }
  return changed;
}

}  // namespace

bool merge_adjacent_ifs(Kernel& kernel) { return merge_in(kernel.body()); }

}  // namespace grove::ir
