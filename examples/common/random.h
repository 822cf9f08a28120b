// random.h — the examples' fixed pseudo-random numbers (a 32-bit LCG), so
// that a run, its test and its benchmark start from the same state.
#pragma once

#include <cstdint>
#include <vector>

namespace grove_examples {

// `count` floats in [lo, lo + width), from the LCG seeded with `seed`.
inline std::vector<float> uniform_floats(size_t count, float lo, float width, std::uint32_t seed) {
  std::vector<float> out(count);
  for (float& v : out) {
    seed = seed * 1664525u + 1013904223u;
    v = lo + width * static_cast<float>(seed >> 8) / 16777216.0f;
  }
  return out;
}

}  // namespace grove_examples
