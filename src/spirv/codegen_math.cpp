// src/spirv/codegen_math.cpp — std::fmod written out in SPIR-V: OpFRem is
// x - y * trunc(x / y) on some drivers, which is inexact and gets the
// special cases wrong. (The math functions a device computes imprecisely
// are legalize's: src/ir/passes/legalize_math.cpp.)
#include <limits>

#include "spirv/codegen_internal.h"

namespace grove::spirv::detail {

using spv::Op;

// std::fmod, exactly, by long division of the mantissas (the algorithm of
// musl's fmodf/fmod): OpFRem is x - y * trunc(x / y) on some drivers, which
// is inexact and gets the special cases wrong.
Id TaskEmitter::float_mod(Id x, Id y, DataType t) {
  const bool wide = t == DataType::f64;
  const DataType it = wide ? DataType::u64 : DataType::u32;
  const uint64_t mantissa_bits = wide ? 52 : 23, exp_mask = wide ? 0x7ff : 0xff;
  const uint64_t sign_bit = uint64_t{1} << (wide ? 63 : 31);
  const uint64_t implicit = uint64_t{1} << mantissa_bits, frac_mask = implicit - 1;
  const Id ity = type_of(it);
  auto c = [&](uint64_t v) { return constant(it, v); };
  auto b = [&](Op op, Id l, Id r) { return op2(op, l, r); };
  auto cmp = [&](Op op, Id l, Id r) { return m_.compare(op, l, r); };
  auto msb = [&](Id v) {  // index of the highest set bit (as `it`); v != 0
    if (!wide) return m_.ext_inst(ity, GLSLstd450FindUMsb, {v});
    Id hi = m_.convert(Op::OpUConvert, u32_type(), b(Op::OpShiftRightLogical, v, c(32)));
    Id lo = m_.convert(Op::OpUConvert, u32_type(), v);
    Id r = m_.select(m_.compare(Op::OpINotEqual, hi, u32c(0)),
                     op2(Op::OpIAdd, m_.ext_inst(u32_type(), GLSLstd450FindUMsb, {hi}), u32c(32)),
                     m_.ext_inst(u32_type(), GLSLstd450FindUMsb, {lo}));
    return m_.convert(Op::OpUConvert, ity, r);
  };
  const Id ux = m_.convert(Op::OpBitcast, ity, x), uy = m_.convert(Op::OpBitcast, ity, y);
  const Id ex = b(Op::OpBitwiseAnd, b(Op::OpShiftRightLogical, ux, c(mantissa_bits)), c(exp_mask));
  const Id ey = b(Op::OpBitwiseAnd, b(Op::OpShiftRightLogical, uy, c(mantissa_bits)), c(exp_mask));
  const Id sx = b(Op::OpBitwiseAnd, ux, c(sign_bit));
  const Id ax = b(Op::OpShiftLeftLogical, ux, c(1)), ay = b(Op::OpShiftLeftLogical, uy, c(1));
  const Id nan = op2(Op::OpLogicalOr, op2(Op::OpLogicalOr, cmp(Op::OpIEqual, ay, c(0)), m_.emit(Op::OpIsNan, m_.type_bool(), {y})),
                     cmp(Op::OpIEqual, ex, c(exp_mask)));
  const Id small = cmp(Op::OpULessThanEqual, ax, ay);  // |x| <= |y|
  const Id equal = cmp(Op::OpIEqual, ax, ay);
  // Mantissas with the implicit bit, subnormals normalised (exponent below 1).
  auto normalise = [&](Id u, Id e, Id* mant, Id* exp) {
    Id frac = b(Op::OpBitwiseAnd, u, c(frac_mask));
    Id sub = cmp(Op::OpIEqual, e, c(0));
    Id top = msb(b(Op::OpBitwiseOr, frac, c(1)));
    Id shift = b(Op::OpISub, c(mantissa_bits), top);
    *mant = m_.select(sub, b(Op::OpShiftLeftLogical, frac, shift), b(Op::OpBitwiseOr, frac, c(implicit)));
    *exp = m_.select(sub, b(Op::OpISub, c(1), shift), e);
  };
  Id mx, nx, my, ny;
  normalise(ux, ex, &mx, &nx);
  normalise(uy, ey, &my, &ny);
  const Id skip = op2(Op::OpLogicalOr, nan, small);
  const Id m_var = m_.local_variable(ity), e_var = m_.local_variable(ity), zero_var = m_.local_variable(m_.type_bool());
  m_.store(m_var, mx);
  m_.store(e_var, nx);
  m_.store(zero_var, m_.constant_bool(false));
  // One subtract-and-shift step: m = m - my if that is not negative (0: exact).
  auto step = [&]() {
    Id mv = m_.load(m_var);
    Id diff = b(Op::OpISub, mv, my);
    Id fits = cmp(Op::OpUGreaterThanEqual, mv, my);
    m_.store(zero_var, op2(Op::OpLogicalOr, m_.load(zero_var), op2(Op::OpLogicalAnd, fits, cmp(Op::OpIEqual, diff, c(0)))));
    return m_.select(fits, diff, mv);
  };
  const Id header = m_.new_label(), body = m_.new_label(), cont = m_.new_label(), merge = m_.new_label();
  m_.branch(header);
  m_.begin_block(header);
  const Id more = op2(Op::OpLogicalAnd,
                      op2(Op::OpLogicalAnd, logical_not(skip), logical_not(m_.load(zero_var))),
                      cmp(Op::OpSGreaterThan, m_.load(e_var), ny));
  m_.loop_merge(merge, cont);
  m_.branch_conditional(more, body, merge);
  m_.begin_block(body);
  m_.store(m_var, b(Op::OpShiftLeftLogical, step(), c(1)));
  m_.store(e_var, b(Op::OpISub, m_.load(e_var), c(1)));
  m_.branch(cont);
  m_.begin_block(cont);
  loop_back_edge(header, merge);
  m_.begin_block(merge);
  after_loop();
  Id mv = step();
  const Id zero = m_.load(zero_var);
  // Renormalise so the implicit bit is set again, then rebuild the float.
  Id shift = b(Op::OpISub, c(mantissa_bits), msb(b(Op::OpBitwiseOr, mv, c(1))));
  mv = b(Op::OpShiftLeftLogical, mv, shift);
  Id e = b(Op::OpISub, m_.load(e_var), shift);
  Id normal = b(Op::OpBitwiseOr, b(Op::OpISub, mv, c(implicit)), b(Op::OpShiftLeftLogical, e, c(mantissa_bits)));
  Id down = b(Op::OpISub, c(1), e);
  down = m_.select(cmp(Op::OpUGreaterThan, down, c(wide ? 63 : 31)), c(wide ? 63 : 31), down);
  Id subnormal = b(Op::OpShiftRightLogical, mv, down);
  Id r = m_.select(cmp(Op::OpSGreaterThan, e, c(0)), normal, subnormal);
  r = m_.select(zero, c(0), r);
  Id result = m_.convert(Op::OpBitcast, type_of(t), b(Op::OpBitwiseOr, r, sx));
  const Id signed_zero = m_.convert(Op::OpBitcast, type_of(t), sx);
  result = m_.select(small, m_.select(equal, signed_zero, x), result);
  const Id qnan = wide ? m_.constant_f64(std::numeric_limits<double>::quiet_NaN())
                       : m_.constant_f32(std::numeric_limits<float>::quiet_NaN());
  return m_.select(nan, qnan, result);
}

}  // namespace grove::spirv::detail
