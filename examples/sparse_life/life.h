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
  // The grid, the window and the map in one tree type, so that the kernels
  // (which take the tree as their first argument) can be saved in an AOT
  // module and run by grove_runtime alone (grove aot sparse_life).
  TreeType type;
  Tree world;  // the instance this program runs on
  SNode* blocks;
  Kernel seed, count, update, prune, snapshot;

  Life(Program& prog, int size) : n(size) {
    type = prog.tree_type("life", [&](TreeTypeBuilder& t) {
      Field alive = t.field(i32, "alive"), neighbours = t.field(i32, "neighbours");
      blocks = &t.root().pointer(ij, {n / kBlock, n / kBlock});
      blocks->dense(ij, {kBlock, kBlock}).place(alive, neighbours);
      t.root().dense(ij, {kView, kView}).place(t.field(u8, "view"));
      t.root().dense(ij, {kMap, kMap}).place(t.field(u8, "map"));
    });
    world = prog.instantiate(type, "world");

    // A patch of random cells (a hash of the position and the seed) at (x0, y0).
    seed = prog.kernel("seed", {arg(type, "world"), arg(i32, "x0"), arg(i32, "y0"), arg(u32, "salt")}, [&](Args a) {
      Field alive = a.tree(0).field("alive");
      for_range(0, kPatch * kPatch, [&](Expr k) {
        Expr i = a["x0"] + k / kPatch, j = a["y0"] + k % kPatch;
        Var h = cast(u32, i) * 0x9E3779B1u ^ cast(u32, j) * 0x85EBCA77u ^ a["salt"];
        h = (h ^ (h >> 15u)) * 0x2C1B3C6Du;
        h = h ^ (h >> 12u);
        if_(h % 3u == 0u, [&] { alive(i, j) = 1; });
      });
    });

    // Every live cell adds 1 to its eight neighbours (activating their blocks).
    count = prog.kernel("count", {arg(type, "world")}, [&](Args a) {
      Field alive = a.tree(0).field("alive"), neighbours = a.tree(0).field("neighbours");
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
    update = prog.kernel("update", {arg(type, "world")}, [&](Args a) {
      Field alive = a.tree(0).field("alive"), neighbours = a.tree(0).field("neighbours");
      for_each(alive, [&](Expr i, Expr j) {
        Expr c = neighbours(i, j);
        alive(i, j) = select(c == 3 || (c == 2 && alive(i, j) == 1), 1, 0);
        neighbours(i, j) = 0;
      });
    });

    // Blocks without a live cell go back to the pool.
    prune = prog.kernel("prune", {arg(type, "world")}, [&](Args a) {
      Field alive = a.tree(0).field("alive");
      SNodeRef blocks_of = a.tree(0)[*blocks];
      for_each(blocks_of, [&](Indices B) {
        Var any = 0;
        for_range(0, kBlock * kBlock, [&](Expr k) {
          any = any | alive(B[0] * kBlock + k / kBlock, B[1] * kBlock + k % kBlock);
        });
        if_(any == 0, [&] { deactivate(blocks_of, B); });
      });
    });

    // The window around (cx, cy) and the map of active blocks, for a frame.
    snapshot = prog.kernel("snapshot", {arg(type, "world"), arg(i32, "cx"), arg(i32, "cy")}, [&](Args a) {
      Field alive = a.tree(0).field("alive"), view = a.tree(0).field("view"), map = a.tree(0).field("map");
      SNodeRef blocks_of = a.tree(0)[*blocks];
      for_each(view, [&](Expr i, Expr j) {
        view(i, j) = cast(u8, alive(a["cx"] - kView / 2 + i, a["cy"] - kView / 2 + j));
      });
      for_each(map, [&](Expr i, Expr j) { map(i, j) = cast(u8, 0); });
      for_each(blocks_of, [&](Indices B) {
        map(B[0] * kMap / (n / kBlock), B[1] * kMap / (n / kBlock)) = cast(u8, 1);
      });
    });
  }

  void step() {
    count(world);
    update(world);
    prune(world);
  }
};

}  // namespace sparse_life
