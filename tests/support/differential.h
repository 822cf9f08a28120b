// tests/support/differential.h — runs one program on the reference
// interpreter and on another backend and compares every output field bit
// for bit (tests/api/differential_test.cpp, tests/vulkan/differential_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "grove/grove.h"
#ifdef GROVE_RUNTIME_VULKAN
#include "runtime/vulkan/device.h"
#endif

namespace grove::testing {

// The bits of every element of a field, as read back from the host.
inline std::vector<uint64_t> field_bits(const Field& f) {
  std::vector<uint64_t> out;
  switch (f.dtype()) {
    case DataType::f32:
      for (float x : f.to_vector<float>()) out.push_back(std::bit_cast<uint32_t>(x));
      break;
    case DataType::f64:
      for (double x : f.to_vector<double>()) out.push_back(std::bit_cast<uint64_t>(x));
      break;
    case DataType::u64:
      for (uint64_t x : f.to_vector<uint64_t>()) out.push_back(x);
      break;
    default:
      for (int64_t x : f.to_vector<int64_t>()) out.push_back(static_cast<uint64_t>(x));
      break;
  }
  return out;
}

inline bool is_nan_bits(DataType t, uint64_t b) {
  if (t == DataType::f32) return std::isnan(std::bit_cast<float>(static_cast<uint32_t>(b)));
  if (t == DataType::f64) return std::isnan(std::bit_cast<double>(b));
  return false;
}

inline double as_double(DataType t, uint64_t bits) {
  return t == DataType::f32 ? static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits)))
                            : std::bit_cast<double>(bits);
}

// What Vulkan leaves to a driver (docs/ir.md, "Floats"), on a device other
// than lavapipe, whose results CI checks bit for bit: f32 denormals may be
// flushed to zero in and out of any operation where the device has no
// DenormPreserve (Grove declares it where the device has it), and f32
// division, sqrt and rsqrt are within Vulkan's precision (2.5 ulp; 2 ulp
// for rsqrt) rather than correctly rounded, with none promised for a
// divisor beyond 2^126 in magnitude. NVIDIA's driver 580 on an H200 flushed
// denormals and gave 1/300 and sqrt(1.5) one ulp off.
struct DriverLeeway {
  bool denormals = false;  // f32 denormals may become zero
  bool rounding = false;   // f32 div, sqrt, rsqrt within a few ulp
};

// The leeway of `device` (Program::device_name()) on `arch`.
inline DriverLeeway driver_leeway(Arch arch, const std::string& device) {
  if (arch != Arch::Vulkan || device.find("llvmpipe") != std::string::npos) return {};
  DriverLeeway l;
  l.rounding = true;
  l.denormals = true;
#ifdef GROVE_RUNTIME_VULKAN
  for (const vk::DeviceInfo& d : vk::enumerate_devices())
    if (d.name == device && d.denorm_preserve && d.api_version >= ((1u << 22) | (2u << 12)))  // Vulkan 1.2
      l.denormals = false;
#endif
  return l;
}

// The same for the device a Program of `config` runs on (it makes one: ask
// once per test).
inline DriverLeeway driver_leeway(const Config& config) {
  if (config.arch != Arch::Vulkan) return {};
  return driver_leeway(config.arch, Program(config).device_name());
}

inline bool is_f32_denormal(double x) { return x != 0.0 && std::fabs(x) < 1.1754943508222875e-38; }

// Builds the same program on a backend and returns the bits of `outputs`.
using Build = std::function<std::vector<Field>(Program&)>;

// `device`, where given, receives the device's name.
inline std::vector<std::vector<uint64_t>> run_on(const Config& config, const Build& build,
                                                 std::string* device = nullptr) {
  Program prog(config);
  if (device) *device = prog.device_name();
  std::vector<Field> outputs = build(prog);
  prog.sync();
  std::vector<std::vector<uint64_t>> bits;
  for (const Field& f : outputs) bits.push_back(field_bits(f));
  return bits;
}

// Transcendental results: within the precision docs/ir.md promises for the
// type (f32: 1e-5 of the result; f64, which Vulkan computes in f32: 1e-4 of
// the result, or of 1 for results below 1 in magnitude, as an f32 argument
// reduction leaves near a zero of sin), and nothing checked where the exact
// value leaves f32's range.
inline bool close_enough(DataType t, uint64_t want, uint64_t got) {
  double w = as_double(t, want), g = as_double(t, got);
  if (t == DataType::f64 && (std::fabs(w) > 3.0e38 || (w != 0.0 && std::fabs(w) < 1.2e-38))) return true;
  if (std::isinf(w) || std::isinf(g)) return w == g;
  if (t == DataType::f32) return std::fabs(w - g) <= 1e-5 * std::max(1e-30, std::fabs(w));
  return std::fabs(w - g) <= 1e-4 * std::max(1.0, std::fabs(w));
}

// Runs `build` on the interpreter and on `config`'s backend and compares the
// outputs bit for bit (any NaN equals any NaN); `loose[i]` compares output i
// with close_enough (transcendental functions); `skip(o, i)` leaves element
// i of output o unchecked. Where the driver may flush f32 denormals
// (driver_leeway), an f32 denormal result may be a zero.
inline void compare_with_interpreter(const Config& config, const Build& build, const std::vector<std::string>& names,
                                     const std::vector<DataType>& types, const std::vector<bool>& loose = {},
                                     const std::function<bool(size_t output, size_t element)>& skip = nullptr) {
  Config reference;
  reference.arch = Arch::Interp;
  auto want = run_on(reference, build);
  std::string device;
  auto got = run_on(config, build, &device);
  const bool flushing = driver_leeway(config.arch, device).denormals;
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(want[o].size(), got[o].size()) << names[o];
    int reported = 0;
    for (size_t i = 0; i < want[o].size(); ++i) {
      uint64_t w = want[o][i], g = got[o][i];
      if (w == g || (is_nan_bits(types[o], w) && is_nan_bits(types[o], g))) continue;
      if (o < loose.size() && loose[o] && close_enough(types[o], w, g)) continue;
      if (skip && skip(o, i)) continue;
      if (flushing && types[o] == DataType::f32 && is_f32_denormal(as_double(types[o], w)) &&
          (g & 0x7fffffffu) == 0)
        continue;
      if (reported++ < 5)
        ADD_FAILURE() << names[o] << " element " << i << ": interpreter 0x" << std::hex << w << ", "
                      << arch_name(config.arch) << " 0x" << g;
    }
  }
}

}  // namespace grove::testing
