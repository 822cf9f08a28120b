// grove/types.h — the scalar data types of fields, kernel arguments and IR values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace grove {

// Every scalar type Grove knows. `u1` is the boolean produced by comparisons.
// `f16` is a storage type: fields and arguments may be f16, arithmetic on
// their values happens in f32 (see compute_type).
enum class DataType : uint8_t {
  unknown,
  u1,
  i8,
  i16,
  i32,
  i64,
  u8,
  u16,
  u32,
  u64,
  f16,
  f32,
  f64,
};

inline constexpr DataType u1 = DataType::u1;
inline constexpr DataType i8 = DataType::i8;
inline constexpr DataType i16 = DataType::i16;
inline constexpr DataType i32 = DataType::i32;
inline constexpr DataType i64 = DataType::i64;
inline constexpr DataType u8 = DataType::u8;
inline constexpr DataType u16 = DataType::u16;
inline constexpr DataType u32 = DataType::u32;
inline constexpr DataType u64 = DataType::u64;
inline constexpr DataType f16 = DataType::f16;
inline constexpr DataType f32 = DataType::f32;
inline constexpr DataType f64 = DataType::f64;
// The Program's float type, Config::default_fp (Taichi's `float` as a
// dtype): a field, kernel argument, cast, constant or Var declared `real`
// is f32 or f64 as the Program's Config says, so that one setting moves a
// simulation between precisions. Not a type of its own: the Program
// resolves it where it is given (type_name says "real").
inline constexpr DataType real = static_cast<DataType>(0x80);

// "i32", "f16", ...; "unknown" for DataType::unknown.
std::string_view type_name(DataType t);
// Inverse of type_name; DataType::unknown when `name` is not a type.
DataType parse_type(std::string_view name);

bool is_float(DataType t);     // f16, f32, f64
bool is_integral(DataType t);  // u1 and every integer type
bool is_signed(DataType t);    // i8..i64 and the floats
int bit_width(DataType t);     // 1 for u1, 16 for f16, ...
// The type arithmetic happens in: f16 -> f32, every other type -> itself.
DataType compute_type(DataType t);
// Number of 32-bit words a value of this type occupies in a tree buffer:
// 2 for 64-bit types, 1 for everything else (narrow types are widened).
int storage_words(DataType t);

// Maps a C++ type to its DataType: type_of<float>() == f32.
template <typename T>
constexpr DataType type_of();
template <> constexpr DataType type_of<bool>() { return DataType::u1; }
template <> constexpr DataType type_of<int8_t>() { return DataType::i8; }
template <> constexpr DataType type_of<int16_t>() { return DataType::i16; }
template <> constexpr DataType type_of<int32_t>() { return DataType::i32; }
template <> constexpr DataType type_of<int64_t>() { return DataType::i64; }
template <> constexpr DataType type_of<uint8_t>() { return DataType::u8; }
template <> constexpr DataType type_of<uint16_t>() { return DataType::u16; }
template <> constexpr DataType type_of<uint32_t>() { return DataType::u32; }
template <> constexpr DataType type_of<uint64_t>() { return DataType::u64; }
template <> constexpr DataType type_of<float>() { return DataType::f32; }
template <> constexpr DataType type_of<double>() { return DataType::f64; }

}  // namespace grove
