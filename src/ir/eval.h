// src/ir/eval.h — scalar arithmetic with docs/ir.md semantics, on bit patterns.
// Shared by the interpreter and the constant folder so both agree exactly.
#pragma once

#include <cstdint>

#include "ir/ir.h"

namespace grove::ir {

// Values are bit patterns in the low bits of a uint64_t; integers are kept
// truncated to their width (not sign-extended), f32 as its 32-bit pattern.
uint64_t eval_cast(DataType from, DataType to, uint64_t bits);
// `t` is the type the op computes in (both operands already of that type).
uint64_t eval_unary(UnaryOp op, DataType t, uint64_t x);
// `t` is the operand type; the result has binary_result_type(op, t, t).
uint64_t eval_binary(BinaryOp op, DataType t, uint64_t a, uint64_t b);
// The new value an atomic op stores: op(old, value), both of type t.
uint64_t eval_atomic(AtomicOp op, DataType t, uint64_t old_value, uint64_t value);

// Conversions between bit patterns and host numbers.
double bits_to_double(DataType t, uint64_t bits);
int64_t bits_to_int(DataType t, uint64_t bits);  // sign- or zero-extended
uint64_t double_to_bits(DataType t, double v);   // float t: rounds; integral t: casts
uint64_t int_to_bits(DataType t, int64_t v);
// f16 storage conversions (round to nearest even).
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
// Formats a value the way `print` shows it (floats in shortest round-trip form).
std::string format_value(DataType t, uint64_t bits);

}  // namespace grove::ir
