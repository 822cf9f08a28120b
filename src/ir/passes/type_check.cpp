// src/ir/passes/type_check.cpp — frontend -> typed: result types, implicit casts, type errors.
//
// One forward walk. For each statement the operands are first brought to the
// type the statement computes in (a `cast` inserted just before it, or
// `binary cmp_ne u1 x 0` where a u1 truth value is needed), then its result
// type is set from type_rules.h. Statements are visited in program order, so
// every operand already has its final type when its user is visited.
#include "ir/passes/type_check.h"

#include <string>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/builder.h"
#include "ir/type_rules.h"

namespace grove::ir {

namespace {

std::string tname(DataType t) { return std::string(type_name(t)); }

class TypeChecker {
 public:
  explicit TypeChecker(Kernel& kernel) : kernel_(kernel) {}

  void run() { check_block(kernel_.body()); }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("kernel '" + kernel_.name() + "': " + what);
  }

  const std::string& field_name(const Stmt* s) const { return kernel_.fields().get(s->field()).name; }

  // The value of `s`'s operand slot `slot`, which must be a typed value.
  Stmt* value_operand(const Stmt* s, size_t slot) const {
    Stmt* v = s->operands()[slot];
    GROVE_ASSERT(v->has_result() && v->type() != DataType::unknown,
                 std::string("operand ") + std::to_string(slot) + " of '" + kind_name(s->kind()) +
                     "' in kernel '" + kernel_.name() + "' is not a typed value");
    return v;
  }

  // Makes operand slot `slot` of `s` have type `t`, inserting a cast before `s`.
  void coerce(Builder& b, Stmt* s, size_t slot, DataType t) {
    Stmt* v = value_operand(s, slot);
    if (v->type() != t) s->set_operand(slot, b.cast(t, v));
  }

  // Makes operand slot `slot` of `s` a u1 truth value: `x != 0` unless it is one already.
  void to_condition(Builder& b, Stmt* s, size_t slot) {
    Stmt* v = value_operand(s, slot);
    if (v->type() == DataType::u1) return;
    Stmt* zero = b.const_bits(v->type(), 0);
    s->set_operand(slot, b.binary_typed(BinaryOp::cmp_ne, DataType::u1, v, zero));
  }

  // Field indices and loop bounds: integers, computed as i32.
  void to_index(Builder& b, Stmt* s, size_t slot, const std::string& what) {
    DataType t = value_operand(s, slot)->type();
    if (is_float(t))
      fail(what + " is " + tname(t) + ", but it must be an integer; cast it with cast(i32, ...)");
    coerce(b, s, slot, DataType::i32);
  }

  void field_indices(Builder& b, Stmt* s) {
    size_t n = s->indices().size();
    for (size_t i = 0; i < n; ++i) {
      to_index(b, s, i,
               "index " + std::to_string(i) + " of field '" + field_name(s) + "' (in " +
                   kind_name(s->kind()) + ")");
    }
  }

  void check_block(Block* block) {
    size_t i = 0;
    while (i < block->size()) {
      Stmt* s = block->at(i);
      Builder b(block, i);  // casts go right before s
      check(b, s);
      for (const auto& inner : s->blocks()) check_block(inner.get());
      i = b.position() + 1;  // b.position() is where s now sits
    }
  }

