// src/ir/type_rules.cpp — implicit promotion and result types (docs/ir.md).
#include "ir/type_rules.h"

namespace grove::ir {

DataType promote(DataType a, DataType b) {
  a = compute_type(a);
  b = compute_type(b);
  if (a == b) return a;
  if (a == DataType::unknown || b == DataType::unknown) return DataType::unknown;
  if (is_float(a) || is_float(b)) {
    return (a == DataType::f64 || b == DataType::f64) ? DataType::f64 : DataType::f32;
  }
  if (a == DataType::u1) return b;
  if (b == DataType::u1) return a;
  int wa = bit_width(a), wb = bit_width(b);
  if (wa != wb) return wa > wb ? a : b;
  return is_signed(a) ? b : a;  // equal width: the unsigned one
}

bool needs_integers(BinaryOp op) {
  switch (op) {
    case BinaryOp::bit_and: case BinaryOp::bit_or: case BinaryOp::bit_xor:
    case BinaryOp::shl: case BinaryOp::shr:
      return true;
    default:
      return false;
  }
}

bool needs_integers(UnaryOp op) {
  return op == UnaryOp::bit_not || op == UnaryOp::popcnt || op == UnaryOp::clz || op == UnaryOp::ctz;
}

bool needs_integers(AtomicOp op) {
  return op == AtomicOp::bit_and || op == AtomicOp::bit_or || op == AtomicOp::bit_xor;
}

static bool is_float_math(BinaryOp op) { return op == BinaryOp::atan2; }

DataType binary_operand_type(BinaryOp op, DataType a, DataType b) {
  if (is_logical(op)) return DataType::u1;
  if (op == BinaryOp::shl || op == BinaryOp::shr) return compute_type(a);
  DataType t = promote(a, b);
  if (is_float_math(op) && is_integral(t)) return DataType::f32;
  return t;
}

DataType binary_result_type(BinaryOp op, DataType a, DataType b) {
  if (is_comparison(op) || is_logical(op)) return DataType::u1;
  return binary_operand_type(op, a, b);
}

DataType unary_type(UnaryOp op, DataType x) {
  x = compute_type(x);
  switch (op) {
    case UnaryOp::logic_not:
      return DataType::u1;
    case UnaryOp::neg: case UnaryOp::bit_not: case UnaryOp::abs:
      return x;
    case UnaryOp::popcnt: case UnaryOp::clz: case UnaryOp::ctz:
      return x == DataType::u1 ? DataType::i32 : x;  // bits of the integer, never of a bool
    case UnaryOp::floor: case UnaryOp::ceil: case UnaryOp::round:
    case UnaryOp::sqrt: case UnaryOp::rsqrt: case UnaryOp::sin: case UnaryOp::cos:
    case UnaryOp::tan: case UnaryOp::asin: case UnaryOp::acos: case UnaryOp::atan:
    case UnaryOp::exp: case UnaryOp::log: case UnaryOp::tanh:
      return is_float(x) ? x : (x == DataType::unknown ? x : DataType::f32);
  }
  return x;
}

}  // namespace grove::ir
