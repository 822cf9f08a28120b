// smoke_sparse — 2-D smoke rising from a source, on a grid of pointer blocks
// that follow the smoke (smoke.h: advection, buoyancy, a Jacobi pressure
// projection over the active cells, blocks grown and freed every step).
// Prints the active blocks as it goes, and writes the density of the last
// step, with the active blocks outlined, as DIR/smoke_sparse.png (and every
// step in a window while there is a display).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "image.h"
#include "options.h"
#include "smoke.h"
#include "viewer.h"

int main(int argc, char** argv) {
  const grove_examples::ExampleInfo info{
      .name = "smoke_sparse",
      .summary =
          "Simulates smoke rising from a source on a grid of pointer blocks that follow it, prints "
          "the "
          "active blocks and writes DIR/smoke_sparse.png.",
      .size_help = "grid cells per side (a multiple of 8)",
      .default_size = 256,
      .max_size = 2048,
      .default_steps = 200,
  };
  grove_examples::Options options;
  if (const auto code = grove_examples::parse_options(argc, argv, info, &options)) return *code;
  if (options.size % 8 != 0 || options.size < 32) {
    std::fprintf(stderr, "smoke_sparse: --size must be a multiple of 8, at least 32\n");
    return 2;
  }
  try {
    grove_examples::Viewer viewer(options, "smoke_sparse", options.size, options.size);
    grove::Program prog(viewer.config());
    smoke::Params params;
    params.grid = options.size;
    const int nb = params.grid / params.block;
    std::printf("smoke_sparse: running on %s: a %d^2 grid in %d^2 blocks of %d^2\n",
                std::string(grove::arch_name(prog.arch())).c_str(), params.grid, nb, params.block);
    smoke::Simulation sim(prog, params);
    // Density as gray, y up; the edges of active blocks in orange.
    const int n = params.grid;
    grove::Field marks = prog.field(grove::i32, "marks", {nb, nb});
    grove::Kernel mark = prog.kernel("mark", [&] {
      grove::for_range({nb, nb}, [&](grove::Expr bi, grove::Expr bj) { marks(bi, bj) = 0; });
      grove::for_each(*sim.blocks, [&](grove::Expr bi, grove::Expr bj) { marks(bi, bj) = 1; });
    });
    auto draw = [&] {
      const std::vector<float> dens = sim.dens.to_vector<float>();
      std::vector<uint8_t> rgb(static_cast<size_t>(n) * n * 3, 0);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          const size_t p = (static_cast<size_t>(n - 1 - j) * n + i) * 3;
          const uint8_t g = grove_examples::to_byte(dens[static_cast<size_t>(i) * n + j]);
          rgb[p] = rgb[p + 1] = rgb[p + 2] = g;
        }
      mark();
      const std::vector<int32_t> active = marks.to_vector<int32_t>();
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          const bool edge = i % params.block == 0 || j % params.block == 0;
          if (!edge || active[static_cast<size_t>(i / params.block) * nb + j / params.block] == 0)
            continue;
          const size_t p = (static_cast<size_t>(n - 1 - j) * n + i) * 3;
          rgb[p] = 237;
          rgb[p + 1] = 120;
          rgb[p + 2] = 40;
        }
      return rgb;
    };
    const int every = std::max(1, options.steps / 10);
    for (int s = 1; s <= options.steps; ++s) {
      sim.step();
      if (s % every == 0 || s == options.steps)
        std::printf("step %4d: %lld of %d blocks active\n", s,
                    static_cast<long long>(sim.active_blocks(prog)), nb * nb);
      if (viewer.has_window() && !viewer.show(draw())) break;  // closed
    }
    viewer.finish(options.out_dir / "smoke_sparse.png", draw());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
