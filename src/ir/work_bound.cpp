// src/ir/work_bound.cpp — see work_bound.h.
#include "ir/work_bound.h"

#include <optional>
#include <unordered_map>

#include "ir/eval.h"
#include "ir/snode.h"

namespace grove::ir {

namespace {

constexpr int64_t kMost = int64_t{1} << 62;

int64_t add(int64_t a, int64_t b) { return a >= kMost - b ? kMost : a + b; }
int64_t mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a >= kMost / b ? kMost : a * b;
}

class Bound {
 public:
  explicit Bound(const SNodeForest& forest) : forest_(forest) {}

  // The statements `block` runs at most, or -1.
  int64_t block(const Block& b) {
    int64_t total = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      const int64_t n = stmt(*b.at(i));
      if (n < 0) return -1;
      total = add(total, n);
    }
    return total;
  }

 private:
  int64_t stmt(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::Const:
        known_[&s] = s.bits();
        return 1;
      case StmtKind::Unary:
      case StmtKind::Cast:
        if (std::optional<uint64_t> x = value(s.operand())) {
          if (s.kind() == StmtKind::Cast) known_[&s] = eval_cast(s.operand()->type(), s.type(), *x);
          else if (is_integral(s.type())) known_[&s] = eval_unary(s.unary_op(), s.type(), *x);
        }
        return 1;
      case StmtKind::Binary: {
        std::optional<uint64_t> a = value(s.lhs()), b = value(s.rhs());
        // Integers only: a bound never needs a float's value (and a
        // division by zero is left unknown rather than evaluated).
        if (a && b && is_integral(s.lhs()->type())) {
          const BinaryOp op = s.binary_op();
          const bool divides = op == BinaryOp::div || op == BinaryOp::mod;
          if (!divides || *b != 0) known_[&s] = eval_binary(op, s.lhs()->type(), *a, *b);
        }
        return 1;
      }
      case StmtKind::RangeFor: {
        std::optional<uint64_t> lo = value(s.begin()), hi = value(s.end());
        if (!lo || !hi) return -1;
        const int64_t first = bits_to_int(s.begin()->type(), *lo), last = bits_to_int(s.end()->type(), *hi);
        const int64_t body = block(*s.body());
        if (body < 0) return -1;
        return add(1, mul(last > first ? last - first : 0, add(body, 1)));
      }
      case StmtKind::StructFor: {
        const int node = s.field() >= 0 ? forest_.place_of(s.field()) : s.snode();
        const int64_t body = block(*s.body());
        if (node < 0 || body < 0) return -1;
        return add(1, mul(forest_.snode(node).total_cells, add(body, 1)));
      }
      case StmtKind::While:
        return -1;
      default: {
        int64_t total = 1;
        for (const auto& b : s.blocks()) {
          const int64_t n = block(*b);
          if (n < 0) return -1;
          total = add(total, n);
        }
        return total;
      }
    }
  }

  std::optional<uint64_t> value(const Stmt* s) const {
    auto it = known_.find(s);
    if (it == known_.end()) return std::nullopt;
    return it->second;
  }

  const SNodeForest& forest_;
  std::unordered_map<const Stmt*, uint64_t> known_;
};

}  // namespace

int64_t work_bound(const Kernel& kernel, const SNodeForest& forest) { return Bound(forest).block(*kernel.body()); }

}  // namespace grove::ir
