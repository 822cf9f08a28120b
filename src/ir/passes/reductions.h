// src/ir/passes/reductions.h — finds the sums into one cell that a code
// generator may combine across iterations and invocations.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace grove::ir {

// Marks, in every parallel task of a lowered kernel, each tree_atomic that
// is an add (of any type a tree_atomic has: i32, u32, i64, u64, f32, f64)
// to a constant address of field data (at or past its tree's root region:
// the sparse runtime's counters in the header stay plain atomics) whose
// old value nothing reads: Reduction::accumulate
// when the task's loop touches that cell of that instance in no other way,
// else Reduction::one_cell (docs/ir.md, "Reductions"). Without a forest
// (kernels read from text) every constant address counts as field data.
// Returns whether any mark changed.
bool mark_reductions(Kernel& kernel);

// The cells that a parallel loop's Reduction::accumulate sums go to, for a
// code generator that keeps one running sum per cell and adds it once after
// its iterations: one entry per (tree, tree parameter, address, type), in
// the order of first use, and for each marked tree_atomic its cell's index.
struct AccumulatedCells {
  struct Cell {
    int tree = -1;
    int tree_param = -1;
    uint32_t address = 0;
    DataType type = DataType::unknown;
  };
  std::vector<Cell> cells;
  std::unordered_map<const Stmt*, size_t> cell_of;
};
AccumulatedCells accumulated_cells(const Stmt* loop);

// Whether `atomic` adds the same 32-bit integer to the same word wherever
// it runs: a tree_atomic add of a constant to a constant address that no
// reduction mark combines (a bump counter: the sparse runtime's tickets and
// queue, a list's length at listgen, a user's `n[None] += 1` whose old
// value picks a slot). Invocations that run it side by side (a subgroup, a
// warp) may then add their number times the value with one atomic and each
// take old + (its rank among them) * value: what the separate adds, in some
// order, would have returned.
bool is_uniform_counter_add(const Stmt* atomic);

}  // namespace grove::ir
