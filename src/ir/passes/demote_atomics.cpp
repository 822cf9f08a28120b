// src/ir/passes/demote_atomics.cpp — see demote_atomics.h.
#include "ir/passes/demote_atomics.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "ir/builder.h"

namespace grove::ir {

namespace {

// Whether `s` reaches its field through exactly `own`, in order.
bool at_own_index(const Stmt* s, const std::vector<const Stmt*>& own) {
  const auto idx = s->indices();
  if (own.empty() || idx.size() != own.size()) return false;
  for (size_t a = 0; a < own.size(); ++a)
    if (idx[a] != own[a]) return false;
  return true;
}

std::optional<BinaryOp> operation_of(AtomicOp op) {
  switch (op) {
    case AtomicOp::add: return BinaryOp::add;
    case AtomicOp::sub: return BinaryOp::sub;
    case AtomicOp::min: return BinaryOp::min;
    case AtomicOp::max: return BinaryOp::max;
    default: return std::nullopt;
  }
}

bool demote_loop(Kernel& kernel, Stmt* loop) {
  // The loop's own indices: loop_index statements of this loop, by axis.
  std::vector<const Stmt*> own;
  walk(loop->body(), [&](Stmt* s) {
    if (s->kind() != StmtKind::LoopIndex || s->loop() != loop) return;
    const auto axis = static_cast<size_t>(s->index());
    if (own.size() <= axis) own.resize(axis + 1, nullptr);
    if (own[axis] == nullptr) own[axis] = s;
  });
  for (const Stmt* s : own)
    if (s == nullptr) return false;  // an axis read twice or never: keep every atomic
  // Fields every access of which is at the loop's own index.
  std::map<int, bool> own_only;
  walk(loop->body(), [&](Stmt* s) {
    if (!is_field_access(s->kind())) return;
    auto [it, fresh] = own_only.emplace(s->field(), true);
    it->second = it->second && at_own_index(s, own);
  });
  bool changed = false;
  std::map<Stmt*, Stmt*> replaced;
  std::vector<std::unique_ptr<Stmt>> removed;
  std::function<void(Block*)> block = [&](Block* b) {
    for (size_t i = 0; i < b->size(); ++i) {
      Stmt* s = b->at(i);
      for (size_t n = 0; n < s->operands().size(); ++n)
        if (auto it = replaced.find(s->operands()[n]); it != replaced.end()) s->set_operand(n, it->second);
      for (const auto& inner : s->blocks()) block(inner.get());
      if (s->kind() != StmtKind::FieldAtomic || !own_only[s->field()]) continue;
      const std::optional<BinaryOp> op = operation_of(s->atomic_op());
      if (!op) continue;
      const FieldDecl& f = kernel.fields().get(s->field());
      Builder builder(b, i);
      builder.set_tree_param(s->tree_param());
      const std::vector<Stmt*> idx(s->indices().begin(), s->indices().end());
      Stmt* old = builder.field_load(f, idx);
      Stmt* updated = builder.binary(*op, old, s->value());
      builder.field_store(f, idx, updated);
      replaced[s] = old;
      i = builder.position();
      removed.push_back(b->take(i));
      --i;
      changed = true;
    }
  };
  block(loop->body());
  return changed;
}

}  // namespace

bool demote_atomics(Kernel& kernel) {
  bool changed = false;
  Block* body = kernel.body();
  for (size_t i = 0; i < body->size(); ++i) {
    Stmt* s = body->at(i);
    if (s->kind() == StmtKind::RangeFor || s->kind() == StmtKind::StructFor) changed |= demote_loop(kernel, s);
  }
  return changed;
}

}  // namespace grove::ir