  void check(Builder& b, Stmt* s) {
    switch (s->kind()) {
      case StmtKind::Const:
        GROVE_ASSERT(s->type() != DataType::unknown && s->type() != DataType::f16,
                     "a constant of type " + tname(s->type()));
        return;
      case StmtKind::Arg:
      case StmtKind::Alloca:
        s->set_type(compute_type(s->type()));
        return;
      case StmtKind::Cast:
        value_operand(s, 0);
        s->set_type(compute_type(s->type()));
        return;
      case StmtKind::Bitcast:  // made by legalize, after type checking
        value_operand(s, 0);
        return;
      case StmtKind::Unary:
        return unary(b, s);
      case StmtKind::Binary:
        return binary(b, s);
      case StmtKind::Select: {
        to_condition(b, s, 0);
        DataType t = promote(value_operand(s, 1)->type(), value_operand(s, 2)->type());
        coerce(b, s, 1, t);
        coerce(b, s, 2, t);
        s->set_type(t);
        return;
      }
      case StmtKind::LocalLoad:
        s->set_type(s->ptr()->type());
        return;
      case StmtKind::LocalStore:
        coerce(b, s, 1, s->ptr()->type());
        return;
      case StmtKind::FieldLoad:
        field_indices(b, s);
        s->set_type(compute_type(kernel_.fields().get(s->field()).dtype));
        return;
      case StmtKind::FieldStore:
        field_indices(b, s);
        coerce(b, s, s->operands().size() - 1, compute_type(kernel_.fields().get(s->field()).dtype));
        return;
      case StmtKind::FieldAtomic:
        return atomic(b, s);
      case StmtKind::RangeFor:
        to_index(b, s, 0, "the begin bound of a range_for");
        to_index(b, s, 1, "the end bound of a range_for");
        return;
      case StmtKind::LoopIndex:
        s->set_type(DataType::i32);
        return;
      case StmtKind::If:
        to_condition(b, s, 0);
        return;
      case StmtKind::Print:
        for (size_t k = 0; k < s->operands().size(); ++k) value_operand(s, k);
        return;
      case StmtKind::Assert:
        to_condition(b, s, 0);
        for (size_t k = 1; k < s->operands().size(); ++k) value_operand(s, k);
        return;
      case StmtKind::SNodeOp:
        return snode_op(b, s);
      case StmtKind::StructFor:
      case StmtKind::While:
      case StmtKind::Break:
      case StmtKind::Continue:
        return;
      case StmtKind::Stop:
      case StmtKind::MessageBase:
      case StmtKind::TreeLoad:
      case StmtKind::TreeStore:
      case StmtKind::TreeAtomic:
      case StmtKind::TreeCas:
      case StmtKind::Task:
      case StmtKind::SubgroupFirst:
      case StmtKind::SubgroupElect:
        GROVE_ASSERT(false, std::string("a '") + kind_name(s->kind()) + "' in kernel '" +
                                kernel_.name() + "' at the frontend stage (made only by lowering)");
        return;
    }
  }

  // SNode indices are i32 like field indices; append's value is left as is
  // (the field it goes to is decided by lowering).
  void snode_op(Builder& b, Stmt* s) {
    size_t n = s->indices().size();
    for (size_t i = 0; i < n; ++i) {
      to_index(b, s, i,
               "index " + std::to_string(i) + " of SNode " + std::to_string(s->snode()) + " (in snode_op " +
                   op_name(s->snode_op()) + ")");
    }
    switch (s->snode_op()) {
      case SNodeOpKind::is_active:
        s->set_type(DataType::u1);
        return;
      case SNodeOpKind::append:
        for (size_t v = n; v < s->operands().size(); ++v) value_operand(s, v);
        s->set_type(DataType::i32);
        return;
      case SNodeOpKind::length:
        s->set_type(DataType::i32);
        return;
      case SNodeOpKind::activate:
      case SNodeOpKind::deactivate:
        return;
    }
  }

  void unary(Builder& b, Stmt* s) {
    UnaryOp op = s->unary_op();
    DataType x = value_operand(s, 0)->type();
    if (needs_integers(op) && is_float(x)) {
      fail(std::string(op_name(op)) + " needs an integer operand but got " + tname(x) +
           "; cast the operand with cast(i32, ...)");
    }
    if (op == UnaryOp::logic_not) {
      to_condition(b, s, 0);
    } else {
      coerce(b, s, 0, unary_type(op, x));
    }
    s->set_type(unary_type(op, x));
  }

  void binary(Builder& b, Stmt* s) {
    BinaryOp op = s->binary_op();
    DataType l = value_operand(s, 0)->type();
    DataType r = value_operand(s, 1)->type();
    if (needs_integers(op) && (is_float(l) || is_float(r))) {
      fail(std::string(op_name(op)) + " needs integer operands but got " + tname(l) + " and " +
           tname(r) + "; cast the operands with cast(i32, ...)");
    }
    if (is_logical(op)) {
      to_condition(b, s, 0);
      to_condition(b, s, 1);
    } else {
      DataType t = binary_operand_type(op, l, r);
      coerce(b, s, 0, t);
      coerce(b, s, 1, t);
    }
    s->set_type(binary_result_type(op, l, r));
  }

  void atomic(Builder& b, Stmt* s) {
    AtomicOp op = s->atomic_op();
    const FieldDecl& f = kernel_.fields().get(s->field());
    if (needs_integers(op) && is_float(f.dtype)) {
      fail(std::string("atomic ") + op_name(op) + " on field '" + f.name +
           "' needs an integer field but the field is " + tname(f.dtype) +
           "; use an integer field, or atomic add/sub/min/max");
    }
    field_indices(b, s);
    DataType t = compute_type(f.dtype);
    coerce(b, s, s->operands().size() - 1, t);
    s->set_type(t);
  }

  Kernel& kernel_;
};

}  // namespace

void type_check(Kernel& kernel) {
  TypeChecker(kernel).run();
  kernel.stage = Stage::typed;
}

}  // namespace grove::ir
