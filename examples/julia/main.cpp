// julia — renders a Julia set with a Grove kernel, frame by frame in a window
// while there is a display, and writes the last frame as out/julia.png.
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
#include "viewer.h"

namespace {

using namespace grove;

constexpr int kMaxIterations = 50;

// The field and the kernel; render(t) runs one frame at time `t` and returns
// the pixels (row-major over (2n, n): index i * n + j), each in [0, 1].
struct Julia {
  Julia(Program& prog, int n) : prog(prog), pixels(prog.field(f32, "pixels", {2 * n, n})) {
    paint = prog.kernel("paint", {arg(f32, "t")}, [&](Args a) {
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
  }
  std::vector<float> render(float t) {
    paint(t);
    prog.sync();
    return pixels.to_vector<float>();
  }
  Program& prog;
  Field pixels;
  Kernel paint;
};

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
      const size_t p =
          (static_cast<size_t>(n - 1 - j) * static_cast<size_t>(width) + static_cast<size_t>(i)) *
          3;
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
      .summary =
          "Renders the Julia set of c = (-0.8, cos(t) * 0.2) for frames at t = 0, 0.03, ... and "
          "writes "
          "the last as DIR/julia.png.",
      .size_help = "image height in pixels (the width is 2N)",
      .default_size = 320,
      .max_size = 4096,
      .default_steps = 1,
  };
  grove_examples::Options options;
  if (const auto code = grove_examples::parse_options(argc, argv, info, &options)) return *code;

  try {
    const int n = options.size;
    grove_examples::Viewer viewer(options, "julia", 2 * n, n);
    Program prog(viewer.config());
    std::printf("julia: running on %s\n", std::string(arch_name(prog.arch())).c_str());
    Julia julia(prog, n);
    std::vector<uint8_t> rgb;
    for (int frame = 0; frame < options.steps; ++frame) {
      rgb = colour(julia.render(0.03f * static_cast<float>(frame)), n);
      if (!viewer.show(rgb)) break;  // closed
    }
    viewer.finish(options.out_dir / "julia.png", rgb);
  } catch (const grove::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
