// src/ir/passes/constant_fold.cpp — folds constant expressions and exact identities.
//
// One forward walk in program order. A statement that folds is erased and its
// uses are redirected through `replaced_`: since every use comes after its
// definition in program order, remapping each statement's operands when it is
// visited redirects every use, and chains (`(1 + 2) * 3`) fold in one walk.
// Arithmetic goes through eval.h, the interpreter's own functions, so a folded
// constant is bit-for-bit what the interpreter would have computed.
#include "ir/passes/constant_fold.h"

#include <unordered_map>
#include <vector>

#include "ir/assert.h"
#include "ir/builder.h"
#include "ir/eval.h"

namespace grove::ir {

namespace {

bool is_const_bits(const Stmt* s, uint64_t bits) { return s->is_const() && s->bits() == bits; }

// The bit pattern of the value 1 / all ones in type t.
uint64_t one_bits(DataType t) {
  return is_float(t) ? double_to_bits(t, 1.0) : int_to_bits(t, 1);
}
uint64_t all_ones_bits(DataType t) { return int_to_bits(t, -1); }

// Whether the range_for `loop` contains a break/continue that belongs to it.
bool has_own_jump(const Stmt* loop) {
  bool found = false;
  auto visit = [&](auto& self, const Block* b) -> void {
    for (const auto& s : b->stmts()) {
      if (s->kind() == StmtKind::Break || s->kind() == StmtKind::Continue) found = true;
      if (s->kind() == StmtKind::While || s->kind() == StmtKind::RangeFor ||
          s->kind() == StmtKind::Task)
        continue;
      for (const auto& inner : s->blocks()) self(self, inner.get());
    }
  };
  visit(visit, loop->body());
  return found;
}

class Folder {
 public:
  explicit Folder(Kernel& kernel) : kernel_(kernel) {}

  bool run() {
    fold_block(kernel_.body());
    return changed_;
  }

 private:
  void fold_block(Block* block) {
    size_t i = 0;
    while (i < block->size()) {
      Stmt* s = block->at(i);
      for (size_t k = 0; k < s->operands().size(); ++k) {
        auto it = replaced_.find(s->operands()[k]);
        if (it != replaced_.end()) s->set_operand(k, it->second);
      }
      if (s->kind() == StmtKind::If && s->cond()->is_const() && inline_taken_branch(block, i))
        continue;  // the taken block's statements now start at i
      Builder b(block, i);
      if (Stmt* r = fold(b, s)) {
        replaced_[s] = r;
        dead_.push_back(block->take(b.position()));
        changed_ = true;
        i = b.position();  // a new constant (already final) sits before this point
        continue;
      }
      for (const auto& inner : s->blocks()) fold_block(inner.get());
      ++i;
    }
  }

  // `if` on a constant: its taken block's statements move, in order, to the
  // if's place. An if at the kernel's top level whose taken block holds a
  // range_for with its own break/continue is kept: the loop would become a
  // top-level (parallel) loop, where break and continue are not allowed.
  // (At the offloaded stage the top level holds only tasks, so no if is
  // there; an if inside a task is inside its range_for or in a serial task,
  // where inlining changes nothing about parallelism.)
  // Returns whether the if was inlined.
  bool inline_taken_branch(Block* block, size_t pos) {
    Stmt* s = block->at(pos);
    Block* taken = s->cond()->bits() != 0 ? s->then_block() : s->else_block();
    if (block == kernel_.body()) {
      for (const auto& t : taken->stmts())
        if (t->kind() == StmtKind::RangeFor && has_own_jump(t.get())) return false;
    }
    // A parallel task's body is uniform statements and its one range_for:
    // an if never belongs there (the verifier rejects it); leave it alone.
    const Stmt* task = block->owner();
    if (task && task->kind() == StmtKind::Task && is_parallel(task->task_kind())) return false;
    std::unique_ptr<Stmt> owner = block->take(pos);
    while (!taken->empty()) block->insert(pos, taken->take(taken->size() - 1));  // last first
    dead_.push_back(std::move(owner));
    changed_ = true;
    return true;
  }

