// src/ir/passes/demote_atomics.cpp — see demote_atomics.h.
#include "ir/passes/demote_atomics.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_set>
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

// Whether a range-for's iteration can be told from `indices` alone, so
// that no two iterations reach the same element through them (docs/ir.md,
// demote_atomics). An index is a term of the iteration T (its loop_index):
// T itself, a term plus or minus a value the loop does not compute, or the
// quotient and remainder of one term by the same positive constant, a pair
// that gives the term back. A serial loop inside whose index runs through
// [(X % M) * C, (X % M) * C + C), plus a value the loop does not compute,
// stands for X % M: the rows of for_range over a shape, cut into pieces on
// the CPU (dsl.cpp). T must come out of the indices' pairs, and so must
// the index of each grid loop in the nest (Stmt::grid: its iterations may
// run in parallel too).
class OwnPoint {
 public:
  explicit OwnPoint(Stmt* loop) : loop_(loop) {
    walk(loop->body(), [&](Stmt* s) {
      inside_.insert(s);
      if (s->kind() == StmtKind::RangeFor && s->grid()) grid_.push_back(s);
    });
  }

  bool recoverable(std::span<Stmt* const> indices) const {
    std::vector<Term> terms;
    for (Stmt* i : indices) terms.push_back(term(i));
    for (bool merged = true; merged;) {
      merged = false;
      for (size_t a = 0; a < terms.size() && !merged; ++a) {
        for (size_t b = 0; b < terms.size() && !merged; ++b) {
          if (terms[a].kind != Term::quotient || terms[b].kind != Term::remainder) continue;
          if (terms[a].of != terms[b].of || terms[a].by != terms[b].by) continue;
          terms[a] = term(terms[a].of);
          terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(b));
          merged = true;
        }
      }
    }
    auto comes_out = [&](const Stmt* loop) {
      for (const Term& t : terms)
        if (t.kind == Term::leaf && t.of->kind() == StmtKind::LoopIndex && t.of->loop() == loop) return true;
      return false;
    };
    if (!comes_out(loop_)) return false;
    for (const Stmt* g : grid_)
      if (!comes_out(g)) return false;
    return true;
  }

 private:
  struct Term {
    enum Kind { leaf, quotient, remainder } kind = leaf;
    Stmt* of = nullptr;  // leaf: the statement; else the dividend
    int64_t by = 0;      // the divisor
  };

  bool outside(const Stmt* s) const { return s->is_const() || !inside_.count(s); }

  static int64_t positive_constant(const Stmt* s) {
    return s->is_const() && is_integral(s->type()) && s->const_int() > 0 ? s->const_int() : 0;
  }

  // `s` without casts between integer types of one width (a bijection:
  // they keep an iteration apart from every other).
  static Stmt* uncast(Stmt* s) {
    while (s->kind() == StmtKind::Cast && is_integral(s->type()) && is_integral(s->operand()->type()) &&
           bit_width(s->type()) == bit_width(s->operand()->type()))
      s = s->operand();
    return s;
  }

  // `s` less a value the loop does not compute, added or subtracted.
  Stmt* strip(Stmt* s) const {
    s = uncast(s);
    while (s->kind() == StmtKind::Binary) {
      const BinaryOp op = s->binary_op();
      if (op == BinaryOp::add && outside(s->rhs())) s = s->lhs();
      else if (op == BinaryOp::add && outside(s->lhs())) s = s->rhs();
      else if (op == BinaryOp::sub && outside(s->rhs())) s = s->lhs();
      else break;
      s = uncast(s);
    }
    return s;
  }

  Term term(Stmt* s) const {
    s = strip(s);
    if (s->kind() == StmtKind::Binary && (s->binary_op() == BinaryOp::div || s->binary_op() == BinaryOp::mod)) {
      if (const int64_t m = positive_constant(s->rhs()))
        return {s->binary_op() == BinaryOp::div ? Term::quotient : Term::remainder, uncast(s->lhs()), m};
    }
    if (s->kind() == StmtKind::LoopIndex && s->loop() != loop_ && s->loop()->kind() == StmtKind::RangeFor)
      if (std::optional<Term> piece = piece_of(s->loop())) return *piece;
    return {Term::leaf, s, 0};
  }

  // A serial loop over [(X % M) * C, min((X % M) * C + C, E)) (either end
  // plus the same value the loop does not compute) stands for X % M.
  std::optional<Term> piece_of(const Stmt* row) const {
    Stmt* begin = row->begin();
    Stmt* end = row->end();
    if (begin->kind() == StmtKind::Binary && begin->binary_op() == BinaryOp::add && outside(begin->rhs()) &&
        end->kind() == StmtKind::Binary && end->binary_op() == BinaryOp::add && end->rhs() == begin->rhs()) {
      begin = begin->lhs();
      end = end->lhs();
    }
    if (begin->kind() != StmtKind::Binary || begin->binary_op() != BinaryOp::mul) return std::nullopt;
    const int64_t c = positive_constant(begin->rhs());
    Stmt* rem = uncast(begin->lhs());
    if (c == 0 || rem->kind() != StmtKind::Binary || rem->binary_op() != BinaryOp::mod) return std::nullopt;
    const int64_t m = positive_constant(rem->rhs());
    if (m == 0) return std::nullopt;
    // The end: at most begin + C.
    Stmt* upper = end;
    if (upper->kind() == StmtKind::Binary && upper->binary_op() == BinaryOp::min) {
      Stmt* l = upper->lhs();
      Stmt* r = upper->rhs();
      upper = l->kind() == StmtKind::Binary && l->binary_op() == BinaryOp::add ? l : r;
    }
    if (upper->kind() != StmtKind::Binary || upper->binary_op() != BinaryOp::add || upper->lhs() != begin ||
        positive_constant(upper->rhs()) != c)
      return std::nullopt;
    return Term{Term::remainder, uncast(rem->lhs()), m};
  }

  Stmt* loop_;
  std::unordered_set<const Stmt*> inside_;
  std::vector<const Stmt*> grid_;
};

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
  // Fields every access of which is at the loop's own index: for a
  // struct-for exactly its indices, in order; for a range-for one tuple of
  // indices shared by every access, from which the iteration can be told.
  std::map<int, bool> own_only;
  std::map<int, std::vector<Stmt*>> tuple;
  const std::optional<OwnPoint> point =
      loop->kind() == StmtKind::RangeFor ? std::optional<OwnPoint>(std::in_place, loop) : std::nullopt;
  walk(loop->body(), [&](Stmt* s) {
    if (!is_field_access(s->kind())) return;
    auto [it, fresh] = own_only.emplace(s->field(), true);
    if (!point) {
      it->second = it->second && at_own_index(s, own);
      return;
    }
    const std::vector<Stmt*> idx(s->indices().begin(), s->indices().end());
    auto [first, made] = tuple.emplace(s->field(), idx);
    it->second = it->second && first->second == idx && (!made || point->recoverable(s->indices()));
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
