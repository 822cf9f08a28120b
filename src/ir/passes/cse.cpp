// src/ir/passes/cse.cpp — common-subexpression elimination over the block tree.
//
// One forward walk keeps the pure statements available at the current point
// in a hash map from a statement's key (kind, type, attributes, operands) to
// the first statement with that key. A nested block sees its enclosing
// blocks' entries; the entries it adds are dropped when it ends, so sibling
// blocks (then/else, two loops) never share results. A statement whose key is
// available is erased and its uses redirected through `replaced_` (every use
// follows its definition in program order, so remapping each statement's
// operands when it is visited is enough).
//
// Commutative operations are matched regardless of operand order (`a + b`
// and `b + a` are one expression) where that is exact: add, mul, min, max and
// the bit ops on integers; logic_and, logic_or, cmp_eq, cmp_ne on any type.
// Float add/mul are left alone (which NaN payload survives depends on the
// order) and so are float min/max (min(-0.0, +0.0) depends on the order).
// The order is only part of the key: the kept statement is printed unchanged.
#include "ir/passes/cse.h"

#include <algorithm>
#include <array>
#include <functional>
#include <unordered_map>
#include <vector>

#include "ir/assert.h"
#include "ir/stmt_map.h"

namespace grove::ir {

namespace {

// Pure statements have at most three operands (select), kept in the key
// itself: a key allocates nothing.
struct Key {
  StmtKind kind;
  DataType type;
  uint8_t op;
  uint8_t size;  // operands used
  int index;
  uint64_t bits;
  std::array<const Stmt*, 3> operands;

  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<uint64_t>()(k.bits);
    auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    mix(static_cast<size_t>(k.kind));
    mix(static_cast<size_t>(k.type));
    mix(k.op);
    mix(static_cast<size_t>(k.index));
    for (size_t i = 0; i < k.size; ++i) mix(std::hash<const Stmt*>()(k.operands[i]));
    return h;
  }
};

bool is_commutative(BinaryOp op, DataType operand_type) {
  switch (op) {
    case BinaryOp::logic_and: case BinaryOp::logic_or: case BinaryOp::cmp_eq:
    case BinaryOp::cmp_ne:
      return true;
    case BinaryOp::add: case BinaryOp::mul: case BinaryOp::min: case BinaryOp::max:
    case BinaryOp::bit_and: case BinaryOp::bit_or: case BinaryOp::bit_xor:
      return is_integral(operand_type);
    default:
      return false;
  }
}

// The key of a pure statement, or false for one that is never merged.
bool make_key(const Stmt* s, Key* key) {
  key->kind = s->kind();
  key->type = s->type();
  key->op = 0;
  key->index = 0;
  key->bits = 0;
  key->operands = {};
  if (s->operands().size() > key->operands.size()) return false;  // never a pure statement
  key->size = static_cast<uint8_t>(s->operands().size());
  std::copy(s->operands().begin(), s->operands().end(), key->operands.begin());
  switch (s->kind()) {
    case StmtKind::Const:
      key->bits = s->bits();
      return true;
    case StmtKind::Arg: case StmtKind::LoopIndex:
      key->index = s->index();
      return true;
    case StmtKind::Unary:
      key->op = static_cast<uint8_t>(s->unary_op());
      return true;
    case StmtKind::Binary:
      key->op = static_cast<uint8_t>(s->binary_op());
      if (is_commutative(s->binary_op(), s->lhs()->type()) &&
          std::less<const Stmt*>()(key->operands[1], key->operands[0]))
        std::swap(key->operands[0], key->operands[1]);
      return true;
    case StmtKind::Cast: case StmtKind::Bitcast: case StmtKind::Select: case StmtKind::MessageBase:
      return true;
    case StmtKind::Alloca: case StmtKind::LocalLoad: case StmtKind::LocalStore:
    case StmtKind::FieldLoad: case StmtKind::FieldStore: case StmtKind::FieldAtomic:
    case StmtKind::RangeFor: case StmtKind::StructFor: case StmtKind::If: case StmtKind::While:
    case StmtKind::Break: case StmtKind::Continue: case StmtKind::Print: case StmtKind::Assert:
    // SNode operations and tree memory read or change state that other
    // statements (and other threads) change; a task is a block like any other.
    case StmtKind::SNodeOp: case StmtKind::TreeLoad: case StmtKind::TreeStore:
    case StmtKind::TreeAtomic: case StmtKind::TreeCas: case StmtKind::Task: case StmtKind::Stop:
    // Subgroup operations depend on which invocations reach them.
    case StmtKind::SubgroupFirst: case StmtKind::SubgroupElect:
      return false;
  }
  return false;
}

class Cse {
 public:
  bool run(Block* body) {
    visit_block(body);
    return changed_;
  }

 private:
  void visit_block(Block* block) {
    std::vector<Key> added;  // entries this block makes available
    size_t i = 0;
    while (i < block->size()) {
      Stmt* s = block->at(i);
      for (size_t k = 0; k < s->operands().size(); ++k) {
        if (Stmt* const* to = replaced_.find(s->operands()[k])) s->set_operand(k, *to);
      }
      Key key;
      if (make_key(s, &key)) {
        auto [it, inserted] = available_.try_emplace(key, s);
        if (!inserted) {
          replaced_[s] = it->second;
          dead_.push_back(block->take(i));
          changed_ = true;
          continue;
        }
        added.push_back(std::move(key));
      }
      for (const auto& inner : s->blocks()) visit_block(inner.get());
      ++i;
    }
    for (const Key& k : added) available_.erase(k);
  }

  bool changed_ = false;
  std::unordered_map<Key, Stmt*, KeyHash> available_;
  StmtMap<Stmt*> replaced_;
  // Erased statements stay allocated until the pass ends (their addresses are
  // keys of `replaced_`), though this pass creates no statements.
  std::vector<std::unique_ptr<Stmt>> dead_;
};

}  // namespace

bool eliminate_common_subexpressions(Kernel& kernel) { return Cse().run(kernel.body()); }

}  // namespace grove::ir
