// src/ir/eval.h — scalar arithmetic with docs/ir.md semantics, on bit patterns.
// Shared by the interpreter and the constant folder so both agree exactly.
#pragma once

#include <cstdint>

#include "ir/ir.h"
#include "runtime/core/scalar.h"

namespace grove::ir {

// Values are bit patterns in the low bits of a uint64_t; integers are kept
// truncated to their width (not sign-extended), f32 as its 32-bit pattern.
// Conversions and formatting live with the runtime (runtime/core/scalar.h),
// which needs them too; the arithmetic is the compiler's.
inline uint64_t eval_cast(DataType from, DataType to, uint64_t bits) { return rt::cast_bits(from, to, bits); }
// The same bits read as another type of the same width (32 or 64): with
// every value kept as its own width's pattern, only the width matters.
inline uint64_t eval_bitcast(DataType to, uint64_t bits) {
  return bit_width(to) == 64 ? bits : bits & 0xffffffffu;
}
// `t` is the type the op computes in (both operands already of that type).
uint64_t eval_unary(UnaryOp op, DataType t, uint64_t x);
// `t` is the operand type; the result has binary_result_type(op, t, t).
uint64_t eval_binary(BinaryOp op, DataType t, uint64_t a, uint64_t b);
// The new value an atomic op stores: op(old, value), both of type t.
uint64_t eval_atomic(AtomicOp op, DataType t, uint64_t old_value, uint64_t value);

using rt::bits_to_double;
using rt::bits_to_int;
using rt::double_to_bits;
using rt::f16_to_f32;
using rt::f32_to_f16;
using rt::format_value;
using rt::int_to_bits;

}  // namespace grove::ir
