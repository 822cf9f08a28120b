// image.cpp — PNG output through stb_image_write.
#include "image.h"

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

}  // namespace grove_examples
