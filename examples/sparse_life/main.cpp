// sparse_life — Conway's Game of Life on a huge sparse grid.
//
// The domain is N x N cells (16384 x 16384 by default: 268 million cells),
// stored as `pointer` blocks of 8 x 8 dense cells. Only blocks near live
// cells exist: counting neighbours writes into the neighbours' blocks (which
// activates them), and blocks that end a step without a live cell are
// deactivated, so memory and time follow the live population, not N^2.
// Each step prints the number of active blocks; every few steps a PNG frame
// shows a window of cells next to a map of the active blocks of the domain.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "image.h"
#include "options.h"

namespace {

using namespace grove;

constexpr int kBlock = 8;      // cells per block side
constexpr int kView = 128;     // the window of cells shown, in cells
constexpr int kZoom = 3;       // pixels per cell in the window
constexpr int kMap = kView * kZoom;  // the map of active blocks, in pixels
constexpr int kPatch = 40;     // side of each random starting patch
constexpr int kPatches = 12;

struct Life {
  int n;
  Field alive, neighbours, view, map;
  SNode* blocks;
  Kernel seed, count, update, prune, snapshot;

  Life(Program& prog, int size) : n(size) {
    alive = prog.field(i32, "alive");
    neighbours = prog.field(i32, "neighbours");
    blocks = &prog.root().pointer(ij, {n / kBlock, n / kBlock});
    blocks->dense(ij, {kBlock, kBlock}).place(alive, neighbours);
    view = prog.field(u8, "view", {kView, kView});
    map = prog.field(u8, "map", {kMap, kMap});

    // A patch of random cells (a hash of the position and the seed) at (x0, y0).
    seed = prog.kernel("seed", {arg(i32, "x0"), arg(i32, "y0"), arg(u32, "salt")}, [&](Args a) {
      for_range(0, kPatch * kPatch, [&](Expr k) {
        Expr i = a[0] + k / kPatch, j = a[1] + k % kPatch;
        Var h = cast(u32, i) * 0x9E3779B1u ^ cast(u32, j) * 0x85EBCA77u ^ a[2];
        h = (h ^ (h >> 15u)) * 0x2C1B3C6Du;
        h = h ^ (h >> 12u);
        if_(h % 3u == 0u, [&] { alive(i, j) = 1; });
      });
    });

    // Every live cell adds 1 to its eight neighbours (activating their blocks).
    count = prog.kernel("count", [&] {
      for_each(alive, [&](Expr i, Expr j) {
        if_(alive(i, j) == 1, [&] {
          for (int di = -1; di <= 1; ++di)
            for (int dj = -1; dj <= 1; ++dj) {
              if (di == 0 && dj == 0) continue;
              Expr ni = i + di, nj = j + dj;
              if_(ni >= 0 && ni < n && nj >= 0 && nj < n, [&] { neighbours(ni, nj) += 1; });
            }
        });
      });
    });

    // The rules, in every active cell; the counts are reset for the next step.
    update = prog.kernel("update", [&] {
      for_each(alive, [&](Expr i, Expr j) {
        Expr c = neighbours(i, j);
        alive(i, j) = select(c == 3 || (c == 2 && alive(i, j) == 1), 1, 0);
        neighbours(i, j) = 0;
      });
    });

    // Blocks without a live cell go back to the pool.
    prune = prog.kernel("prune", [&] {
      for_each(*blocks, [&](Indices B) {
        Var any = 0;
        for_range(0, kBlock * kBlock, [&](Expr k) {
          any = any | alive(B[0] * kBlock + k / kBlock, B[1] * kBlock + k % kBlock);
        });
        if_(any == 0, [&] { deactivate(*blocks, B); });
      });
    });

    // The window around (cx, cy) and the map of active blocks, for a frame.
    snapshot = prog.kernel("snapshot", {arg(i32, "cx"), arg(i32, "cy")}, [&](Args a) {
      for_each(view, [&](Expr i, Expr j) {
        view(i, j) = cast(u8, alive(a[0] - kView / 2 + i, a[1] - kView / 2 + j));
      });
      for_each(map, [&](Expr i, Expr j) { map(i, j) = cast(u8, 0); });
      for_each(*blocks, [&](Indices B) {
        map(B[0] * kMap / (n / kBlock), B[1] * kMap / (n / kBlock)) = cast(u8, 1);
      });
    });
  }

  void step() {
    count();
    update();
    prune();
  }
};

void write_frame(Life& life, Program& prog, const std::filesystem::path& file) {
  life.snapshot(life.n / 2, life.n / 2);
  prog.sync();
  std::vector<uint8_t> cells = life.view.to_vector<uint8_t>();
  std::vector<uint8_t> blocks = life.map.to_vector<uint8_t>();
  const int side = kView * kZoom, width = side + 8 + kMap;
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
  grove_examples::write_png(file, width, side, 3, rgb);
}

}  // namespace

int main(int argc, char** argv) {
  const grove_examples::ExampleInfo info{
      .name = "sparse_life",
      .summary = "Conway's Game of Life on an N x N sparse grid of pointer blocks; prints the "
                 "active blocks per step and writes DIR/sparse_life_NNNN.png frames.",
      .size_help = "cells per side of the domain (a multiple of 8; only live areas use memory)",
      .default_size = 16384,
      .max_size = 65536,
      .default_steps = 48,
  };
  grove_examples::Options options;
  if (const auto code = grove_examples::parse_options(argc, argv, info, &options)) return *code;
  if (options.size % kBlock != 0 || options.size < kView) {
    std::fprintf(stderr, "sparse_life: --size must be a multiple of %d and at least %d\n", kBlock, kView);
    return 2;
  }
  try {
    Program prog({.arch = options.arch});
    std::printf("sparse_life: running on %s, %d x %d cells in %d x %d blocks\n",
                std::string(arch_name(prog.arch())).c_str(), options.size, options.size,
                options.size / kBlock, options.size / kBlock);
    Life life(prog, options.size);
    const int n = options.size;
    // One patch in the window at the centre, the others scattered over the domain.
    for (int p = 0; p < kPatches; ++p) {
      int x = p == 0 ? n / 2 - kPatch / 2 : static_cast<int>((2654435761u * static_cast<uint32_t>(p)) % static_cast<uint32_t>(n - kPatch));
      int y = p == 0 ? n / 2 - kPatch / 2 : static_cast<int>((40503u * static_cast<uint32_t>(p * p + 7)) % static_cast<uint32_t>(n - kPatch));
      life.seed(x, y, static_cast<uint32_t>(p * 7919 + 1));
    }
    grove_examples::make_out_dir(options.out_dir);
    const int every = std::max(1, options.steps / 4);
    std::vector<std::string> written;
    for (int s = 0; s <= options.steps; ++s) {
      if (s > 0) life.step();
      prog.sync();
      const SNodeStats* b = prog.stats().find(life.blocks->name());
      std::printf("step %4d: %6lld active blocks (%lld cells of %lld)\n", s,
                  static_cast<long long>(b->active_cells), static_cast<long long>(b->active_cells * 64),
                  static_cast<long long>(n) * n);
      if (s % every == 0 || s == options.steps) {
        char name[64];
        std::snprintf(name, sizeof name, "sparse_life_%04d.png", s);
        write_frame(life, prog, options.out_dir / name);
        written.push_back((options.out_dir / name).string());
      }
    }
    for (const std::string& f : written) std::printf("sparse_life: wrote %s\n", f.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