  // Returns the statement that replaces `s` (a new constant inserted through
  // `b`, or an existing value), or nullptr when `s` stays.
  Stmt* fold(Builder& b, Stmt* s) {
    switch (s->kind()) {
      case StmtKind::Unary: return fold_unary(b, s);
      case StmtKind::Binary: return fold_binary(b, s);
      case StmtKind::Cast: return fold_cast(b, s);
      case StmtKind::Bitcast: return fold_bitcast(b, s);
      case StmtKind::Select: return fold_select(s);
      case StmtKind::Const: case StmtKind::Arg: case StmtKind::Alloca: case StmtKind::LocalLoad:
      case StmtKind::LocalStore: case StmtKind::FieldLoad: case StmtKind::FieldStore:
      case StmtKind::FieldAtomic: case StmtKind::RangeFor: case StmtKind::StructFor:
      case StmtKind::LoopIndex: case StmtKind::If: case StmtKind::While: case StmtKind::Break:
      case StmtKind::Continue: case StmtKind::Print: case StmtKind::Assert: case StmtKind::SNodeOp:
      case StmtKind::TreeLoad: case StmtKind::TreeStore: case StmtKind::TreeAtomic:
      case StmtKind::TreeCas: case StmtKind::Task: case StmtKind::Stop: case StmtKind::MessageBase:
      case StmtKind::SubgroupFirst: case StmtKind::SubgroupElect:  // (of the lanes that reach them)
        return nullptr;
    }
    return nullptr;
  }

  Stmt* fold_unary(Builder& b, Stmt* s) {
    Stmt* x = s->operand();
    if (!x->is_const()) return nullptr;
    return b.const_bits(s->type(), eval_unary(s->unary_op(), x->type(), x->bits()));
  }

  Stmt* fold_cast(Builder& b, Stmt* s) {
    Stmt* x = s->operand();
    if (x->type() == s->type()) return x;
    if (!x->is_const()) return nullptr;
    return b.const_bits(s->type(), eval_cast(x->type(), s->type(), x->bits()));
  }

  Stmt* fold_bitcast(Builder& b, Stmt* s) {
    Stmt* x = s->operand();
    if (x->type() == s->type()) return x;
    if (!x->is_const()) return nullptr;
    return b.const_bits(s->type(), eval_bitcast(s->type(), x->bits()));
  }

  Stmt* fold_select(Stmt* s) {
    if (s->cond()->is_const()) return s->cond()->bits() != 0 ? s->true_value() : s->false_value();
    if (s->true_value() == s->false_value()) return s->true_value();
    return nullptr;
  }

  Stmt* fold_binary(Builder& b, Stmt* s) {
    Stmt* l = s->lhs();
    Stmt* r = s->rhs();
    BinaryOp op = s->binary_op();
    DataType t = l->type();  // the type the op computes in (typed stage)
    if (l->is_const() && r->is_const())
      return b.const_bits(s->type(), eval_binary(op, t, l->bits(), r->bits()));
    return is_float(t) ? float_identity(op, l, r) : integer_identity(b, s, op, l, r);
  }

  // Whether integer `x` is known to lie in [0, m) for the constant `m`
  // (of x's type): the index of a range_for whose constant bounds lie in
  // [0, m], or such an index cast to another integer type that holds it.
  static bool below(const Stmt* x, const Stmt* m) {
    const DataType t = m->type();
    if (is_float(t) || t == DataType::u1) return false;
    const int64_t limit = bits_to_int(t, m->bits());  // (a u64 past INT64_MAX: negative, never below)
    if (limit <= 0) return false;
    if (x->kind() == StmtKind::Cast && !is_float(x->operand()->type()) && bit_width(x->type()) >= 32 &&
        bit_width(x->operand()->type()) <= bit_width(x->type()))
      x = x->operand();
    if (x->kind() != StmtKind::LoopIndex || x->loop()->kind() != StmtKind::RangeFor) return false;
    const Stmt* loop = x->loop();
    if (!loop->begin()->is_const() || !loop->end()->is_const()) return false;
    const DataType it = loop->begin()->type();
    const int64_t first = bits_to_int(it, loop->begin()->bits()), end = bits_to_int(it, loop->end()->bits());
    return first >= 0 && end <= limit;
  }

