// src/ir/passes/lower_access.h — field and SNode operations become the sparse runtime.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

struct LowerAccessOptions {
  bool debug = false;  // check every field index against the field's shape
  // Cells of a container one iteration of a struct-for takes (the target's
  // choice; SparseRuntime::set_cells_per_iteration).
  uint32_t cells_per_iteration = 1;
  // SparseRuntime::set_least_iterations (0: runs of cells_per_iteration).
  uint32_t least_iterations = 0;
  // A statement group's activations in one loop with one copy of the
  // activation code per pool (SparseRuntime::activate_group), for code
  // generators that copy every site's code for their driver to compile
  // (SPIR-V: lavapipe spent ~70% of sparse_life count's compile on its
  // eight sites). The LLVM generator calls one out-of-line copy of an
  // unlikely block from every site already, so it leaves this off. Never
  // in debug mode, whose index checks come before each access.
  bool group_activations = false;
  // A struct-for's reads of fields in its own node's cells at other indices
  // (a stencil's neighbours), where the target asks for it:
  // - at_offsets: reads at constant offsets from the loop's indices
  //   (x(i + 1, j), or that clamped to bounds holding the loop's indices),
  //   in a loop that takes runs of cells of a fixed length (no
  //   least_iterations) and writes no other cell of the tree, find their
  //   neighbouring blocks once per run and pick theirs with selects
  //   (SparseRuntime::lookup_at_offset): no slot read and no branch per
  //   cell. The LLVM CPU target (the shell Laplacian's neighbour reads: a
  //   walk each before).
  // - all: those, and the others look up near the loop's cell
  //   (SparseRuntime::lookup_near): a branch where the neighbour shares the
  //   loop's block, which then needs no slot read. For targets that run a
  //   run of cells an iteration without vectorising it (lavapipe: a Jacobi
  //   step over pointer blocks 25-30% faster); not the LLVM CPU target (the
  //   branch stops its vectoriser: 40% slower).
  // GPUs leave both off until measured there (a warp at a block's edge
  // would take both ways; a run is one cell).
  enum class NearReads { off, at_offsets, all };
  NearReads near_reads = NearReads::off;
  // Reads at offsets read each block they may take under its own
  // condition, at addresses linear in the loop's cell
  // (SparseRuntime::load_at_offset), rather than at an address chosen by
  // selects. For LLVM's CPU target on x86 with AVX-512 (the conditional
  // loads become contiguous masked loads of the vector loop, where the
  // chosen addresses were gathers: 6.5-7.5 -> 3.5-4.5 ms for a 3-D
  // Laplacian over 128^3 pointer blocks, for AVX-512 targets znver4,
  // skylake-avx512 and the host alike) or without AVX (4.2 against 7.7 ms
  // for x86-64-v2); not with AVX2 alone, where the selects' loads were
  // 1.4-1.8 ms and the masked ones 3.7-4.4 (x86-64-v3, znver3).
  bool masked_near_reads = false;
  // SparseRuntime::set_subgroup_activations: for SPIR-V on devices with
  // subgroup operations (lavapipe's 8 lanes writing one block's cells took 8
  // candidate entries, 7 left spare; a GPU's 32 or 64 ran pools dry).
  bool subgroup_activations = false;
};

// Offloaded -> lowered: every field load/store/atomic becomes a lookup chain
// over the tree's words (activating on writes), every SNode operation the
// runtime's code for it (sparse_runtime.h), and the struct_for inside each
// struct_for task a loop over the list of its SNode. Needs kernel.forest.
void lower_access(Kernel& kernel, const LowerAccessOptions& options = {});

}  // namespace grove::ir
