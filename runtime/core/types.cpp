// runtime/core/types.cpp — properties of grove::DataType.
#include "grove/types.h"

#include <array>

namespace grove {

namespace {
constexpr std::array<std::string_view, 13> kNames = {
    "unknown", "u1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"};
}

std::string_view type_name(DataType t) {
  if (t == real) return "real";
  return static_cast<size_t>(t) < kNames.size() ? kNames[static_cast<size_t>(t)] : "unknown";
}

DataType parse_type(std::string_view name) {
  for (size_t i = 1; i < kNames.size(); ++i)
    if (kNames[i] == name) return static_cast<DataType>(i);
  return DataType::unknown;
}

bool is_float(DataType t) { return t == DataType::f16 || t == DataType::f32 || t == DataType::f64; }

bool is_integral(DataType t) { return t != DataType::unknown && !is_float(t); }

bool is_signed(DataType t) {
  switch (t) {
    case DataType::i8: case DataType::i16: case DataType::i32: case DataType::i64:
    case DataType::f16: case DataType::f32: case DataType::f64:
      return true;
    default:
      return false;
  }
}

int bit_width(DataType t) {
  switch (t) {
    case DataType::unknown: return 0;
    case DataType::u1: return 1;
    case DataType::i8: case DataType::u8: return 8;
    case DataType::i16: case DataType::u16: case DataType::f16: return 16;
    case DataType::i32: case DataType::u32: case DataType::f32: return 32;
    case DataType::i64: case DataType::u64: case DataType::f64: return 64;
  }
  return 0;
}

DataType compute_type(DataType t) { return t == DataType::f16 ? DataType::f32 : t; }

int storage_words(DataType t) { return bit_width(t) == 64 ? 2 : 1; }

}  // namespace grove
