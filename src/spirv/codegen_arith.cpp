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

// A numeric conversion of a legal kernel: a float to integer cast sees a
// value that fits (legalize saturates around it); u1 is converted only by
// the runtime's own loads and stores of it.
Id TaskEmitter::cast(Id v, DataType from, DataType to) {
  if (from == to) return v;
  if (to == DataType::u1) return m_.compare(is_float(from) ? Op::OpFUnordNotEqual : Op::OpINotEqual, v, zero(from));
  if (from == DataType::u1) return m_.select(v, one(to), zero(to));
  if (is_float(from) && is_float(to)) return m_.convert(Op::OpFConvert, type_of(to), v);
  if (is_float(from)) return m_.convert(is_signed(to) ? Op::OpConvertFToS : Op::OpConvertFToU, type_of(to), v);
  if (is_float(to)) {
    // Where the driver folds float arithmetic on values it can compute, an
    // integer it could compute (a - a, x % 1) is hidden before it becomes a
    // float (CodegenOptions::opaque_float_zero).
    if (zero_word_ != 0) v = op2(Op::OpBitwiseOr, v, is_64(from) ? m_.convert(Op::OpUConvert, type_of(from), zero_word_) : zero_word_);
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

Id TaskEmitter::join_words(Id lo, Id hi, DataType t) {
  Id pair = m_.emit(Op::OpCompositeConstruct, m_.type_vector(u32_type(), 2), {lo, hi});
  return m_.convert(Op::OpBitcast, type_of(t), pair);
}

std::pair<Id, Id> TaskEmitter::split_words(Id v) {
  Id pair = m_.convert(Op::OpBitcast, m_.type_vector(u32_type(), 2), v);
  return {m_.composite_extract(u32_type(), pair, {0}), m_.composite_extract(u32_type(), pair, {1})};
}

// ---- arithmetic ------------------------------------------------------------

// A float ±0.0 constant as a value the driver cannot fold (the context's
// zero word, with the constant's sign), where CodegenOptions says it must.
Id TaskEmitter::opaque_zero(Id v, DataType t) {
  const int sign = m_.float_zero_sign(v);
  if (zero_word_ == 0 || sign == 0) return v;
  Id word = zero_word_;
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
  if (t != DataType::f32)  // GLSL.std.450's transcendentals take 16- and 32-bit floats only
    throw InternalError("SPIR-V codegen: " + std::string(type_name(t)) + " math (GLSL.std.450 " +
                        std::to_string(static_cast<int>(op)) + ") in " + what_ +
                        " (legalize writes it in f32 operations)");
  return m_.ext_inst(m_.type_float(32), op, args);
}

Id TaskEmitter::unary(UnaryOp op, DataType t, Id x) {
  if (op == UnaryOp::logic_not) return logical_not(x);  // of a u1 (type_check)
  if (is_int(t)) {
    switch (op) {
      case UnaryOp::neg: return wrap(m_.unary(Op::OpSNegate, x), t);
      case UnaryOp::bit_not: return wrap(m_.unary(Op::OpNot, x), t);
      case UnaryOp::popcnt: case UnaryOp::clz: case UnaryOp::ctz: return bit_count(op, t, x);
      default: break;
    }
    throw InternalError(std::string("SPIR-V codegen: unary ") + ir::op_name(op) + " on an integer in " + what_);
  }
  auto glsl = [&](GLSLstd450 f) { return m_.ext_inst(type_of(t), f, {x}); };
  switch (op) {
    case UnaryOp::neg: return m_.unary(Op::OpFNegate, x);
    case UnaryOp::sqrt: return glsl(GLSLstd450Sqrt);
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
    case UnaryOp::rsqrt: case UnaryOp::round: case UnaryOp::logic_not: case UnaryOp::bit_not:
    case UnaryOp::popcnt: case UnaryOp::clz: case UnaryOp::ctz: break;
  }
  throw InternalError(std::string("SPIR-V codegen: unary ") + ir::op_name(op) + " on " + std::string(type_name(t)) +
                      " in " + what_ + " (legalize writes it in other operations)");
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
  if (t == DataType::u1) {  // legalize made u1's orderings logic
    if (op == BinaryOp::cmp_eq) return op2(Op::OpLogicalEqual, a, b);
    if (op == BinaryOp::cmp_ne) return op2(Op::OpLogicalNotEqual, a, b);
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

Id TaskEmitter::binary(BinaryOp op, DataType t, Id a, Id b) {
  if (ir::is_comparison(op)) return compare(op, t, a, b);
  if (op == BinaryOp::logic_and) return op2(Op::OpLogicalAnd, a, b);
  if (op == BinaryOp::logic_or) return op2(Op::OpLogicalOr, a, b);
  if (is_float(t)) {
    a = opaque_zero(a, t);
    b = opaque_zero(b, t);
    switch (op) {
      case BinaryOp::add: return float_op(Op::OpFAdd, a, b);
      case BinaryOp::sub: return float_op(Op::OpFSub, a, b);
      case BinaryOp::mul: return float_op(Op::OpFMul, a, b);
      case BinaryOp::div: return float_op(Op::OpFDiv, a, b);
      case BinaryOp::mod:  // legalize wrote exact fmod where it could (f64: with Int64)
        return float_op(Op::OpFRem, a, b);
      case BinaryOp::pow: return float_math(GLSLstd450Pow, t, {a, b});  // of a positive base (legalize)
      case BinaryOp::atan2: return float_math(GLSLstd450Atan2, t, {a, b});
      default: break;
    }
    throw InternalError(std::string("SPIR-V codegen: binary ") + ir::op_name(op) + " on floats in " + what_);
  }
  // Integers (not u1: legalize made its arithmetic logic), whose divisors
  // and shift counts legalize guarded; narrow ones wrapped to their width.
  const bool s = is_signed(t);
  switch (op) {
    case BinaryOp::add: return wrap(op2(Op::OpIAdd, a, b), t);
    case BinaryOp::sub: return wrap(op2(Op::OpISub, a, b), t);
    case BinaryOp::mul: return wrap(op2(Op::OpIMul, a, b), t);
    case BinaryOp::div: return op2(s ? Op::OpSDiv : Op::OpUDiv, a, b);
    // C's remainder of signed values, a - trunc(a / b) * b, written out:
    // NVIDIA's Vulkan driver (580, on an H200) gave OpSRem of -17 and 5 as
    // 4, the remainder of the unsigned bits, where OpSDiv was right. |q * b|
    // is at most |a|, so nothing wraps.
    case BinaryOp::mod:
      return s ? op2(Op::OpISub, a, op2(Op::OpIMul, op2(Op::OpSDiv, a, b), b)) : op2(Op::OpUMod, a, b);
    case BinaryOp::bit_and: return op2(Op::OpBitwiseAnd, a, b);
    case BinaryOp::bit_or: return op2(Op::OpBitwiseOr, a, b);
    case BinaryOp::bit_xor: return op2(Op::OpBitwiseXor, a, b);
    case BinaryOp::shl: return wrap(op2(Op::OpShiftLeftLogical, a, b), t);
    case BinaryOp::shr: return op2(s ? Op::OpShiftRightArithmetic : Op::OpShiftRightLogical, a, b);
    default: break;
  }
  throw InternalError(std::string("SPIR-V codegen: binary ") + ir::op_name(op) + " on " + std::string(type_name(t)) +
                      " in " + what_ + " (legalize writes it in other operations)");
}

}  // namespace grove::spirv::detail
