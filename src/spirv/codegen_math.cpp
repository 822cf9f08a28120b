// src/spirv/codegen_math.cpp — f32 math functions written out in SPIR-V, for
// the GLSL.std.450 ones whose precision varies most between drivers (Vulkan
// allows up to 4096 ulp for atan, and lavapipe's asin, atan, log near 1 and
// tanh near 0 are hundreds of ulp from the host's libm). These follow the
// Cephes single-precision algorithms (1-3 ulp), so every device computes the
// same values, close to the interpreter's. sin, cos and tan too, for
// |x| <= 8192 (NVIDIA's driver 580 on an H200 gave cos(1.75) and tan(1.75)
// about 15 ulp from the host's; lavapipe's were within 2); beyond, and pow
// and sqrt, stay GLSL.std.450.
#include <bit>
#include <limits>

#include "spirv/codegen_internal.h"

namespace grove::spirv::detail {

using spv::Op;

namespace {
constexpr float kPi = 3.14159265358979323846f;
constexpr float kPiO2 = 1.57079632679489661923f;
constexpr float kPiO4 = 0.785398163397448309616f;
}  // namespace

Id TaskEmitter::f32c(float v) { return m_.constant_f32(v); }

Id TaskEmitter::horner(Id x, std::initializer_list<float> coefficients) {
  Id r = 0;
  for (float c : coefficients) r = r == 0 ? f32c(c) : float_op(Op::OpFAdd, float_op(Op::OpFMul, r, x), f32c(c));
  return r;
}

// Whether the sign bit of f32 `x` is set (of -0 and negative NaNs too).
Id TaskEmitter::sign_bit(Id x) {
  return m_.compare(Op::OpINotEqual, op2(Op::OpShiftRightLogical, m_.convert(Op::OpBitcast, u32_type(), x), u32c(31)),
                    u32c(0));
}

// |magnitude| with the sign bit of `sign`.
Id TaskEmitter::with_sign_of(Id magnitude, Id sign) {
  Id u = u32_type();
  Id m = op2(Op::OpBitwiseAnd, m_.convert(Op::OpBitcast, u, magnitude), u32c(0x7fffffffu));
  Id s = op2(Op::OpBitwiseAnd, m_.convert(Op::OpBitcast, u, sign), u32c(0x80000000u));
  return m_.convert(Op::OpBitcast, m_.type_float(32), op2(Op::OpBitwiseOr, m, s));
}

Id TaskEmitter::soft_math(GLSLstd450 op, const std::vector<Id>& args) {
  switch (op) {
    case GLSLstd450Exp: return soft_exp(args[0]);
    case GLSLstd450Log: return soft_log(args[0]);
    case GLSLstd450Atan: return soft_atan(args[0]);
    case GLSLstd450Atan2: return soft_atan2(args[0], args[1]);
    case GLSLstd450Asin: return soft_asin(args[0]);
    case GLSLstd450Acos: return soft_acos(args[0]);
    case GLSLstd450Tanh: return soft_tanh(args[0]);
    case GLSLstd450Sin: return soft_sin_cos(args[0], false);
    case GLSLstd450Cos: return soft_sin_cos(args[0], true);
    case GLSLstd450Tan: return soft_tan(args[0]);
    default: return 0;
  }
}

// Cephes expf: x = n ln2 + r, e^r by a polynomial, times 2^n in two steps.
Id TaskEmitter::soft_exp(Id x) {
  auto mul = [&](Id a, Id b) { return float_op(Op::OpFMul, a, b); };
  auto add = [&](Id a, Id b) { return float_op(Op::OpFAdd, a, b); };
  auto sub = [&](Id a, Id b) { return float_op(Op::OpFSub, a, b); };
  Id f = m_.type_float(32);
  Id xc = m_.ext_inst(f, GLSLstd450FClamp, {x, f32c(-104.0f), f32c(89.0f)});
  Id z = m_.ext_inst(f, GLSLstd450Floor, {add(mul(f32c(1.44269504088896341f), xc), f32c(0.5f))});
  Id r = sub(xc, mul(z, f32c(0.693359375f)));
  r = sub(r, mul(z, f32c(-2.12194440e-4f)));
  Id rr = mul(r, r);
  Id p = horner(r, {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                    5.0000001201e-1f});
  Id y = add(add(mul(p, rr), r), f32c(1.0f));
  Id n = m_.convert(Op::OpConvertFToS, u32_type(), z);
  Id n1 = op2(Op::OpShiftRightArithmetic, n, u32c(1));
  Id n2 = op2(Op::OpISub, n, n1);
  auto pow2 = [&](Id k) {
    return m_.convert(Op::OpBitcast, f, op2(Op::OpShiftLeftLogical, op2(Op::OpIAdd, k, u32c(127)), u32c(23)));
  };
  Id out = mul(mul(y, pow2(n1)), pow2(n2));
  out = m_.select(m_.compare(Op::OpFOrdGreaterThan, x, f32c(88.72283905206835f)),
                  f32c(std::numeric_limits<float>::infinity()), out);
  out = m_.select(m_.compare(Op::OpFOrdLessThan, x, f32c(-103.278929903431851103f)), f32c(0.0f), out);
  return m_.select(m_.emit(Op::OpIsNan, m_.type_bool(), {x}), x, out);
}

// Cephes logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by a polynomial.
Id TaskEmitter::soft_log(Id x) {
  auto mul = [&](Id a, Id b) { return float_op(Op::OpFMul, a, b); };
  auto add = [&](Id a, Id b) { return float_op(Op::OpFAdd, a, b); };
  auto sub = [&](Id a, Id b) { return float_op(Op::OpFSub, a, b); };
  Id f = m_.type_float(32), u = u32_type();
  Id raw = m_.convert(Op::OpBitcast, u, x);
  Id denormal = op2(Op::OpLogicalAnd, m_.compare(Op::OpIEqual, op2(Op::OpBitwiseAnd, raw, u32c(0x7f800000u)), u32c(0)),
                    m_.compare(Op::OpFOrdNotEqual, x, f32c(0.0f)));
  Id xs = m_.select(denormal, mul(x, f32c(8388608.0f)), x);
  Id bits = m_.convert(Op::OpBitcast, u, xs);
  Id e = op2(Op::OpISub, op2(Op::OpBitwiseAnd, op2(Op::OpShiftRightLogical, bits, u32c(23)), u32c(0xffu)), u32c(126));
  e = op2(Op::OpISub, e, m_.select(denormal, u32c(23), u32c(0)));
  Id m = m_.convert(Op::OpBitcast, f, op2(Op::OpBitwiseOr, op2(Op::OpBitwiseAnd, bits, u32c(0x007fffffu)),
                                          u32c(0x3f000000u)));  // [0.5, 1)
  Id small = m_.compare(Op::OpFOrdLessThan, m, f32c(0.70710678118654752440f));
  e = m_.select(small, op2(Op::OpISub, e, u32c(1)), e);
  Id xm = m_.select(small, sub(add(m, m), f32c(1.0f)), sub(m, f32c(1.0f)));
  Id z = mul(xm, xm);
  Id p = horner(xm, {7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f,
                     -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f});
  Id y = mul(mul(p, xm), z);
  Id fe = m_.convert(Op::OpConvertSToF, f, e);
  y = add(y, mul(f32c(-2.12194440e-4f), fe));
  y = add(y, mul(f32c(-0.5f), z));
  Id r = add(add(xm, y), mul(f32c(0.693359375f), fe));
  const float inf = std::numeric_limits<float>::infinity();
  r = m_.select(m_.compare(Op::OpFOrdEqual, x, f32c(inf)), f32c(inf), r);
  r = m_.select(m_.compare(Op::OpFOrdLessThan, x, f32c(0.0f)), f32c(std::numeric_limits<float>::quiet_NaN()), r);
  r = m_.select(m_.compare(Op::OpFOrdEqual, x, f32c(0.0f)), f32c(-inf), r);
  return m_.select(m_.emit(Op::OpIsNan, m_.type_bool(), {x}), x, r);
}

// Cephes's reduction of |x| to [-pi/4, pi/4] for sinf, cosf and tanf: the
// octant j = floor(|x| 4 / pi), made even, and |x| - j pi/4 in three parts
// (exact products for |x| up to 8192, the limit of these functions here).
TaskEmitter::Octant TaskEmitter::reduce_octant(Id a) {
  auto mul = [&](Id p, Id q) { return float_op(Op::OpFMul, p, q); };
  auto sub = [&](Id p, Id q) { return float_op(Op::OpFSub, p, q); };
  Id u = u32_type();
  Id j = m_.convert(Op::OpConvertFToU, u, mul(a, f32c(1.27323954473516f)));
  j = op2(Op::OpIAdd, j, op2(Op::OpBitwiseAnd, j, u32c(1)));
  Id y = m_.convert(Op::OpConvertUToF, m_.type_float(32), j);
  Id z = sub(sub(sub(a, mul(y, f32c(0.78515625f))), mul(y, f32c(2.4187564849853515625e-4f))),
             mul(y, f32c(3.77489497744594108e-8f)));
  return {op2(Op::OpBitwiseAnd, j, u32c(7)), z};
}

// Cephes sinf and cosf: by octant, the sine or the cosine polynomial of
// the reduced argument, and its sign.
Id TaskEmitter::soft_sin_cos(Id x, bool cosine) {
  auto mul = [&](Id a, Id b) { return float_op(Op::OpFMul, a, b); };
  auto add = [&](Id a, Id b) { return float_op(Op::OpFAdd, a, b); };
  Id f = m_.type_float(32);
  Id a = m_.ext_inst(f, GLSLstd450FAbs, {x});
  const Octant o = reduce_octant(a);
  Id zz = mul(o.z, o.z);
  Id sin_poly = add(mul(mul(horner(zz, {-1.9515295891e-4f, 8.3321608736e-3f, -1.6666654611e-1f}), zz), o.z), o.z);
  Id cos_poly = add(float_op(Op::OpFSub, mul(mul(horner(zz, {2.443315711809948e-5f, -1.388731625493765e-3f,
                                                                4.166664568298827e-2f}),
                                                     zz),
                                                 zz),
                                             mul(f32c(0.5f), zz)),
                    f32c(1.0f));
  // Octants 2 and 6 (j is even) take the other function's polynomial.
  Id other = m_.compare(Op::OpIEqual, op2(Op::OpBitwiseAnd, op2(Op::OpIAdd, o.j, u32c(1)), u32c(2)), u32c(2));
  Id r = cosine ? m_.select(other, sin_poly, cos_poly) : m_.select(other, cos_poly, sin_poly);
  // The sign: cosine is even and negative in octants 2 and 4; sine is odd
  // (sin(-0) is -0) and negative in octants 4 and 6.
  Id negative;
  if (cosine) {
    negative = m_.compare(Op::OpIEqual, op2(Op::OpBitwiseAnd, op2(Op::OpIAdd, o.j, u32c(2)), u32c(4)), u32c(4));
  } else {
    Id octant_negative = m_.compare(Op::OpINotEqual, op2(Op::OpBitwiseAnd, o.j, u32c(4)), u32c(0));
    negative = m_.compare(Op::OpLogicalNotEqual, octant_negative, sign_bit(x));
  }
  r = m_.select(negative, m_.unary(Op::OpFNegate, r), r);
  Id near = m_.compare(Op::OpFOrdLessThanEqual, a, f32c(8192.0f));  // false for NaN
  return m_.select(near, r, m_.ext_inst(f, cosine ? GLSLstd450Cos : GLSLstd450Sin, {x}));
}

// Cephes tanf: the tangent polynomial of the reduced argument, or minus
// its reciprocal in octants 2 and 6; odd.
Id TaskEmitter::soft_tan(Id x) {
  auto mul = [&](Id a, Id b) { return float_op(Op::OpFMul, a, b); };
  Id f = m_.type_float(32);
  Id a = m_.ext_inst(f, GLSLstd450FAbs, {x});
  const Octant o = reduce_octant(a);
  Id zz = mul(o.z, o.z);
  Id p = horner(zz, {9.38540185543e-3f, 3.11992232697e-3f, 2.44301354525e-2f, 5.34112807005e-2f, 1.33387994085e-1f,
                     3.33331568548e-1f});
  Id t = m_.select(m_.compare(Op::OpFOrdGreaterThan, a, f32c(1.0e-4f)), float_op(Op::OpFAdd, mul(mul(p, zz), o.z), o.z), o.z);
  Id flip = m_.compare(Op::OpINotEqual, op2(Op::OpBitwiseAnd, o.j, u32c(2)), u32c(0));
  t = m_.select(flip, float_op(Op::OpFDiv, f32c(-1.0f), t), t);
  t = m_.select(sign_bit(x), m_.unary(Op::OpFNegate, t), t);  // tan(-0) is -0
  Id near = m_.compare(Op::OpFOrdLessThanEqual, a, f32c(8192.0f));
  return m_.select(near, t, m_.ext_inst(f, GLSLstd450Tan, {x}));
}

// Cephes atanf: reduce |x| to [0, tan(pi/8)] around 0, pi/4 or pi/2.
Id TaskEmitter::soft_atan(Id x) {
  auto mul = [&](Id a, Id b) { return float_op(Op::OpFMul, a, b); };
  auto add = [&](Id a, Id b) { return float_op(Op::OpFAdd, a, b); };
  auto div = [&](Id a, Id b) { return float_op(Op::OpFDiv, a, b); };
  Id f = m_.type_float(32);
  Id a = m_.ext_inst(f, GLSLstd450FAbs, {x});
  Id big = m_.compare(Op::OpFOrdGreaterThan, a, f32c(2.414213562373095f));
  Id mid = m_.compare(Op::OpFOrdGreaterThan, a, f32c(0.4142135623730950f));
  Id reduced = m_.select(big, div(f32c(-1.0f), a),
                         m_.select(mid, div(float_op(Op::OpFSub, a, f32c(1.0f)), add(a, f32c(1.0f))), a));
  Id base = m_.select(big, f32c(kPiO2), m_.select(mid, f32c(kPiO4), f32c(0.0f)));
  Id z = mul(reduced, reduced);
  Id p = horner(z, {8.05374449538e-2f, -1.38776856032e-1f, 1.99777106478e-1f, -3.33329491539e-1f});
  Id r = add(base, add(mul(mul(p, z), reduced), reduced));
  return with_sign_of(r, x);
}

// atan(y / x) moved to the right quadrant, with std::atan2's signed zeros
// and infinities.
Id TaskEmitter::soft_atan2(Id y, Id x) {
  Id f = m_.type_float(32), u = u32_type();
  Id yb = m_.convert(Op::OpBitcast, u, y), xb = m_.convert(Op::OpBitcast, u, x);
  Id sign_xor = op2(Op::OpBitwiseAnd, op2(Op::OpBitwiseXor, yb, xb), u32c(0x80000000u));
  Id ratio = float_op(Op::OpFDiv, y, x);
  Id both_inf = op2(Op::OpLogicalAnd, m_.emit(Op::OpIsInf, m_.type_bool(), {x}), m_.emit(Op::OpIsInf, m_.type_bool(), {y}));
  ratio = m_.select(both_inf, m_.convert(Op::OpBitcast, f, op2(Op::OpBitwiseOr, sign_xor, u32c(0x3f800000u))), ratio);
  Id both_zero = op2(Op::OpLogicalAnd, m_.compare(Op::OpFOrdEqual, x, f32c(0.0f)),
                     m_.compare(Op::OpFOrdEqual, y, f32c(0.0f)));
  ratio = m_.select(both_zero, m_.convert(Op::OpBitcast, f, sign_xor), ratio);
  Id z = soft_atan(ratio);
  Id x_negative = sign_bit(x);
  Id shifted = float_op(Op::OpFAdd, with_sign_of(f32c(kPi), y), z);
  return m_.select(x_negative, shifted, z);
}

// Cephes asinf: near +-1 through asin(x) = pi/2 - 2 asin(sqrt((1 - x) / 2)).
Id TaskEmitter::soft_asin(Id x) {
  auto mul = [&](Id a, Id b) { return float_op(Op::OpFMul, a, b); };
  auto add = [&](Id a, Id b) { return float_op(Op::OpFAdd, a, b); };
  Id f = m_.type_float(32);
  Id a = m_.ext_inst(f, GLSLstd450FAbs, {x});
  Id large = m_.compare(Op::OpFOrdGreaterThan, a, f32c(0.5f));
  Id z_large = mul(f32c(0.5f), float_op(Op::OpFSub, f32c(1.0f), a));
  Id xx = m_.select(large, m_.ext_inst(f, GLSLstd450Sqrt, {z_large}), a);
  Id z = m_.select(large, z_large, mul(a, a));
  Id p = horner(z, {4.2163199048e-2f, 2.4181311049e-2f, 4.5470025998e-2f, 7.4953002686e-2f, 1.6666752422e-1f});
  Id r = add(mul(mul(p, z), xx), xx);
  r = m_.select(large, float_op(Op::OpFSub, f32c(kPiO2), add(r, r)), r);
  r = m_.select(m_.compare(Op::OpFOrdLessThan, a, f32c(1.0e-4f)), a, r);
  r = m_.select(m_.compare(Op::OpFOrdGreaterThan, a, f32c(1.0f)), f32c(std::numeric_limits<float>::quiet_NaN()), r);
  r = m_.select(m_.emit(Op::OpIsNan, m_.type_bool(), {x}), x, r);
  return with_sign_of(r, x);
}

// Cephes acosf, through asin of the half angle away from 0.
Id TaskEmitter::soft_acos(Id x) {
  auto mul = [&](Id a, Id b) { return float_op(Op::OpFMul, a, b); };
  auto sub = [&](Id a, Id b) { return float_op(Op::OpFSub, a, b); };
  Id f = m_.type_float(32);
  Id negative = m_.compare(Op::OpFOrdLessThan, x, f32c(-0.5f));
  Id positive = m_.compare(Op::OpFOrdGreaterThan, x, f32c(0.5f));
  Id half = m_.ext_inst(f, GLSLstd450Sqrt,
                        {mul(f32c(0.5f), float_op(Op::OpFAdd, f32c(1.0f), m_.select(negative, x, m_.unary(Op::OpFNegate, x))))});
  Id s = soft_asin(m_.select(op2(Op::OpLogicalOr, negative, positive), half, x));
  Id twice = float_op(Op::OpFAdd, s, s);
  Id r = m_.select(negative, sub(f32c(kPi), twice), m_.select(positive, twice, sub(f32c(kPiO2), s)));
  return m_.select(m_.emit(Op::OpIsNan, m_.type_bool(), {x}), x, r);
}

// Cephes tanhf: a polynomial below 0.625, else 1 - 2 / (e^{2|x|} + 1).
Id TaskEmitter::soft_tanh(Id x) {
  auto mul = [&](Id a, Id b) { return float_op(Op::OpFMul, a, b); };
  Id f = m_.type_float(32);
  Id a = m_.ext_inst(f, GLSLstd450FAbs, {x});
  Id s = soft_exp(float_op(Op::OpFAdd, a, a));
  Id far = float_op(Op::OpFSub, f32c(1.0f), float_op(Op::OpFDiv, f32c(2.0f), float_op(Op::OpFAdd, s, f32c(1.0f))));
  Id sq = mul(x, x);
  Id p = horner(sq, {-5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f,
                     -3.33332819422e-1f});
  Id near = with_sign_of(float_op(Op::OpFAdd, mul(mul(p, sq), x), x), x);  // tanh(-0) = -0
  return m_.select(m_.compare(Op::OpFOrdGreaterThanEqual, a, f32c(0.625f)), with_sign_of(far, x), near);
}

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

// f64 exp: e^x = 2^k e^r with r = x - k ln2 in f64 (|r| <= ln2 / 2), e^r in f32.
Id TaskEmitter::f64_exp(Id x) {
  Id d = m_.type_float(64);
  auto fc = [&](double v) { return m_.constant_f64(v); };
  Id xc = m_.ext_inst(d, GLSLstd450FClamp, {x, fc(-760.0), fc(720.0)});
  Id k = m_.ext_inst(d, GLSLstd450Floor, {float_op(Op::OpFAdd, float_op(Op::OpFMul, xc, fc(1.4426950408889634)), fc(0.5))});
  Id r = float_op(Op::OpFSub, xc, float_op(Op::OpFMul, k, fc(6.93147180369123816490e-01)));
  r = float_op(Op::OpFSub, r, float_op(Op::OpFMul, k, fc(1.90821492927058770002e-10)));
  Id e = m_.convert(Op::OpFConvert, d, soft_exp(m_.convert(Op::OpFConvert, m_.type_float(32), r)));
  Id n = m_.convert(Op::OpConvertFToS, u32_type(), k);
  // Two steps, so that 2^n stays representable while the product underflows gradually.
  Id n1 = op2(Op::OpShiftRightArithmetic, n, u32c(1));
  Id out = m_.ext_inst(d, GLSLstd450Ldexp, {m_.ext_inst(d, GLSLstd450Ldexp, {e, n1}), op2(Op::OpISub, n, n1)});
  out = m_.select(m_.compare(Op::OpFOrdGreaterThan, x, fc(709.782712893384)), fc(std::numeric_limits<double>::infinity()), out);
  out = m_.select(m_.compare(Op::OpFOrdLessThan, x, fc(-745.2)), fc(0.0), out);
  return m_.select(m_.emit(Op::OpIsNan, m_.type_bool(), {x}), x, out);
}

// f64 log: x = m 2^e (Frexp), log m in f32 around sqrt(1/2)..sqrt(2), e ln2 in f64.
Id TaskEmitter::f64_log(Id x) {
  Id d = m_.type_float(64);
  auto fc = [&](double v) { return m_.constant_f64(v); };
  // Subnormals are scaled into the normal range first (Frexp may flush them).
  Id subnormal = m_.compare(Op::OpFOrdLessThan, m_.ext_inst(d, GLSLstd450FAbs, {x}), fc(2.2250738585072014e-308));
  Id xs = m_.select(subnormal, float_op(Op::OpFMul, x, fc(18014398509481984.0)), x);  // 2^54
  Id exp_var = m_.local_variable(u32_type());
  Id m = m_.ext_inst(d, GLSLstd450Frexp, {xs, exp_var});  // [0.5, 1)
  Id e = op2(Op::OpISub, m_.load(exp_var), m_.select(subnormal, u32c(54), u32c(0)));
  Id small = m_.compare(Op::OpFOrdLessThan, m, fc(0.70710678118654752440));
  m = m_.select(small, float_op(Op::OpFAdd, m, m), m);
  e = m_.select(small, op2(Op::OpISub, e, u32c(1)), e);
  Id lm = m_.convert(Op::OpFConvert, d, soft_log(m_.convert(Op::OpFConvert, m_.type_float(32), m)));
  Id fe = m_.convert(Op::OpConvertSToF, d, e);
  Id r = float_op(Op::OpFAdd, float_op(Op::OpFMul, fe, fc(6.93147180369123816490e-01)),
                  float_op(Op::OpFAdd, lm, float_op(Op::OpFMul, fe, fc(1.90821492927058770002e-10))));
  const double inf = std::numeric_limits<double>::infinity();
  r = m_.select(m_.compare(Op::OpFOrdEqual, x, fc(inf)), fc(inf), r);
  r = m_.select(m_.compare(Op::OpFOrdLessThan, x, fc(0.0)), fc(std::numeric_limits<double>::quiet_NaN()), r);
  r = m_.select(m_.compare(Op::OpFOrdEqual, x, fc(0.0)), fc(-inf), r);
  return m_.select(m_.emit(Op::OpIsNan, m_.type_bool(), {x}), x, r);
}

// f64 atan2: both arguments scaled by the same power of two into f32's range.
Id TaskEmitter::f64_atan2(Id y, Id x) {
  Id d = m_.type_float(64), f = m_.type_float(32);
  Id big = m_.ext_inst(d, GLSLstd450FMax, {m_.ext_inst(d, GLSLstd450FAbs, {x}), m_.ext_inst(d, GLSLstd450FAbs, {y})});
  Id exp_var = m_.local_variable(u32_type());
  m_.ext_inst(d, GLSLstd450Frexp, {big, exp_var});
  Id e = m_.load(exp_var);
  Id finite = op2(Op::OpLogicalAnd, m_.compare(Op::OpFOrdLessThan, big, m_.constant_f64(std::numeric_limits<double>::infinity())),
                  m_.compare(Op::OpFOrdGreaterThan, big, m_.constant_f64(0.0)));
  Id shift = m_.select(finite, m_.unary(Op::OpSNegate, e), u32c(0));
  // Against an infinity a finite argument acts as a (signed) zero.
  Id inf_big = m_.emit(Op::OpIsInf, m_.type_bool(), {big});
  auto prepare = [&](Id v) {
    Id zeroed = m_.select(op2(Op::OpLogicalAnd, inf_big, logical_not(m_.emit(Op::OpIsInf, m_.type_bool(), {v}))),
                          with_sign_of_any(m_.constant_f64(0.0), v, DataType::f64), v);
    return m_.convert(Op::OpFConvert, f, m_.ext_inst(d, GLSLstd450Ldexp, {zeroed, shift}));
  };
  Id ys = prepare(y), xs = prepare(x);
  Id r = m_.convert(Op::OpFConvert, d, soft_atan2(ys, xs));
  Id nan = op2(Op::OpLogicalOr, m_.emit(Op::OpIsNan, m_.type_bool(), {x}), m_.emit(Op::OpIsNan, m_.type_bool(), {y}));
  return m_.select(nan, m_.constant_f64(std::numeric_limits<double>::quiet_NaN()), r);
}

// |magnitude| with the sign of `sign`, for f32 or f64.
Id TaskEmitter::with_sign_of_any(Id magnitude, Id sign, DataType t) {
  if (t != DataType::f64) return with_sign_of(magnitude, sign);
  Id u = m_.type_vector(u32_type(), 2);
  Id mv = m_.convert(Op::OpBitcast, u, magnitude), sv = m_.convert(Op::OpBitcast, u, sign);
  Id hi = op2(Op::OpBitwiseOr, op2(Op::OpBitwiseAnd, m_.composite_extract(u32_type(), mv, {1}), u32c(0x7fffffffu)),
              op2(Op::OpBitwiseAnd, m_.composite_extract(u32_type(), sv, {1}), u32c(0x80000000u)));
  Id pair = m_.emit(Op::OpCompositeConstruct, u, {m_.composite_extract(u32_type(), mv, {0}), hi});
  return m_.convert(Op::OpBitcast, m_.type_float(64), pair);
}

}  // namespace grove::spirv::detail
