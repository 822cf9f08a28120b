// runtime/core/scalar.cpp — conversions and formatting of scalar bit patterns.
#include "runtime/core/scalar.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/core/scalar_detail.h"

namespace grove::rt {

using namespace scalar_detail;

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

uint64_t cast_bits(DataType from, DataType to, uint64_t bits) {
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

uint64_t load_element(std::span<const uint32_t> words, int64_t address, DataType dtype) {
  auto a = static_cast<size_t>(address);
  uint64_t bits = words[a];
  if (storage_words(dtype) == 2) bits |= static_cast<uint64_t>(words[a + 1]) << 32;
  if (dtype == DataType::f16) return cast_bits(DataType::f16, DataType::f32, bits & 0xffffu);
  return cast_bits(dtype, dtype, bits);  // truncates to the type's width
}

void store_element(std::span<uint32_t> words, int64_t address, DataType dtype, uint64_t value) {
  auto a = static_cast<size_t>(address);
  if (dtype == DataType::f16) value = cast_bits(DataType::f32, DataType::f16, value);
  words[a] = static_cast<uint32_t>(value);
  if (storage_words(dtype) == 2) words[a + 1] = static_cast<uint32_t>(value >> 32);
}

std::string format_print(std::string_view format, std::span<const std::string> values) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '{' && i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (c == '}' && i + 1 < format.size() && format[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (c == '{' && i + 1 < format.size() && format[i + 1] == '}') {
      out += next < values.size() ? values[next] : std::string("{}");
      ++next;
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

std::string describe_value(DataType t, uint64_t bits) {
  return format_value(t, bits) + " (" + std::string(type_name(t)) + ")";
}

namespace {

bool integer_fits(__int128 v, DataType to) {
  if (to == DataType::u1) return v == 0 || v == 1;
  const int w = bit_width(to);
  if (is_signed(to)) return v >= -(static_cast<__int128>(1) << (w - 1)) && v < (static_cast<__int128>(1) << (w - 1));
  return v >= 0 && v < (static_cast<__int128>(1) << w);
}

double float_max(DataType t) {
  return t == DataType::f16 ? 65504.0 : t == DataType::f32 ? 3.4028234663852886e38 : 1.7976931348623157e308;
}

}  // namespace

std::string argument_problem(DataType from, uint64_t bits, DataType to) {
  // (Worked out only for a value that does not convert: host copies ask for every value.)
  auto out_of_range = [&] {
    return describe_value(from, bits) + ", which is out of the range of " + std::string(type_name(to));
  };
  if (from == to && from != DataType::u1) return "";  // every value of a type is one of that type
  if (is_integral(from)) {
    const __int128 v = is_signed(from) ? static_cast<__int128>(bits_to_int(from, bits))
                                       : static_cast<__int128>(static_cast<uint64_t>(bits_to_int(from, bits)));
    if (is_integral(to) && !integer_fits(v, to)) return out_of_range();
    // In doubles: a float type's largest value (3.4e38 for f32) is past
    // what an __int128 holds, so converting it would be undefined. Any
    // 64-bit integer is within f32's and f64's range; only f16's can be
    // left, by far enough that rounding v to a double cannot hide it.
    if (is_float(to) && std::fabs(static_cast<double>(v)) > float_max(to)) return out_of_range();
    return "";
  }
  const double d = bits_to_double(from, bits);
  if (is_integral(to)) {
    if (std::isnan(d) || std::isinf(d)) return describe_value(from, bits) + ", which has no " + std::string(type_name(to)) + " value";
    const double t = std::trunc(d);
    // Every integer type's bounds are powers of two, exact in a double.
    const double lo = is_signed(to) ? -std::ldexp(1.0, bit_width(to) - 1) : 0.0;
    const double hi = std::ldexp(1.0, is_signed(to) ? bit_width(to) - 1 : bit_width(to));
    if (!(t >= lo && t < hi)) return out_of_range();
    if (t != d)
      return describe_value(from, bits) + ", which is not a whole number (" + std::string(type_name(to)) +
             " holds whole numbers only)";
  } else if (std::isfinite(d) && std::fabs(d) > float_max(to)) {
    return out_of_range();
  }
  return "";
}

uint64_t convert_argument(DataType from, uint64_t bits, DataType to) {
  const uint64_t v = cast_bits(from, to, bits);
  return to == compute_type(to) ? v : cast_bits(to, compute_type(to), v);
}

}  // namespace grove::rt
