// life.h — the fields and kernels of examples/sparse_life: Conway's Game of
// Life on an N x N grid of `pointer` blocks of 8 x 8 dense cells. Shared by
// the example and by the compile-latency benchmark (bench/spirv_compile.cpp).
#pragma once

#include <grove/grove.h>

namespace sparse_life {

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

}  // namespace sparse_life
