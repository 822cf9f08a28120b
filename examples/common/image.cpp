// image.cpp — PNG output through stb_image_write.
#include "image.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <stb_image_write.h>

namespace grove_examples {

void write_png(const std::filesystem::path& path, int width, int height, int channels,
               const std::vector<uint8_t>& pixels) {
  const size_t expected =
      static_cast<size_t>(width) * static_cast<size_t>(height) * static_cast<size_t>(channels);
  if (width <= 0 || height <= 0 || channels < 1 || channels > 4 || pixels.size() != expected) {
    throw std::runtime_error("write_png: " + std::to_string(pixels.size()) +
                             " bytes do not make a " + std::to_string(width) + "x" +
                             std::to_string(height) + " image of " + std::to_string(channels) +
                             " channel(s)");
  }
  if (stbi_write_png(path.c_str(), width, height, channels, pixels.data(), width * channels) == 0) {
    throw std::runtime_error("could not write " + path.string());
  }
}

uint8_t to_byte(float v) {
  if (!(v > 0.0f)) return 0;  // also catches NaN
  if (v >= 1.0f) return 255;
  return static_cast<uint8_t>(v * 255.0f + 0.5f);
}

std::vector<uint8_t> plot_particles(const std::vector<float>& positions, int dims, int size,
                                    const uint8_t (&color)[3]) {
  std::vector<uint8_t> rgb(static_cast<size_t>(size) * static_cast<size_t>(size) * 3, 17);
  for (size_t q = 0; q + static_cast<size_t>(dims) <= positions.size(); q += static_cast<size_t>(dims)) {
    const int i = static_cast<int>(positions[q] * static_cast<float>(size));
    const int j = static_cast<int>((1.0f - positions[q + 1]) * static_cast<float>(size));
    if (i < 0 || j < 0 || i >= size || j >= size) continue;
    const float shade = dims < 3 ? 1.0f : std::clamp(1.2f - positions[q + 2], 0.2f, 1.0f);
    const size_t p = (static_cast<size_t>(j) * static_cast<size_t>(size) + static_cast<size_t>(i)) * 3;
    for (int c = 0; c < 3; ++c)
      rgb[p + c] = std::max(rgb[p + c], static_cast<uint8_t>(static_cast<float>(color[c]) * shade));
  }
  return rgb;
}

}  // namespace grove_examples
