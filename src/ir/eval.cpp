// src/ir/eval.cpp — scalar arithmetic of docs/ir.md on bit patterns.
#include "ir/eval.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ir/assert.h"
#include "runtime/core/scalar_detail.h"

namespace grove::ir {

namespace {

using namespace rt::scalar_detail;

template <typename T>
T int_div(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return b ? a : false;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (a == std::numeric_limits<T>::min() && b == T(-1)) return 0;
    }
    return static_cast<T>(a / b);
  }
}

template <typename T>
T int_mod(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) {
    return false;
  } else {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return 0;
    }
    return static_cast<T>(a % b);
  }
}

}  // namespace

uint64_t eval_unary(UnaryOp op, DataType t, uint64_t x) {
  return dispatch(t, [&]<typename T>() -> uint64_t {
    T v = from_bits<T>(x);
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case UnaryOp::neg: return to_bits<T>(-v);
        case UnaryOp::logic_not: return v == 0 ? 1 : 0;
        case UnaryOp::bit_not: break;
        case UnaryOp::sqrt: return to_bits<T>(std::sqrt(v));
        case UnaryOp::rsqrt: return to_bits<T>(T(1) / std::sqrt(v));
        case UnaryOp::sin: return to_bits<T>(std::sin(v));
        case UnaryOp::cos: return to_bits<T>(std::cos(v));
        case UnaryOp::tan: return to_bits<T>(std::tan(v));
        case UnaryOp::asin: return to_bits<T>(std::asin(v));
        case UnaryOp::acos: return to_bits<T>(std::acos(v));
        case UnaryOp::atan: return to_bits<T>(std::atan(v));
        case UnaryOp::exp: return to_bits<T>(std::exp(v));
        case UnaryOp::log: return to_bits<T>(std::log(v));
        case UnaryOp::abs: return to_bits<T>(std::fabs(v));
        case UnaryOp::floor: return to_bits<T>(std::floor(v));
        case UnaryOp::ceil: return to_bits<T>(std::ceil(v));
        case UnaryOp::round: return to_bits<T>(std::round(v));
        case UnaryOp::tanh: return to_bits<T>(std::tanh(v));
        case UnaryOp::popcnt: case UnaryOp::clz: case UnaryOp::ctz: break;
      }
      GROVE_ASSERT(false, std::string("unary ") + op_name(op) + " on a float");
      return 0;
    } else if constexpr (std::is_same_v<T, bool>) {
      switch (op) {
        case UnaryOp::logic_not: case UnaryOp::bit_not: return v ? 0 : 1;
        default: return v ? 1 : 0;  // neg, abs, floor... of a bool: itself
      }
    } else {
      using U = std::make_unsigned_t<T>;
      switch (op) {
        case UnaryOp::neg: return to_bits<T>(static_cast<T>(U(0) - static_cast<U>(v)));
        case UnaryOp::logic_not: return v == 0 ? 1 : 0;
        case UnaryOp::bit_not: return to_bits<T>(static_cast<T>(~v));
        case UnaryOp::abs:
          if constexpr (std::is_signed_v<T>) {
            return to_bits<T>(v < 0 ? static_cast<T>(U(0) - static_cast<U>(v)) : v);
          }
          return to_bits<T>(v);
        case UnaryOp::floor: case UnaryOp::ceil: case UnaryOp::round:
          return to_bits<T>(v);
        // Counted over the type's own width: ctz and clz of 0 are the width.
        case UnaryOp::popcnt: return to_bits<T>(static_cast<T>(std::popcount(static_cast<U>(v))));
        case UnaryOp::clz: return to_bits<T>(static_cast<T>(std::countl_zero(static_cast<U>(v))));
        case UnaryOp::ctz: return to_bits<T>(static_cast<T>(std::countr_zero(static_cast<U>(v))));
        default: break;
      }
      GROVE_ASSERT(false, std::string("unary ") + op_name(op) + " on an integer (type_check casts it)");
      return 0;
    }
  });
}

