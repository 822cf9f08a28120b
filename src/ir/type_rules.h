// src/ir/type_rules.h — the typing rules of docs/ir.md, shared by the builder and type_check.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

// The common type two operands are promoted to (docs/ir.md, "Implicit promotion").
DataType promote(DataType a, DataType b);
// The type a binary op computes in, given its operand types.
DataType binary_operand_type(BinaryOp op, DataType a, DataType b);
// The type a binary op produces (u1 for comparisons and logic ops).
DataType binary_result_type(BinaryOp op, DataType a, DataType b);
// The type a unary op computes in and produces, given its operand type.
DataType unary_type(UnaryOp op, DataType x);
// Whether the op needs integer operands (bit ops, shifts).
bool needs_integers(BinaryOp op);
bool needs_integers(UnaryOp op);
bool needs_integers(AtomicOp op);

}  // namespace grove::ir
