// image.h — writing 8-bit images from the examples.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace grove_examples {

// Writes a PNG of width x height pixels with `channels` bytes each (1 = gray,
// 3 = RGB, 4 = RGBA), rows top to bottom. Throws std::runtime_error on failure.
void write_png(const std::filesystem::path& path, int width, int height, int channels,
               const std::vector<uint8_t>& pixels);

// A value in [0, 1] (clamped) as a byte.
uint8_t to_byte(float v);

// Particles as dots on a dark size x size RGB image: `positions` holds
// `dims` floats per particle (2 or 3), x to the right and y up over [0, 1];
// a third coordinate z shades a dot (nearer z = 0 brighter), the brightest
// dot of a pixel kept.
std::vector<uint8_t> plot_particles(const std::vector<float>& positions, int dims, int size,
                                    const uint8_t (&color)[3]);

}  // namespace grove_examples
