// sparse_life — Conway's Game of Life on a huge sparse grid.
//
// The domain is N x N cells (16384 x 16384 by default: 268 million cells),
// stored as `pointer` blocks of 8 x 8 dense cells. Only blocks near live
// cells exist: counting neighbours writes into the neighbours' blocks (which
// activates them), and blocks that end a step without a live cell are
// deactivated, so memory and time follow the live population, not N^2.
// Each step prints the number of active blocks; every few steps a PNG frame
// (and, while there is a display, every step in a window) shows the cells
// around the centre next to a map of the active blocks of the domain.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "image.h"
#include "life.h"
#include "options.h"
#include "viewer.h"

namespace {

using namespace grove;
using namespace sparse_life;

constexpr int kSide = kView * kZoom, kWidth = kSide + 8 + kMap;  // a frame, in pixels

// A frame: the cells around the centre, magnified, beside the map of the
// domain's active blocks.
std::vector<uint8_t> draw_frame(Life& life, Program& prog) {
  life.snapshot(life.world, life.n / 2, life.n / 2);
  prog.sync();
  std::vector<uint8_t> cells = life.world.field("view").to_vector<uint8_t>();
  std::vector<uint8_t> blocks = life.world.field("map").to_vector<uint8_t>();
  const int side = kSide, width = kWidth;
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * side * 3, 24);
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x) {
      size_t p = (static_cast<size_t>(y) * width + x) * 3;
      bool on = cells[static_cast<size_t>(x / kZoom) * kView + static_cast<size_t>(y / kZoom)] != 0;
      bool edge = x % kZoom == kZoom - 1 || y % kZoom == kZoom - 1;
      rgb[p] = on ? (edge ? 200 : 250) : 10;
      rgb[p + 1] = on ? (edge ? 170 : 220) : 14;
      rgb[p + 2] = on ? (edge ? 90 : 120) : 30;
    }
  for (int y = 0; y < kMap; ++y)
    for (int x = 0; x < kMap; ++x) {
      size_t p = (static_cast<size_t>(y) * width + side + 8 + x) * 3;
      bool on = blocks[static_cast<size_t>(x) * kMap + static_cast<size_t>(y)] != 0;
      rgb[p] = on ? 90 : 16;
      rgb[p + 1] = on ? 200 : 20;
      rgb[p + 2] = on ? 255 : 40;
    }
  return rgb;
}

}  // namespace

int main(int argc, char** argv) {
  const grove_examples::ExampleInfo info{
      .name = "sparse_life",
      .summary =
          "Conway's Game of Life on an N x N sparse grid of pointer blocks; prints the "
          "active blocks per step and writes DIR/sparse_life_NNNN.png frames.",
      .size_help = "cells per side of the domain (a multiple of 8; only live areas use memory)",
      .default_size = 16384,
      .max_size = 65536,
      .default_steps = 48,
  };
  grove_examples::Options options;
  if (const auto code = grove_examples::parse_options(argc, argv, info, &options)) return *code;
  if (options.size % kBlock != 0 || options.size < kView) {
    std::fprintf(stderr, "sparse_life: --size must be a multiple of %d and at least %d\n", kBlock,
                 kView);
    return 2;
  }
  try {
    grove_examples::Viewer viewer(options, "sparse_life", kWidth, kSide);
    Program prog(viewer.config());
    std::printf("sparse_life: running on %s (%s), %d x %d cells in %d x %d blocks\n",
                std::string(arch_name(prog.arch())).c_str(), prog.device_name().c_str(),
                options.size, options.size, options.size / kBlock, options.size / kBlock);
    Life life(prog, options.size);
    const int n = options.size;
    // One patch in the window at the centre, the others scattered over the domain.
    for (int p = 0; p < kPatches; ++p) {
      int x = p == 0 ? n / 2 - kPatch / 2
                     : static_cast<int>((2654435761u * static_cast<uint32_t>(p)) %
                                        static_cast<uint32_t>(n - kPatch));
      int y = p == 0 ? n / 2 - kPatch / 2
                     : static_cast<int>((40503u * static_cast<uint32_t>(p * p + 7)) %
                                        static_cast<uint32_t>(n - kPatch));
      life.seed(life.world, x, y, static_cast<uint32_t>(p * 7919 + 1));
    }
    grove_examples::make_out_dir(options.out_dir);
    const int every = std::max(1, options.steps / 4);
    for (int s = 0; s <= options.steps; ++s) {
      if (s > 0) life.step();
      prog.sync();
      const SNodeStats b = life.world.stats().at(life.blocks->name());
      std::printf("step %4d: %6lld active blocks (%lld cells of %lld)\n", s,
                  static_cast<long long>(b.active_cells),
                  static_cast<long long>(b.active_cells * 64), static_cast<long long>(n) * n);
      const bool keep = s % every == 0 || s == options.steps;
      if (!keep && !viewer.has_window()) continue;
      const std::vector<uint8_t> rgb = draw_frame(life, prog);
      if (!viewer.show(rgb)) break;  // closed
      if (!keep) continue;
      char name[64];
      std::snprintf(name, sizeof name, "sparse_life_%04d.png", s);
      if (s == options.steps) {
        viewer.finish(options.out_dir / name, rgb);
      } else {
        grove_examples::write_png(options.out_dir / name, kWidth, kSide, 3, rgb);
        std::printf("sparse_life: wrote %s\n", (options.out_dir / name).string().c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