uint64_t eval_binary(BinaryOp op, DataType t, uint64_t abits, uint64_t bbits) {
  return dispatch(t, [&]<typename T>() -> uint64_t {
    T a = from_bits<T>(abits);
    T b = from_bits<T>(bbits);
    switch (op) {
      case BinaryOp::cmp_lt: return a < b;
      case BinaryOp::cmp_le: return a <= b;
      case BinaryOp::cmp_gt: return a > b;
      case BinaryOp::cmp_ge: return a >= b;
      case BinaryOp::cmp_eq: return a == b;
      case BinaryOp::cmp_ne: return a != b;
      case BinaryOp::logic_and: return (a != T(0)) && (b != T(0));
      case BinaryOp::logic_or: return (a != T(0)) || (b != T(0));
      case BinaryOp::min: return to_bits<T>(b < a ? b : a);
      case BinaryOp::max: return to_bits<T>(a < b ? b : a);
      default: break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case BinaryOp::add: return to_bits<T>(a + b);
        case BinaryOp::sub: return to_bits<T>(a - b);
        case BinaryOp::mul: return to_bits<T>(a * b);
        case BinaryOp::div: return to_bits<T>(a / b);
        case BinaryOp::mod: return to_bits<T>(std::fmod(a, b));
        case BinaryOp::pow: return to_bits<T>(std::pow(a, b));
        case BinaryOp::atan2: return to_bits<T>(std::atan2(a, b));
        default: break;
      }
      GROVE_ASSERT(false, std::string("binary ") + op_name(op) + " on floats");
      return 0;
    } else if constexpr (std::is_same_v<T, bool>) {
      switch (op) {
        case BinaryOp::add: case BinaryOp::bit_xor: case BinaryOp::sub: return a != b;
        case BinaryOp::mul: case BinaryOp::bit_and: case BinaryOp::min: return a && b;
        case BinaryOp::bit_or: return a || b;
        case BinaryOp::div: return int_div(a, b);
        case BinaryOp::mod: return int_mod(a, b);
        case BinaryOp::pow: return a || !b;
        case BinaryOp::shl: case BinaryOp::shr: return a;  // the count modulo 1 is 0
        default: break;
      }
      GROVE_ASSERT(false, std::string("binary ") + op_name(op) + " on u1");
      return 0;
    } else {
      using U = std::make_unsigned_t<T>;
      // Products of narrow types are formed in `unsigned`: after the usual
      // promotion to int, 0xffff * 0xffff would overflow (undefined behaviour).
      using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
      constexpr int w = sizeof(T) * 8;
      U ua = static_cast<U>(a), ub = static_cast<U>(b);
      switch (op) {
        case BinaryOp::add: return to_bits<T>(static_cast<T>(static_cast<U>(ua + ub)));
        case BinaryOp::sub: return to_bits<T>(static_cast<T>(static_cast<U>(ua - ub)));
        case BinaryOp::mul: return to_bits<T>(static_cast<T>(static_cast<U>(W(ua) * W(ub))));
        case BinaryOp::div: return to_bits<T>(int_div(a, b));
        case BinaryOp::mod: return to_bits<T>(int_mod(a, b));
        case BinaryOp::bit_and: return to_bits<T>(static_cast<T>(ua & ub));
        case BinaryOp::bit_or: return to_bits<T>(static_cast<T>(ua | ub));
        case BinaryOp::bit_xor: return to_bits<T>(static_cast<T>(ua ^ ub));
        case BinaryOp::shl:
          return to_bits<T>(static_cast<T>(static_cast<U>(ua << (ub % w))));
        case BinaryOp::shr:
          return to_bits<T>(static_cast<T>(a >> (ub % w)));
        case BinaryOp::pow: {
          // Integer power by squaring; negative exponents give 0 (1 for a == 1).
          if constexpr (std::is_signed_v<T>) {
            // (b % 2, not -b % 2: -b overflows for the minimum value)
            if (b < 0) return to_bits<T>(a == 1 ? T(1) : (a == -1 ? (b % 2 != 0 ? T(-1) : T(1)) : T(0)));
          }
          U result = 1, base = ua, e = ub;
          while (e) {
            if (e & 1) result = static_cast<U>(W(result) * W(base));
            base = static_cast<U>(W(base) * W(base));
            e >>= 1;
          }
          return to_bits<T>(static_cast<T>(result));
        }
        default: break;
      }
      GROVE_ASSERT(false, std::string("binary ") + op_name(op) + " on integers (type_check casts it)");
      return 0;
    }
  });
}

uint64_t eval_atomic(AtomicOp op, DataType t, uint64_t old_value, uint64_t value) {
  switch (op) {
    case AtomicOp::add: return eval_binary(BinaryOp::add, t, old_value, value);
    case AtomicOp::sub: return eval_binary(BinaryOp::sub, t, old_value, value);
    case AtomicOp::min: return eval_binary(BinaryOp::min, t, old_value, value);
    case AtomicOp::max: return eval_binary(BinaryOp::max, t, old_value, value);
    case AtomicOp::bit_and: return eval_binary(BinaryOp::bit_and, t, old_value, value);
    case AtomicOp::bit_or: return eval_binary(BinaryOp::bit_or, t, old_value, value);
    case AtomicOp::bit_xor: return eval_binary(BinaryOp::bit_xor, t, old_value, value);
    case AtomicOp::exchange: return value;
  }
  return old_value;
}

}  // namespace grove::ir