  // Identities of integers (u1 included), all exact under wrapping arithmetic.
  Stmt* integer_identity(Builder& b, Stmt* s, BinaryOp op, Stmt* l, Stmt* r) {
    DataType t = l->type();
    const uint64_t zero = 0, one = one_bits(t), ones = all_ones_bits(t);
    switch (op) {
      case BinaryOp::add: case BinaryOp::bit_or: case BinaryOp::bit_xor:
        if (is_const_bits(r, zero)) return l;  // x + 0, x | 0, x ^ 0
        if (is_const_bits(l, zero)) return r;
        return nullptr;
      case BinaryOp::sub: case BinaryOp::shl: case BinaryOp::shr:
        return is_const_bits(r, zero) ? l : nullptr;  // x - 0, x << 0, x >> 0
      case BinaryOp::mul:
        if (is_const_bits(r, one)) return l;
        if (is_const_bits(l, one)) return r;
        if (is_const_bits(r, zero) || is_const_bits(l, zero)) return b.const_bits(s->type(), 0);
        return nullptr;
      case BinaryOp::div:
        return is_const_bits(r, one) ? l : nullptr;
      case BinaryOp::bit_and:
        if (is_const_bits(r, ones)) return l;
        if (is_const_bits(l, ones)) return r;
        if (is_const_bits(r, zero) || is_const_bits(l, zero)) return b.const_bits(s->type(), 0);
        return nullptr;
      case BinaryOp::logic_and:  // u1 operands: x && 1 == x, x && 0 == 0
        if (is_const_bits(r, 1)) return l;
        if (is_const_bits(l, 1)) return r;
        if (is_const_bits(r, 0) || is_const_bits(l, 0)) return b.const_bits(DataType::u1, 0);
        return nullptr;
      case BinaryOp::logic_or:
        if (is_const_bits(r, 0)) return l;
        if (is_const_bits(l, 0)) return r;
        if (is_const_bits(r, 1) || is_const_bits(l, 1)) return b.const_bits(DataType::u1, 1);
        return nullptr;
      case BinaryOp::mod:  // x % m of an x known in [0, m): a range_for's index wrapped to a node's extent
        return r->is_const() && below(l, r) ? l : nullptr;
      case BinaryOp::min: case BinaryOp::max: case BinaryOp::pow:
      case BinaryOp::atan2: case BinaryOp::cmp_lt: case BinaryOp::cmp_le: case BinaryOp::cmp_gt:
      case BinaryOp::cmp_ge: case BinaryOp::cmp_eq: case BinaryOp::cmp_ne:
        return nullptr;
    }
    return nullptr;
  }

  // Float identities that hold for every input, -0.0, infinities and NaN
  // included: x * 1, x / 1, x + (-0.0), x - (+0.0). (x + 0.0 is not one:
  // -0.0 + 0.0 is +0.0; x * 0 is not one either: inf * 0 is NaN.)
  Stmt* float_identity(BinaryOp op, Stmt* l, Stmt* r) {
    DataType t = l->type();
    const uint64_t one = one_bits(t), neg_zero = double_to_bits(t, -0.0);
    switch (op) {
      case BinaryOp::mul:
        if (is_const_bits(r, one)) return l;
        if (is_const_bits(l, one)) return r;
        return nullptr;
      case BinaryOp::div:
        return is_const_bits(r, one) ? l : nullptr;
      case BinaryOp::add:
        if (is_const_bits(r, neg_zero)) return l;
        if (is_const_bits(l, neg_zero)) return r;
        return nullptr;
      case BinaryOp::sub:
        return is_const_bits(r, 0) ? l : nullptr;
      default:
        return nullptr;
    }
  }

  Kernel& kernel_;
  bool changed_ = false;
  std::unordered_map<const Stmt*, Stmt*> replaced_;
  // Erased statements stay allocated until the pass ends so that no new
  // statement can reuse an address that is still a key of `replaced_`.
  std::vector<std::unique_ptr<Stmt>> dead_;
};

}  // namespace

bool constant_fold(Kernel& kernel) {
  GROVE_ASSERT(kernel.stage != Stage::frontend,
               "constant_fold needs a typed kernel; '" + kernel.name() + "' is not");
  return Folder(kernel).run();
}

}  // namespace grove::ir
