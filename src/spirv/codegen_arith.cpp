// src/spirv/codegen_arith.cpp — types, constants, arithmetic and conversions
// of the SPIR-V code generator, with the interpreter's semantics (eval.cpp).
#include <bit>
#include <cmath>
#include <limits>

#include "ir/assert.h"
#include "ir/type_rules.h"
#include "spirv/codegen_internal.h"

namespace grove::spirv::detail {

using spv::Op;
using ir::BinaryOp;
using ir::UnaryOp;

namespace {

bool is_64(DataType t) { return bit_width(t) == 64; }
bool is_int(DataType t) { return is_integral(t) && t != DataType::u1; }

// The 32-bit canonical form of a narrow or 32-bit integer's bits.
uint32_t canonical32(DataType t, uint64_t bits) {
  switch (t) {
    case DataType::i8: return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(bits)));
    case DataType::i16: return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int16_t>(bits)));
    case DataType::u8: return static_cast<uint32_t>(bits & 0xffu);
    case DataType::u16: return static_cast<uint32_t>(bits & 0xffffu);
    default: return static_cast<uint32_t>(bits);
  }
}

// The smallest and largest value of an integer type, as bit patterns of it.
uint64_t min_bits(DataType t) { return is_signed(t) ? uint64_t{1} << (bit_width(t) - 1) : 0; }
uint64_t max_bits(DataType t) {
  int w = bit_width(t);
  uint64_t all = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  return is_signed(t) ? all >> 1 : all;
}
double min_value(DataType t) {
  return is_signed(t) ? -std::ldexp(1.0, bit_width(t) - 1) : 0.0;
}
double max_value(DataType t) {  // static_cast<double>(max) as the interpreter computes it
  return is_signed(t) ? static_cast<double>(static_cast<int64_t>(max_bits(t)))
                      : static_cast<double>(max_bits(t));
}

}  // namespace

// ---- types and constants ----------------------------------------------------

Id TaskEmitter::type_of(DataType t) {
  switch (t) {
    case DataType::u1: return m_.type_bool();
    case DataType::i8: case DataType::i16: case DataType::i32:
    case DataType::u8: case DataType::u16: case DataType::u32:
      return m_.type_uint(32);
    case DataType::i64: case DataType::u64: return m_.type_uint(64);
    case DataType::f32: return m_.type_float(32);
    case DataType::f64: return m_.type_float(64);
    case DataType::f16: case DataType::unknown: break;
  }
  throw InternalError("SPIR-V codegen: no value type for " + std::string(type_name(t)) + " in " + what_);
}

