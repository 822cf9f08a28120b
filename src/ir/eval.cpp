// src/ir/eval.cpp — scalar arithmetic of docs/ir.md on bit patterns.
#include "ir/eval.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ir/assert.h"

namespace grove::ir {

namespace {

uint64_t mask_bits(DataType t, uint64_t v) {
  int w = bit_width(t);
  return w >= 64 ? v : (v & ((uint64_t{1} << w) - 1));
}

template <typename T>
T from_bits(uint64_t bits) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(static_cast<uint32_t>(bits));
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<double>(bits);
  } else if constexpr (std::is_same_v<T, bool>) {
    return (bits & 1) != 0;
  } else {
    return static_cast<T>(bits);
  }
}

template <typename T>
uint64_t to_bits(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<uint32_t>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<uint64_t>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else {
    return static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(v));
  }
}

// Calls f.template operator()<T>() with the C++ type of t (f16 computes as float).
template <typename F>
auto dispatch(DataType t, F&& f) {
  switch (t) {
    case DataType::u1: return f.template operator()<bool>();
    case DataType::i8: return f.template operator()<int8_t>();
    case DataType::i16: return f.template operator()<int16_t>();
    case DataType::i32: return f.template operator()<int32_t>();
    case DataType::i64: return f.template operator()<int64_t>();
    case DataType::u8: return f.template operator()<uint8_t>();
    case DataType::u16: return f.template operator()<uint16_t>();
    case DataType::u32: return f.template operator()<uint32_t>();
    case DataType::u64: return f.template operator()<uint64_t>();
    case DataType::f16: case DataType::f32: return f.template operator()<float>();
    case DataType::f64: return f.template operator()<double>();
    case DataType::unknown: break;
  }
  GROVE_ASSERT(false, "arithmetic on a value of unknown type");
  return f.template operator()<int32_t>();
}

// Float -> integer: truncate, saturate out of range, NaN -> 0.
template <typename I>
I float_to_int(double d) {
  if (std::isnan(d)) return 0;
  if constexpr (std::is_same_v<I, bool>) {
    return d != 0.0;
  } else {
    double lo = static_cast<double>(std::numeric_limits<I>::min());
    double hi = static_cast<double>(std::numeric_limits<I>::max());
    if (d <= lo) return std::numeric_limits<I>::min();
    if (d >= hi) return std::numeric_limits<I>::max();
    return static_cast<I>(d);
  }
}

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

uint16_t f32_to_f16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t man = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0u));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000u;
    int shift = 14 - e;
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (man == 0) {
      x = sign;
    } else {
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400u) == 0);
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (man << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  return std::bit_cast<float>(x);
}

namespace {
// double -> f16 in one rounding. Narrowing to float first and then to f16
// would round twice (a double just above an f16 halfway point can land on it
// as a float and then tie to even the wrong way), so the float step rounds
// to odd: truncate, and set the last bit when inexact. Float keeps 13 more
// bits than f16, enough for the second rounding to be exact.
uint16_t f64_to_f16(double d) {
  float f = static_cast<float>(d);
  if (!std::isnan(d) && static_cast<double>(f) != d) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
    f = std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
  }
  return f32_to_f16(f);
}
}  // namespace

double bits_to_double(DataType t, uint64_t bits) {
  if (t == DataType::f16) return f16_to_f32(static_cast<uint16_t>(bits));
  return dispatch(t, [&]<typename T>() { return static_cast<double>(from_bits<T>(bits)); });
}

int64_t bits_to_int(DataType t, uint64_t bits) {
  if (is_float(t)) return float_to_int<int64_t>(bits_to_double(t, bits));
  return dispatch(t, [&]<typename T>() { return static_cast<int64_t>(from_bits<T>(bits)); });
}

uint64_t double_to_bits(DataType t, double v) {
  if (t == DataType::f16) return f64_to_f16(v);
  return dispatch(t, [&]<typename T>() -> uint64_t {
    if constexpr (std::is_floating_point_v<T>) {
      return to_bits(static_cast<T>(v));
    } else {
      return to_bits(float_to_int<T>(v));
    }
  });
}

uint64_t int_to_bits(DataType t, int64_t v) {
  if (t == DataType::f16) return f32_to_f16(static_cast<float>(v));
  return dispatch(t, [&]<typename T>() -> uint64_t {
    if constexpr (std::is_same_v<T, bool>) return v != 0 ? 1 : 0;
    return to_bits(static_cast<T>(v));
  });
}

uint64_t eval_cast(DataType from, DataType to, uint64_t bits) {
  if (from == to) return mask_bits(to, bits);
  if (to == DataType::u1) {
    if (is_float(from)) return bits_to_double(from, bits) != 0.0 ? 1 : 0;
    return mask_bits(from, bits) != 0 ? 1 : 0;
  }
  if (is_float(from)) return double_to_bits(to, bits_to_double(from, bits));
  // Integral source: unsigned 64-bit values must not go through int64_t for
  // floats, nor through double for f32 (that would round twice).
  if (from == DataType::u64 && is_float(to)) {
    if (to == DataType::f64) return to_bits(static_cast<double>(bits));
    float f = static_cast<float>(bits);
    return to == DataType::f32 ? to_bits(f) : f32_to_f16(f);
  }
  return int_to_bits(to, bits_to_int(from, bits));
}

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

std::string format_value(DataType t, uint64_t bits) {
  if (is_float(t)) {
    char buf[64];
    std::to_chars_result r;
    if (t == DataType::f64) {
      r = std::to_chars(buf, buf + sizeof buf, std::bit_cast<double>(bits));
    } else {
      float f = t == DataType::f16 ? f16_to_f32(static_cast<uint16_t>(bits))
                                   : std::bit_cast<float>(static_cast<uint32_t>(bits));
      r = std::to_chars(buf, buf + sizeof buf, f);
    }
    return std::string(buf, r.ptr);
  }
  if (is_signed(t)) return std::to_string(bits_to_int(t, bits));
  return std::to_string(mask_bits(t, bits));
}

}  // namespace grove::ir
