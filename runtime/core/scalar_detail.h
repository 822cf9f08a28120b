// runtime/core/scalar_detail.h — the C++ types behind DataType, for code that
// computes on bit patterns (runtime/core/scalar.cpp, src/ir/eval.cpp).
// Internal: not part of any public interface.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "grove/types.h"
#include "runtime/core/assert.h"

namespace grove::rt::scalar_detail {

inline uint64_t mask_bits(DataType t, uint64_t v) {
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


}  // namespace grove::rt::scalar_detail
