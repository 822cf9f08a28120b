// julia — renders a Julia set with a Grove kernel and writes it as out/julia.png.
//
// The same program as Taichi's fractal.py: a dense 2-D field of f32 pixels,
// one kernel with the frame time as its argument, and a struct-for that runs
// the escape-time iteration z = z^2 + c for every pixel.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "image.h"
#include "options.h"

namespace {

using namespace grove;

constexpr int kMaxIterations = 50;

// Builds the field and the kernel, runs one frame at time `t`, returns the
// pixels (row-major over (2n, n): index i * n + j), each in [0, 1].
std::vector<float> render(Program& prog, int n, float t) {
  Field pixels = prog.field(f32, "pixels", {2 * n, n});

  Kernel paint = prog.kernel("paint", {arg(f32, "t")}, [&](Args a) {
    for_each(pixels, [&](Expr i, Expr j) {
      const Expr cr = -0.8f;
      const Expr ci = cos(a[0]) * 0.2f;
      // z starts at the pixel's position in [-2, 2] x [-1, 1].
      Var zr = (cast<float>(i) / static_cast<float>(n) - 1.0f) * 2.0f;
      Var zi = (cast<float>(j) / static_cast<float>(n) - 0.5f) * 2.0f;
      Var iterations(i32, 0);
      while_([&] { return iterations < kMaxIterations; },
             [&] {
               if_(zr * zr + zi * zi >= 400.0f, [] { break_(); });  // |z| >= 20
               const Expr next_r = zr * zr - zi * zi + cr;
               const Expr next_i = 2.0f * zr * zi + ci;
               zr = next_r;
               zi = next_i;
               iterations += 1;
             });
      pixels(i, j) = 1.0f - cast<float>(iterations) * (1.0f / kMaxIterations);
    });
  });

  paint(t);
  prog.sync();
  return pixels.to_vector<float>();
}

// Maps the field to an RGB image 2n wide and n high, with j growing upward as
// in Taichi's GUI. Slow-escaping points are bright, the set itself is dark.
std::vector<uint8_t> colour(const std::vector<float>& v, int n) {
  const int width = 2 * n;
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * static_cast<size_t>(n) * 3);
  for (int i = 0; i < width; ++i) {
    for (int j = 0; j < n; ++j) {
      const float s = 1.0f - v[static_cast<size_t>(i) * static_cast<size_t>(n) +
                               static_cast<size_t>(j)];  // share of iterations used
      const float u = 1.0f - s;
      const size_t p = (static_cast<size_t>(n - 1 - j) * static_cast<size_t>(width) +
                        static_cast<size_t>(i)) * 3;
      rgb[p + 0] = grove_examples::to_byte(9.0f * u * s * s * s);
      rgb[p + 1] = grove_examples::to_byte(15.0f * u * u * s * s);
      rgb[p + 2] = grove_examples::to_byte(8.5f * u * u * u * s);
    }
  }
  return rgb;
}

}  // namespace

int main(int argc, char** argv) {
  const grove_examples::ExampleInfo info{
      .name = "julia",
      .summary = "Renders the Julia set of c = (-0.8, cos(t) * 0.2) at t = 0 and writes "
                 "DIR/julia.png.",
      .size_help = "image height in pixels (the width is 2N)",
      .default_size = 320,
      .max_size = 4096,
  };
  grove_examples::Options options;
  if (const auto code = grove_examples::parse_options(argc, argv, info, &options)) return *code;

  try {
    Program prog(options.config());
    std::printf("julia: running on %s\n", std::string(arch_name(prog.arch())).c_str());

    const int n = options.size;
    const std::vector<float> pixels = render(prog, n, 0.0f);

    grove_examples::make_out_dir(options.out_dir);
    const std::filesystem::path file = options.out_dir / "julia.png";
    grove_examples::write_png(file, 2 * n, n, 3, colour(pixels, n));
    std::printf("julia: wrote %s (%dx%d)\n", file.string().c_str(), 2 * n, n);
  } catch (const grove::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
