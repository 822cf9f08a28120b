// runtime/core/scalar.h — scalar values as bit patterns: conversions between
// types (docs/ir.md, "casts"), f16, storage in tree words, and the text
// `print` shows. Shared by the compiler (constant folding, the interpreter)
// and the runtime (arguments, host reads and writes, print formatting), so
// both agree exactly.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "grove/types.h"

namespace grove::rt {

// Values are bit patterns in the low bits of a uint64_t; integers are kept
// truncated to their width (not sign-extended), f32 as its 32-bit pattern.
uint64_t cast_bits(DataType from, DataType to, uint64_t bits);
double bits_to_double(DataType t, uint64_t bits);
int64_t bits_to_int(DataType t, uint64_t bits);  // sign- or zero-extended
uint64_t double_to_bits(DataType t, double v);   // float t: rounds; integral t: casts
uint64_t int_to_bits(DataType t, int64_t v);
// f16 storage conversions (round to nearest even).
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
// Formats a value the way `print` shows it (floats in shortest round-trip form).
std::string format_value(DataType t, uint64_t bits);
// Expands a print format ("{}" per value, "{{" and "}}" for braces).
std::string format_print(std::string_view format, std::span<const std::string> values);
// Reads / writes one element of a field's storage at a word address, with
// the storage conversions of docs/ir.md (value bits in compute_type(dtype)).
uint64_t load_element(std::span<const uint32_t> words, int64_t address, DataType dtype);
void store_element(std::span<uint32_t> words, int64_t address, DataType dtype, uint64_t value);

// "2.5 (f32)": a value and its type, for messages.
std::string describe_value(DataType t, uint64_t bits);
// Host values given to a kernel argument or stored in a field (one rule for
// every API: the Program's and the runtime's kernels and fields, and the C
// API). A value converts when it keeps its value: an integer that `to`
// holds, a float that is a whole number `to` holds (2.5 is no i32), a float
// within a narrower float's range (rounded). NaN, infinity, a fraction or a
// value outside the range does not. argument_problem says why not ("3e+09
// (f64), which is out of the range of i32"), or is empty; convert_argument
// gives the bits in `to`'s compute type.
std::string argument_problem(DataType from, uint64_t bits, DataType to);
uint64_t convert_argument(DataType from, uint64_t bits, DataType to);

}  // namespace grove::rt
