// src/ir/passes/legalize_emit.h — the statement maker legalize's lowerings
// share (legalize.cpp; legalize_math.cpp, the math functions a target lacks).
// Internal to the pass.
#pragma once

#include <cstdint>

#include "ir/builder.h"
#include "ir/passes/legalize.h"
#include "ir/type_rules.h"

namespace grove::ir::legalize_detail {

// Primitive statements inserted before the statement being lowered.
class Emit {
 public:
  explicit Emit(Builder& b) : b_(b) {}
  Builder& builder() { return b_; }

  Stmt* bits(DataType t, uint64_t v) { return b_.const_bits(t, v); }
  Stmt* num(DataType t, double v) { return is_float(t) ? b_.const_float(t, v) : b_.const_int(t, static_cast<int64_t>(v)); }
  Stmt* zero(DataType t) { return t == DataType::u1 ? b_.const_int(t, 0) : num(t, 0); }
  Stmt* one(DataType t) { return num(t, 1); }

  Stmt* bin(BinaryOp op, Stmt* a, Stmt* b) {
    return b_.binary_typed(op, binary_result_type(op, a->type(), b->type()), a, b);
  }
  Stmt* un(UnaryOp op, Stmt* x) { return b_.unary_typed(op, x->type(), x); }
  Stmt* sel(Stmt* c, Stmt* a, Stmt* b) { return b_.select_typed(a->type(), c, a, b); }
  Stmt* cast(DataType t, Stmt* x) { return x->type() == t ? x : b_.cast(t, x); }
  Stmt* bitcast(DataType t, Stmt* x) { return x->type() == t ? x : b_.bitcast(t, x); }

  Stmt* add(Stmt* a, Stmt* b) { return bin(BinaryOp::add, a, b); }
  Stmt* sub(Stmt* a, Stmt* b) { return bin(BinaryOp::sub, a, b); }
  Stmt* mul(Stmt* a, Stmt* b) { return bin(BinaryOp::mul, a, b); }
  Stmt* div(Stmt* a, Stmt* b) { return bin(BinaryOp::div, a, b); }
  Stmt* band(Stmt* a, Stmt* b) { return bin(BinaryOp::bit_and, a, b); }
  Stmt* bor(Stmt* a, Stmt* b) { return bin(BinaryOp::bit_or, a, b); }
  Stmt* shl(Stmt* a, int n) { return bin(BinaryOp::shl, a, num(a->type(), n)); }
  Stmt* shr(Stmt* a, int n) { return bin(BinaryOp::shr, a, num(a->type(), n)); }
  // With a constant operand (made first, so that statements come in one order).
  Stmt* band_k(Stmt* a, uint64_t mask) { return band(a, bits(a->type(), mask)); }
  Stmt* bor_k(Stmt* a, uint64_t v) { return bor(a, bits(a->type(), v)); }
  Stmt* add_k(Stmt* a, uint64_t v) { return add(a, bits(a->type(), v)); }
  Stmt* eq_k(Stmt* a, uint64_t v) { return eq(a, bits(a->type(), v)); }
  Stmt* ne_k(Stmt* a, uint64_t v) { return ne(a, bits(a->type(), v)); }
  Stmt* lt(Stmt* a, Stmt* b) { return bin(BinaryOp::cmp_lt, a, b); }
  Stmt* le(Stmt* a, Stmt* b) { return bin(BinaryOp::cmp_le, a, b); }
  Stmt* ge(Stmt* a, Stmt* b) { return bin(BinaryOp::cmp_ge, a, b); }
  Stmt* eq(Stmt* a, Stmt* b) { return bin(BinaryOp::cmp_eq, a, b); }
  Stmt* ne(Stmt* a, Stmt* b) { return bin(BinaryOp::cmp_ne, a, b); }
  Stmt* land(Stmt* a, Stmt* b) { return bin(BinaryOp::logic_and, a, b); }
  Stmt* lor(Stmt* a, Stmt* b) { return bin(BinaryOp::logic_or, a, b); }
  Stmt* lnot(Stmt* a) { return b_.unary_typed(UnaryOp::logic_not, DataType::u1, a); }
  Stmt* is_nan(Stmt* x) { return ne(x, x); }  // cmp_ne is unordered: true for NaN only
  // Whether float x has its sign bit set: f32 by its bits; f64 without
  // 64-bit integers (a device may have f64 and no Int64), by comparisons
  // (-0 by 1 / -0 < 0; a NaN's sign is unspecified, docs/ir.md).
  Stmt* is_negative(Stmt* x) {
    const DataType f = x->type();
    if (f == DataType::f32) return ne(shr(bitcast(DataType::u32, x), 31), bits(DataType::u32, 0));
    Stmt* zero = num(f, 0.0);
    return lor(lt(x, zero), land(eq(x, zero), lt(div(num(f, 1.0), x), zero)));
  }
  // |magnitude| with the sign bit of `sign` (f32 or f64).
  Stmt* copysign(Stmt* magnitude, Stmt* sign) {
    const DataType f = magnitude->type();
    if (f == DataType::f64) {
      Stmt* m = un(UnaryOp::abs, magnitude);
      return sel(is_negative(sign), un(UnaryOp::neg, m), m);
    }
    const DataType u = DataType::u32;
    const uint64_t sign_bit = uint64_t{1} << 31;
    Stmt* m = bitcast(u, magnitude);
    m = band(m, bits(u, sign_bit - 1));
    Stmt* s = bitcast(u, sign);
    s = band(s, bits(u, sign_bit));
    return bitcast(f, bor(m, s));
  }
  // Truncation toward zero from floor and ceil (drivers' Trunc has been
  // seen wrong for large f64 values; floor and ceil were right).
  Stmt* trunc(Stmt* x) {
    Stmt* negative = lt(x, zero(x->type()));
    Stmt* up = un(UnaryOp::ceil, x);
    return sel(negative, up, un(UnaryOp::floor, x));
  }

 private:
  Builder& b_;
};

// The math functions `target` lacks, in primitives (legalize_math.cpp):
// `op` of `x` (exp, log, sin, cos, tan, asin, acos, atan, tanh), or nullptr
// where the target computes it itself.
Stmt* math_unary(Emit& e, UnaryOp op, Stmt* x, const TargetOps& target);
// atan2(y, x), or nullptr.
Stmt* math_atan2(Emit& e, Stmt* y, Stmt* x, const TargetOps& target);
// pow(x, y) of a positive finite f64 base where the target has no f64 pow:
// exp(y log x) with f64's range; nullptr where it has one.
Stmt* math_pow_core(Emit& e, Stmt* x, Stmt* y, const TargetOps& target);

}  // namespace grove::ir::legalize_detail