Id TaskEmitter::constant(DataType t, uint64_t bits) {
  switch (t) {
    case DataType::u1: return m_.constant_bool((bits & 1) != 0);
    case DataType::f32: return m_.constant_f32(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    case DataType::f64: return m_.constant_f64(std::bit_cast<double>(bits));
    case DataType::i64: case DataType::u64: return m_.constant_u64(bits);
    default: return u32c(canonical32(t, bits));
  }
}

Id TaskEmitter::one(DataType t) {
  if (t == DataType::f32) return m_.constant_f32(1.0f);
  if (t == DataType::f64) return m_.constant_f64(1.0);
  return constant(t, 1);
}

// ---- conversions -----------------------------------------------------------

Id TaskEmitter::wrap(Id v, DataType t) {
  switch (t) {
    case DataType::i8:
    case DataType::i16: {
      Id s = u32c(static_cast<uint32_t>(32 - bit_width(t)));
      return op2(Op::OpShiftRightArithmetic, op2(Op::OpShiftLeftLogical, v, s), s);
    }
    case DataType::u8: return op2(Op::OpBitwiseAnd, v, u32c(0xffu));
    case DataType::u16: return op2(Op::OpBitwiseAnd, v, u32c(0xffffu));
    default: return v;
  }
}

Id TaskEmitter::cast(Id v, DataType from, DataType to) {
  if (from == to) return v;
  if (to == DataType::u1) {
    if (is_float(from)) return m_.compare(Op::OpFUnordNotEqual, v, zero(from));
    return m_.compare(Op::OpINotEqual, v, zero(from));
  }
  if (from == DataType::u1) return m_.select(v, one(to), zero(to));
  if (is_float(from) && is_float(to)) return m_.convert(Op::OpFConvert, type_of(to), v);
  if (is_float(from)) return float_to_int(v, from, to);
  if (is_float(to)) {
    return m_.convert(is_signed(from) ? Op::OpConvertSToF : Op::OpConvertUToF, type_of(to), v);
  }
  // Integer to integer: wrap to the target's width (bits_to_int then int_to_bits).
  if (is_64(from) && is_64(to)) return v;
  if (is_64(from)) return wrap(m_.convert(Op::OpUConvert, u32_type(), v), to);
  // Sign extension as two words, the high one an arithmetic shift of the
  // value: lavapipe miscompiles OpSConvert to 64 bits followed by a signed
  // compare, min, max or abs (cast(i64, x) > 33 was true for x = 0).
  if (is_64(to)) return is_signed(from) ? join_words(v, op2(Op::OpShiftRightArithmetic, v, u32c(31)), to)
                                        : m_.convert(Op::OpUConvert, type_of(to), v);
  return wrap(v, to);
}

// Truncation toward zero, saturating out of range, NaN -> 0 (eval.cpp float_to_int).
Id TaskEmitter::float_to_int(Id v, DataType from, DataType to) {
  double lo = min_value(to), hi = max_value(to);
  Id lo_c, hi_c;
  if (from == DataType::f32) {
    // The interpreter compares the value as a double: x <= lo, x >= hi. For an
    // f32 x that is x <= (largest float <= lo) and x >= (smallest float >= hi).
    float lf = static_cast<float>(lo), hf = static_cast<float>(hi);
    if (static_cast<double>(lf) > lo) lf = std::nextafter(lf, -std::numeric_limits<float>::infinity());
    if (static_cast<double>(hf) < hi) hf = std::nextafter(hf, std::numeric_limits<float>::infinity());
    lo_c = m_.constant_f32(lf);
    hi_c = m_.constant_f32(hf);
  } else {
    lo_c = m_.constant_f64(lo);
    hi_c = m_.constant_f64(hi);
  }
  Id nan = m_.emit(Op::OpIsNan, m_.type_bool(), {v});
  Id low = m_.compare(Op::OpFOrdLessThanEqual, v, lo_c);
  Id high = m_.compare(Op::OpFOrdGreaterThanEqual, v, hi_c);
  Id out = op2(Op::OpLogicalOr, op2(Op::OpLogicalOr, nan, low), high);
  Id safe = m_.select(out, zero(from), v);
  Id r = m_.convert(is_signed(to) ? Op::OpConvertFToS : Op::OpConvertFToU, type_of(to), safe);
  r = m_.select(high, constant(to, max_bits(to)), r);
  r = m_.select(low, constant(to, min_bits(to)), r);
  return m_.select(nan, zero(to), r);
}

Id TaskEmitter::join_words(Id lo, Id hi, DataType t) {
  Id pair = m_.emit(Op::OpCompositeConstruct, m_.type_vector(u32_type(), 2), {lo, hi});
  return m_.convert(Op::OpBitcast, type_of(t), pair);
}

std::pair<Id, Id> TaskEmitter::split_words(Id v) {
  Id pair = m_.convert(Op::OpBitcast, m_.type_vector(u32_type(), 2), v);
  return {m_.composite_extract(u32_type(), pair, {0}), m_.composite_extract(u32_type(), pair, {1})};
}

// ir::f32_to_f16, branch-free: every case is computed and the right one selected.
Id TaskEmitter::f32_to_f16_bits(Id f) {
  auto sh_r = [&](Id a, Id b) { return op2(Op::OpShiftRightLogical, a, b); };
  auto sh_l = [&](Id a, Id b) { return op2(Op::OpShiftLeftLogical, a, b); };
  auto band = [&](Id a, uint32_t b) { return op2(Op::OpBitwiseAnd, a, u32c(b)); };
  auto round_up = [&](Id half, Id rem, Id mid) {
    Id odd = m_.compare(Op::OpINotEqual, band(half, 1), u32c(0));
    Id up = op2(Op::OpLogicalOr, m_.compare(Op::OpUGreaterThan, rem, mid),
                op2(Op::OpLogicalAnd, m_.compare(Op::OpIEqual, rem, mid), odd));
    return op2(Op::OpIAdd, half, m_.select(up, u32c(1), u32c(0)));
  };
  Id x = m_.convert(Op::OpBitcast, u32_type(), f);
  Id sign = band(sh_r(x, u32c(16)), 0x8000u);
  Id exp = band(sh_r(x, u32c(23)), 0xffu);
  Id man = band(x, 0x7fffffu);
  Id e = op2(Op::OpISub, exp, u32c(112));  // exp - 127 + 15, read as signed
  // Normal results: 1 <= e <= 30.
  Id normal = op2(Op::OpBitwiseOr, sh_l(e, u32c(10)), sh_r(man, u32c(13)));
  normal = round_up(normal, band(man, 0x1fffu), u32c(0x1000u));
  // Subnormal results: -10 <= e <= 0, shift = 14 - e in [14, 24] (clamped for the other cases).
  Id shift = op2(Op::OpISub, u32c(14), e);
  shift = m_.select(m_.compare(Op::OpSLessThan, shift, u32c(14)), u32c(14), shift);
  shift = m_.select(m_.compare(Op::OpSGreaterThan, shift, u32c(24)), u32c(24), shift);
  Id full = op2(Op::OpBitwiseOr, man, u32c(0x800000u));
  Id sub_half = sh_r(full, shift);
  Id sub_rem = op2(Op::OpBitwiseAnd, full, op2(Op::OpISub, sh_l(u32c(1), shift), u32c(1)));
  Id sub_mid = sh_l(u32c(1), op2(Op::OpISub, shift, u32c(1)));
  Id sub = round_up(sub_half, sub_rem, sub_mid);
  sub = m_.select(m_.compare(Op::OpSLessThan, e, m_.constant_u32(static_cast<uint32_t>(-10))), u32c(0), sub);
  Id r = m_.select(m_.compare(Op::OpSLessThanEqual, e, u32c(0)), sub, normal);
  r = m_.select(m_.compare(Op::OpSGreaterThanEqual, e, u32c(31)), u32c(0x7c00u), r);
  Id nan_bit = m_.select(m_.compare(Op::OpINotEqual, man, u32c(0)), u32c(0x200u), u32c(0));
  Id special = op2(Op::OpBitwiseOr, u32c(0x7c00u), nan_bit);
  r = m_.select(m_.compare(Op::OpIEqual, exp, u32c(0xffu)), special, r);
  return op2(Op::OpBitwiseOr, sign, r);
}

// ir::f16_to_f32 in integer arithmetic (exact): lavapipe's UnpackHalf2x16
// executes a trap instruction on x86 without F16C (GALLIUM_OVERRIDE_CPU_CAPS=sse4.1).
Id TaskEmitter::f16_bits_to_f32(Id h) {
  auto band = [&](Id a, uint32_t b) { return op2(Op::OpBitwiseAnd, a, u32c(b)); };
  auto bor = [&](Id a, Id b) { return op2(Op::OpBitwiseOr, a, b); };
  const Id sign = op2(Op::OpShiftLeftLogical, band(h, 0x8000u), u32c(16));
  const Id exp = band(op2(Op::OpShiftRightLogical, h, u32c(10)), 0x1fu);
  const Id man = band(h, 0x3ffu);
  const Id man_bits = op2(Op::OpShiftLeftLogical, man, u32c(13));
  // Normal: the exponent rebiased (15 -> 127); infinities and NaN: all ones.
  Id r = bor(op2(Op::OpShiftLeftLogical, op2(Op::OpIAdd, exp, u32c(112)), u32c(23)), man_bits);
  r = m_.select(m_.compare(Op::OpIEqual, exp, u32c(0x1fu)), bor(u32c(0x7f800000u), man_bits), r);
  // Zero and subnormal: man * 2^-24, exact in f32.
  const Id tiny = float_op(Op::OpFMul, m_.convert(Op::OpConvertUToF, m_.type_float(32), man), f32c(0x1p-24f));
  r = m_.select(m_.compare(Op::OpIEqual, exp, u32c(0)), m_.convert(Op::OpBitcast, u32_type(), tiny), r);
  return m_.convert(Op::OpBitcast, m_.type_float(32), bor(r, sign));
}

// ---- arithmetic ------------------------------------------------------------

// A float ±0.0 constant as a value the driver cannot fold (the context's
// zero word, with the constant's sign), where CodegenOptions says it must.
Id TaskEmitter::opaque_zero(Id v, DataType t) {
  const int sign = m_.float_zero_sign(v);
  if (!options_.opaque_float_zero || sign == 0) return v;
  Id word = m_.load(context_at(context::kZero));
  if (t == DataType::f32) {
    if (sign < 0) word = op2(Op::OpBitwiseOr, word, u32c(0x80000000u));
    return m_.convert(Op::OpBitcast, m_.type_float(32), word);
  }
  return join_words(word, sign < 0 ? op2(Op::OpBitwiseOr, word, u32c(0x80000000u)) : word, t);
}

Id TaskEmitter::float_op(Op op, Id a, Id b) {
  Id r = m_.binary(op, a, b);
  m_.decorate(r, spv::Decoration::NoContraction);
  return r;
}

Id TaskEmitter::float_math(GLSLstd450 op, DataType t, std::vector<Id> args) {
  if (t == DataType::f64) {
    // f64: exp, log and atan2 keep f64's range (f32 precision); the odd
    // functions return tiny arguments as they are (f32 would flush them).
    switch (op) {
      case GLSLstd450Exp: return f64_exp(args[0]);
      case GLSLstd450Log: return f64_log(args[0]);
      case GLSLstd450Atan2: return f64_atan2(args[0], args[1]);
      case GLSLstd450Pow: return f64_exp(float_op(Op::OpFMul, args[1], f64_log(args[0])));
      default: break;
    }
    const Id x = args[0];
    for (Id& a : args) a = m_.convert(Op::OpFConvert, m_.type_float(32), a);
    Id r = soft_math(op, args);
    if (r == 0) r = m_.ext_inst(m_.type_float(32), op, args);
    r = m_.convert(Op::OpFConvert, m_.type_float(64), r);
    if (op == GLSLstd450Sin || op == GLSLstd450Tan || op == GLSLstd450Asin || op == GLSLstd450Atan ||
        op == GLSLstd450Tanh) {
      Id tiny = m_.compare(Op::OpFOrdLessThan, m_.ext_inst(m_.type_float(64), GLSLstd450FAbs, {x}),
                           m_.constant_f64(1e-4));
      r = m_.select(tiny, x, r);
    }
    return r;
  }
  Id r = soft_math(op, args);
  return r != 0 ? r : m_.ext_inst(m_.type_float(32), op, args);
}

// Truncation toward zero through Floor and Ceil: lavapipe's f64 Trunc leaves
// values of 2^24 and more unchanged (and loses the sign of -0.5) on x86
// without AVX-512, while its Floor and Ceil are exact.
Id TaskEmitter::float_trunc(Id x) {
  Id t = m_.type_of(x);
  Id zero = m_.type_width(t) == 64 ? m_.constant_f64(0.0) : m_.constant_f32(0.0f);
  return m_.select(m_.compare(Op::OpFOrdLessThan, x, zero), m_.ext_inst(t, GLSLstd450Ceil, {x}),
                   m_.ext_inst(t, GLSLstd450Floor, {x}));
}

// std::round: half away from zero. x - trunc(x) is exact, so the test is too.
Id TaskEmitter::float_round(Id x) {
  Id t = m_.type_of(x);
  Id tr = float_trunc(x);
  Id frac = m_.ext_inst(t, GLSLstd450FAbs, {float_op(Op::OpFSub, x, tr)});
  Id half = m_.type_width(t) == 64 ? m_.constant_f64(0.5) : m_.constant_f32(0.5f);
  Id away = float_op(Op::OpFAdd, tr, m_.ext_inst(t, GLSLstd450FSign, {x}));
  return m_.select(m_.compare(Op::OpFOrdGreaterThanEqual, frac, half), away, tr);
}

Id TaskEmitter::unary(UnaryOp op, DataType t, Id x) {
  if (op == UnaryOp::logic_not) {
    if (t == DataType::u1) return logical_not(x);
    return m_.compare(is_float(t) ? Op::OpFOrdEqual : Op::OpIEqual, x, zero(t));
  }
  if (t == DataType::u1) return op == UnaryOp::bit_not ? logical_not(x) : x;
  if (is_int(t)) {
    switch (op) {
      case UnaryOp::neg: return wrap(m_.unary(Op::OpSNegate, x), t);
      case UnaryOp::bit_not: return wrap(m_.unary(Op::OpNot, x), t);
      case UnaryOp::abs:
        if (!is_signed(t)) return x;
        return wrap(m_.select(m_.compare(Op::OpSLessThan, x, zero(t)), m_.unary(Op::OpSNegate, x), x), t);
      case UnaryOp::floor: case UnaryOp::ceil: case UnaryOp::round: return x;
      case UnaryOp::popcnt: case UnaryOp::clz: case UnaryOp::ctz: return bit_count(op, t, x);
      default: break;
    }
    throw InternalError(std::string("SPIR-V codegen: unary ") + ir::op_name(op) + " on an integer in " + what_);
  }
  auto glsl = [&](GLSLstd450 f) { return m_.ext_inst(type_of(t), f, {x}); };
  switch (op) {
    case UnaryOp::neg: return m_.unary(Op::OpFNegate, x);
    case UnaryOp::sqrt: return glsl(GLSLstd450Sqrt);
    case UnaryOp::rsqrt: return float_op(Op::OpFDiv, one(t), glsl(GLSLstd450Sqrt));
    case UnaryOp::sin: return float_math(GLSLstd450Sin, t, {x});
    case UnaryOp::cos: return float_math(GLSLstd450Cos, t, {x});
    case UnaryOp::tan: return float_math(GLSLstd450Tan, t, {x});
    case UnaryOp::asin: return float_math(GLSLstd450Asin, t, {x});
    case UnaryOp::acos: return float_math(GLSLstd450Acos, t, {x});
    case UnaryOp::atan: return float_math(GLSLstd450Atan, t, {x});
    case UnaryOp::exp: return float_math(GLSLstd450Exp, t, {x});
    case UnaryOp::log: return float_math(GLSLstd450Log, t, {x});
    case UnaryOp::tanh: return float_math(GLSLstd450Tanh, t, {x});
    case UnaryOp::abs: return glsl(GLSLstd450FAbs);
    case UnaryOp::floor: return glsl(GLSLstd450Floor);
    case UnaryOp::ceil: return glsl(GLSLstd450Ceil);
    case UnaryOp::round: return float_round(x);
    case UnaryOp::logic_not: case UnaryOp::bit_not: case UnaryOp::popcnt: case UnaryOp::clz:
    case UnaryOp::ctz: break;
  }
  throw InternalError(std::string("SPIR-V codegen: unary ") + ir::op_name(op) + " on a float in " + what_);
}

// Counted over t's own width, as eval.cpp does (clz and ctz of 0 are the
// width). Vulkan takes only 32-bit operands for OpBitCount and FindILsb /
// FindUMsb, so a 64-bit value is counted as its two words, and an 8- or
// 16-bit one (held in 32 bits, sign-extended when signed) is masked first.
Id TaskEmitter::bit_count(UnaryOp op, DataType t, Id x) {
  const uint32_t width = static_cast<uint32_t>(bit_width(t));
  auto popcount = [&](Id v) { return m_.unary(Op::OpBitCount, v); };
  auto is_zero = [&](Id v) { return m_.compare(Op::OpIEqual, v, u32c(0)); };
  // FindILsb and FindUMsb of 0 are -1 (all ones).
  auto ctz32 = [&](Id v) {
    return m_.select(is_zero(v), u32c(32), m_.ext_inst(u32_type(), GLSLstd450FindILsb, {v}));
  };
  auto clz32 = [&](Id v) { return op2(Op::OpISub, u32c(31), m_.ext_inst(u32_type(), GLSLstd450FindUMsb, {v})); };
  Id r;
  if (width == 64) {
    auto [lo, hi] = split_words(x);
    switch (op) {
      case UnaryOp::popcnt: r = op2(Op::OpIAdd, popcount(lo), popcount(hi)); break;
      case UnaryOp::ctz: r = m_.select(is_zero(lo), op2(Op::OpIAdd, u32c(32), ctz32(hi)), ctz32(lo)); break;
      default: r = m_.select(is_zero(hi), op2(Op::OpIAdd, u32c(32), clz32(lo)), clz32(hi)); break;
    }
    return cast(r, DataType::u32, t);
  }
  Id v = type_of(t) == u32_type() ? x : m_.convert(Op::OpBitcast, u32_type(), x);
  if (width < 32) v = op2(Op::OpBitwiseAnd, v, u32c((1u << width) - 1));
  switch (op) {
    case UnaryOp::popcnt: r = popcount(v); break;
    case UnaryOp::ctz: r = m_.select(is_zero(v), u32c(width), ctz32(v)); break;
    default: r = op2(Op::OpISub, clz32(v), u32c(32 - width)); break;
  }
  return type_of(t) == u32_type() ? r : m_.convert(Op::OpBitcast, type_of(t), r);
}

Id TaskEmitter::compare(BinaryOp op, DataType t, Id a, Id b) {
  if (t == DataType::u1) {
    switch (op) {
      case BinaryOp::cmp_lt: return op2(Op::OpLogicalAnd, logical_not(a), b);
      case BinaryOp::cmp_le: return op2(Op::OpLogicalOr, logical_not(a), b);
      case BinaryOp::cmp_gt: return op2(Op::OpLogicalAnd, a, logical_not(b));
      case BinaryOp::cmp_ge: return op2(Op::OpLogicalOr, a, logical_not(b));
      case BinaryOp::cmp_eq: return op2(Op::OpLogicalEqual, a, b);
      case BinaryOp::cmp_ne: return op2(Op::OpLogicalNotEqual, a, b);
      default: break;
    }
  } else if (is_float(t)) {
    switch (op) {
      case BinaryOp::cmp_lt: return m_.compare(Op::OpFOrdLessThan, a, b);
      case BinaryOp::cmp_le: return m_.compare(Op::OpFOrdLessThanEqual, a, b);
      case BinaryOp::cmp_gt: return m_.compare(Op::OpFOrdGreaterThan, a, b);
      case BinaryOp::cmp_ge: return m_.compare(Op::OpFOrdGreaterThanEqual, a, b);
      case BinaryOp::cmp_eq: return m_.compare(Op::OpFOrdEqual, a, b);
      case BinaryOp::cmp_ne: return m_.compare(Op::OpFUnordNotEqual, a, b);  // NaN != x
      default: break;
    }
  } else {
    bool s = is_signed(t);
    switch (op) {
      case BinaryOp::cmp_lt: return m_.compare(s ? Op::OpSLessThan : Op::OpULessThan, a, b);
      case BinaryOp::cmp_le: return m_.compare(s ? Op::OpSLessThanEqual : Op::OpULessThanEqual, a, b);
      case BinaryOp::cmp_gt: return m_.compare(s ? Op::OpSGreaterThan : Op::OpUGreaterThan, a, b);
      case BinaryOp::cmp_ge: return m_.compare(s ? Op::OpSGreaterThanEqual : Op::OpUGreaterThanEqual, a, b);
      case BinaryOp::cmp_eq: return m_.compare(Op::OpIEqual, a, b);
      case BinaryOp::cmp_ne: return m_.compare(Op::OpINotEqual, a, b);
      default: break;
    }
  }
  throw InternalError(std::string("SPIR-V codegen: ") + ir::op_name(op) + " is not a comparison");
}

// Integer power by squaring; negative exponents give 0 (1 for a == 1, +-1 for a == -1).
Id TaskEmitter::int_pow(DataType t, Id a, Id b) {
  Id ty = type_of(t);
  Id result = m_.local_variable(ty), base = m_.local_variable(ty), exponent = m_.local_variable(ty);
  m_.store(result, one(t));
  m_.store(base, a);
  m_.store(exponent, b);
  Id header = m_.new_label(), body = m_.new_label(), cont = m_.new_label(), merge = m_.new_label();
  m_.branch(header);
  m_.begin_block(header);
  Id e = m_.load(exponent);
  Id more = m_.compare(Op::OpINotEqual, e, zero(t));
  m_.loop_merge(merge, cont);
  m_.branch_conditional(more, body, merge);
  m_.begin_block(body);
  Id r = m_.load(result), x = m_.load(base);
  Id odd = m_.compare(Op::OpINotEqual, op2(Op::OpBitwiseAnd, e, one(t)), zero(t));
  m_.store(result, m_.select(odd, op2(Op::OpIMul, r, x), r));
  m_.store(base, op2(Op::OpIMul, x, x));
  m_.store(exponent, op2(Op::OpShiftRightLogical, e, one(t)));
  m_.branch(cont);
  m_.begin_block(cont);
  loop_back_edge(header, merge);
  m_.begin_block(merge);
  after_loop();
  Id out = m_.load(result);
  if (is_signed(t)) {
    Id minus_one = all_ones(t);
    Id odd_b = m_.compare(Op::OpINotEqual, op2(Op::OpBitwiseAnd, b, one(t)), zero(t));
    Id of_minus_one = m_.select(odd_b, minus_one, one(t));
    Id neg = m_.select(m_.compare(Op::OpIEqual, a, one(t)), one(t),
                       m_.select(m_.compare(Op::OpIEqual, a, minus_one), of_minus_one, zero(t)));
    out = m_.select(m_.compare(Op::OpSLessThan, b, zero(t)), neg, out);
  }
  return wrap(out, t);
}

Id TaskEmitter::binary(BinaryOp op, DataType t, Id a, Id b) {
  if (ir::is_comparison(op)) return compare(op, t, a, b);
  if (op == BinaryOp::logic_and) return op2(Op::OpLogicalAnd, a, b);
  if (op == BinaryOp::logic_or) return op2(Op::OpLogicalOr, a, b);
  if (t == DataType::u1) {
    switch (op) {
      case BinaryOp::add: case BinaryOp::sub: case BinaryOp::bit_xor: return op2(Op::OpLogicalNotEqual, a, b);
      case BinaryOp::mul: case BinaryOp::bit_and: case BinaryOp::min: case BinaryOp::div:
        return op2(Op::OpLogicalAnd, a, b);
      case BinaryOp::bit_or: case BinaryOp::max: return op2(Op::OpLogicalOr, a, b);
      case BinaryOp::mod: return m_.constant_bool(false);
      case BinaryOp::pow: return op2(Op::OpLogicalOr, a, logical_not(b));
      case BinaryOp::shl: case BinaryOp::shr: return a;  // the count modulo 1 is 0
      default: break;
    }
    throw InternalError(std::string("SPIR-V codegen: binary ") + ir::op_name(op) + " on u1 in " + what_);
  }
  // min/max as the interpreter: b < a ? b : a and a < b ? b : a (NaN and -0.0 included).
  if (op == BinaryOp::min) return m_.select(compare(BinaryOp::cmp_lt, t, b, a), b, a);
  if (op == BinaryOp::max) return m_.select(compare(BinaryOp::cmp_lt, t, a, b), b, a);
  if (is_float(t)) {
    a = opaque_zero(a, t);
    b = opaque_zero(b, t);
    switch (op) {
      case BinaryOp::add: return float_op(Op::OpFAdd, a, b);
      case BinaryOp::sub: return float_op(Op::OpFSub, a, b);
      case BinaryOp::mul: return float_op(Op::OpFMul, a, b);
      case BinaryOp::div: return float_op(Op::OpFDiv, a, b);
      case BinaryOp::mod:  // std::fmod, exactly (needs 64-bit integers for f64)
        return t == DataType::f64 && !options_.features.shader_int64 ? float_op(Op::OpFRem, a, b) : float_mod(a, b, t);
      case BinaryOp::pow: return float_pow(a, b, t);
      case BinaryOp::atan2: return float_math(GLSLstd450Atan2, t, {a, b});
      default: break;
    }
    throw InternalError(std::string("SPIR-V codegen: binary ") + ir::op_name(op) + " on floats in " + what_);
  }
  bool s = is_signed(t);
  Id count_mask = constant(t, static_cast<uint64_t>(bit_width(t) - 1));
  switch (op) {
    case BinaryOp::add: return wrap(op2(Op::OpIAdd, a, b), t);
    case BinaryOp::sub: return wrap(op2(Op::OpISub, a, b), t);
    case BinaryOp::mul: return wrap(op2(Op::OpIMul, a, b), t);
    case BinaryOp::div:
    case BinaryOp::mod: {
      // By zero: 0. Signed: INT_MIN / -1 is 0, and anything % -1 is 0.
      Id bad = m_.compare(Op::OpIEqual, b, zero(t));
      if (s) {
        Id minus_one = m_.compare(Op::OpIEqual, b, all_ones(t));
        if (op == BinaryOp::div) minus_one = op2(Op::OpLogicalAnd, minus_one,
                                                 m_.compare(Op::OpIEqual, a, constant(t, min_bits(t))));
        bad = op2(Op::OpLogicalOr, bad, minus_one);
      }
      Id safe = m_.select(bad, one(t), b);
      Op o = op == BinaryOp::div ? (s ? Op::OpSDiv : Op::OpUDiv) : (s ? Op::OpSRem : Op::OpUMod);
      return m_.select(bad, zero(t), op2(o, a, safe));
    }
    case BinaryOp::bit_and: return op2(Op::OpBitwiseAnd, a, b);
    case BinaryOp::bit_or: return op2(Op::OpBitwiseOr, a, b);
    case BinaryOp::bit_xor: return op2(Op::OpBitwiseXor, a, b);
    case BinaryOp::shl: return wrap(op2(Op::OpShiftLeftLogical, a, op2(Op::OpBitwiseAnd, b, count_mask)), t);
    case BinaryOp::shr:
      return op2(s ? Op::OpShiftRightArithmetic : Op::OpShiftRightLogical, a,
                 op2(Op::OpBitwiseAnd, b, count_mask));
    case BinaryOp::pow: return int_pow(t, a, b);
    default: break;
  }
  throw InternalError(std::string("SPIR-V codegen: binary ") + ir::op_name(op) + " on integers in " + what_);
}

}  // namespace grove::spirv::detail
