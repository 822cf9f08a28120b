// gpu_sparse.cpp — Grove's kernels against hand-written ones on the same GPU
// (GLSL on Vulkan, nvcc's CUDA on CUDA: gpu_common.h), sparse workloads on
// a 256^3 grid stored as pointer(ijk, 64^3) blocks of dense(ijk, 4^3)
// voxels:
//
//   <prefix>_sparse_activate   write 100k pseudo-random voxels into an empty grid
//                              (activating ~83k blocks); everything is deactivated
//                              again in an untimed step after each launch
//   <prefix>_sparse_struct_for y = 2 x + 1 over every voxel of the active blocks
//                              (~5% of the blocks)
//   <prefix>_sparse_stencil    y = the 7-point Laplacian of x over the same voxels
//                              (indices clamped to the grid, inactive blocks read 0)
//
// Each is one pair benchmark per GPU backend (harness.h); a run of either
// side is one launch and a sync. The hand-written kernels
// (shaders/bench_sparse_activate.comp, bench_block_map.comp and
// bench_block_stencil.comp, and their twins in bench/cuda/bench_kernels.cu)
// keep the same memory contract by hand: a slot array per block (0 or 1 +
// pool entry), a pool of blocks, an atomic bump allocator and
// compare-and-swap publication with losers' candidates on a spare list
// (activation); the same pool layout with x and y side by side per voxel,
// and a list of the active blocks' pool entries built once on the host
// (struct-for; the stencil also reads the slots, for neighbours in other
// blocks).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "gpu_common.h"
#include "harness.h"

namespace grove_bench {
namespace {

using grove::Expr;
using gpu::HandWritten;

constexpr int kGrid = 256;                       // voxels per side
constexpr int kBlockSide = 4;                    // voxels per block side
constexpr int kBlocksPerSide = kGrid / kBlockSide;  // 64
constexpr int kBlocks = kBlocksPerSide * kBlocksPerSide * kBlocksPerSide;  // 262144
constexpr int kBlockVoxels = kBlockSide * kBlockSide * kBlockSide;        // 64
constexpr size_t kGridVoxels = size_t{kGrid} * kGrid * kGrid;

constexpr size_t linear(std::uint32_t i, std::uint32_t j, std::uint32_t k) {
  return (size_t{i} * kGrid + j) * kGrid + k;
}

// The voxel (i, j, k) of local cell `l` of block `b` (both row-major).
struct Voxel {
  std::uint32_t i, j, k;
};
constexpr Voxel voxel_of(std::uint32_t b, std::uint32_t l) {
  return {(b / (kBlocksPerSide * kBlocksPerSide)) * kBlockSide + l / 16,
          (b / kBlocksPerSide % kBlocksPerSide) * kBlockSide + l / 4 % 4,
          (b % kBlocksPerSide) * kBlockSide + l % 4};
}

// ---- activation of random voxels ---------------------------------------------------

constexpr int kVoxels = 100000;
constexpr std::int64_t kActivatePool = 131072;  // blocks; ~83k are needed
constexpr std::uint32_t kSalt = 0x5EED1234u;
constexpr int kActivateIterations = 40;

// The voxels one launch writes.
Voxel written_voxel(std::uint32_t n) {
  const std::uint32_t h = gpu::hash_u32(n, kSalt);
  return {h & 255u, (h >> 8) & 255u, (h >> 16) & 255u};
}

// The number of blocks one launch activates.
std::int64_t activate_expected_blocks() {
  std::vector<bool> active(kBlocks, false);
  std::int64_t blocks = 0;
  for (std::uint32_t n = 0; n < kVoxels; ++n) {
    const Voxel v = written_voxel(n);
    const size_t b = (size_t{v.i / 4} * kBlocksPerSide + v.j / 4) * kBlocksPerSide + v.k / 4;
    if (!active[b]) ++blocks;
    active[b] = true;
  }
  return blocks;
}

// The grid after one launch.
std::vector<float> activate_expected() {
  std::vector<float> grid(kGridVoxels, 0.0f);
  for (std::uint32_t n = 0; n < kVoxels; ++n) {
    const Voxel v = written_voxel(n);
    grid[linear(v.i, v.j, v.k)] = static_cast<float>(linear(v.i, v.j, v.k));
  }
  return grid;
}

struct GroveActivate {
  grove::Program prog;
  grove::Field x = prog.field(grove::f32, "x");
  grove::SNode& blocks = prog.root().pointer(grove::ijk, {kBlocksPerSide, kBlocksPerSide, kBlocksPerSide});
  grove::Kernel write;

  explicit GroveActivate(grove::Arch arch) : prog(steady_config(arch)) {
    blocks.capacity(kActivatePool);
    blocks.dense(grove::ijk, {kBlockSide, kBlockSide, kBlockSide}).place(x);
    write = prog.kernel("write_voxels", {grove::arg(grove::u32, "salt")}, [this](grove::Args a) {
      grove::for_range(0, kVoxels, [&](Expr n) {
        Expr h = gpu::hash_dsl(grove::cast(grove::u32, n), a[0]);
        Expr i = grove::cast(grove::i32, h & 255u);
        Expr j = grove::cast(grove::i32, (h >> 8u) & 255u);
        Expr k = grove::cast(grove::i32, (h >> 16u) & 255u);
        x(i, j, k) = grove::cast(grove::f32, (i * kGrid + j) * kGrid + k);
      });
    });
  }

  // The untimed step between launches.
  void deactivate_everything() {
    blocks.deactivate_all();
    prog.sync();
  }

  std::vector<float> first_result(std::int64_t* active_blocks) {
    write(kSalt);
    prog.sync();
    *active_blocks = prog.stats().find(blocks.name())->active_cells;
    return x.to_vector<float>();
  }
};

// The hand-written version's buffers (see shaders/bench_sparse_activate.comp).
struct HandActivate {
  static constexpr std::uint64_t kMetaWords = 4 + kBlocks;  // bump, spare_count, failures, pad, slots
  explicit HandActivate(std::shared_ptr<HandWritten> device) : dev(std::move(device)) {
    dev->fill(meta, 0, kMetaWords * 4, 0);
    dev->fill(pool, 0, kActivatePool * kBlockVoxels * 4, 0);
  }

  std::shared_ptr<HandWritten> dev;  // first: the members below use it
  HandWritten::Buffer meta = dev->create_buffer(kMetaWords * 4, "meta and slots");
  HandWritten::Buffer pool = dev->create_buffer(kActivatePool * kBlockVoxels * 4, "pool");
  HandWritten::Buffer spares = dev->create_buffer(kActivatePool * 4, "spares");
  HandWritten::Launch launch = dev->prepare("bench_sparse_activate", {meta, pool, spares},
                                            {kSalt, kVoxels, static_cast<std::uint32_t>(kActivatePool)},
                                            gpu::groups_for(kVoxels, 256), 256);

  // Deactivates everything: zeroes the slots, the allocator and the pool
  // entries handed out (the contract: a fresh block reads 0).
  void reset() {
    std::uint32_t bump = 0;
    dev->read(meta, 0, &bump, 4);
    const std::uint64_t used = std::min<std::uint64_t>(bump, kActivatePool);
    dev->fill(meta, 0, kMetaWords * 4, 0);
    if (used > 0) dev->fill(pool, 0, used * kBlockVoxels * 4, 0);
  }

  // The dense grid the buffers hold; `blocks` = active blocks, `failures`
  // = failed allocations.
  std::vector<float> read_grid(std::int64_t* blocks, std::uint32_t* failures) {
    std::vector<std::uint32_t> m(kMetaWords);
    dev->read(meta, 0, m.data(), kMetaWords * 4);
    std::vector<float> p(static_cast<size_t>(kActivatePool) * kBlockVoxels);
    dev->read(pool, 0, p.data(), p.size() * 4);
    *failures = m[2];
    *blocks = 0;
    std::vector<float> grid(kGridVoxels, 0.0f);
    for (std::uint32_t b = 0; b < kBlocks; ++b) {
      const std::uint32_t slot = m[4 + b];
      if (slot == 0) continue;
      ++*blocks;
      for (std::uint32_t l = 0; l < kBlockVoxels; ++l) {
        const Voxel v = voxel_of(b, l);
        grid[linear(v.i, v.j, v.k)] = p[size_t{slot - 1} * kBlockVoxels + l];
      }
    }
    return grid;
  }
};

Pair activate_pair(const gpu::Backend& backend) {
  auto g = std::make_shared<GroveActivate>(backend.arch);
  std::int64_t got_blocks = 0;
  const std::int64_t want_blocks = activate_expected_blocks();
  const std::vector<float> got = g->first_result(&got_blocks);
  gpu::check(gpu::compare(got, activate_expected(), 0.0f, "Grove sparse activation"));
  if (got_blocks != want_blocks) {
    throw grove::Error("Grove sparse activation: " + std::to_string(got_blocks) + " active blocks, expected " +
                       std::to_string(want_blocks));
  }
  g->deactivate_everything();
  if (const std::int64_t left = g->prog.stats().find(g->blocks.name())->active_cells; left != 0) {
    throw grove::Error("Grove sparse activation: " + std::to_string(left) +
                       " blocks still active after deactivating all");
  }

  auto h = std::make_shared<HandActivate>(backend.open(g, g->prog));
  h->dev->launch(h->launch);
  std::int64_t blocks = 0;
  std::uint32_t failures = 0;
  gpu::check(gpu::compare(h->read_grid(&blocks, &failures), got, 0.0f,
                          std::string(backend.hand_written) + " sparse activation vs Grove"));
  if (blocks != want_blocks || failures != 0) {
    throw grove::Error(std::string(backend.hand_written) + " sparse activation: " + std::to_string(blocks) + " active blocks (expected " +
                       std::to_string(want_blocks) + "), " + std::to_string(failures) + " failed allocations");
  }
  h->reset();
  h->dev->sync();

  Pair p;
  p.grove.run = [g] {
    g->write(kSalt);
    g->prog.sync();
  };
  p.grove.after = [g] { g->deactivate_everything(); };
  p.baseline.run = [h] {
    h->dev->launch(h->launch);
    h->dev->sync();
  };
  p.baseline.after = [h] {
    h->reset();
    h->dev->sync();
  };
  p.items_per_run = kVoxels;
  p.counters = {{"active_blocks", static_cast<double>(want_blocks)}};
  return p;
}

// ---- struct-for over the active voxels -------------------------------------------

constexpr std::int64_t kStructPool = 16384;  // blocks; ~13.1k (5%) are active
constexpr std::uint32_t kSelectSalt = 0xB10C5u;
constexpr int kStructIterations = 100;

// Block b is active when its hash says so (1 in 20).
constexpr bool selected(std::uint32_t b) { return gpu::hash_u32(b, kSelectSalt) % 20u == 0u; }
constexpr float x_value(const Voxel& v) { return static_cast<float>(v.i + 2 * v.j + 3 * v.k); }

std::vector<std::uint32_t> selected_blocks() {
  std::vector<std::uint32_t> out;
  for (std::uint32_t b = 0; b < kBlocks; ++b)
    if (selected(b)) out.push_back(b);
  return out;
}

struct GroveStructFor {
  grove::Program prog;
  grove::Field x = prog.field(grove::f32, "x");
  grove::Field y = prog.field(grove::f32, "y");
  grove::SNode& blocks = prog.root().pointer(grove::ijk, {kBlocksPerSide, kBlocksPerSide, kBlocksPerSide});
  grove::Kernel fill, scale, laplace;

  explicit GroveStructFor(grove::Arch arch) : prog(steady_config(arch)) {
    blocks.capacity(kStructPool);
    blocks.dense(grove::ijk, {kBlockSide, kBlockSide, kBlockSide}).place(x, y);
    // Setup (untimed): x in every voxel of the selected blocks, one
    // invocation per block (64 invocations racing to activate each block
    // would each take a candidate from the pool).
    fill = prog.kernel("fill", [this] {
      grove::for_range(0, kBlocks, [&](Expr b) {
        grove::if_(gpu::hash_dsl(grove::cast(grove::u32, b), kSelectSalt) % 20u == 0u, [&] {
          grove::for_range(0, kBlockVoxels, [&](Expr l) {
            Expr i = b / (kBlocksPerSide * kBlocksPerSide) * kBlockSide + l / 16;
            Expr j = b / kBlocksPerSide % kBlocksPerSide * kBlockSide + l / 4 % 4;
            Expr k = b % kBlocksPerSide * kBlockSide + l % 4;
            x(i, j, k) = grove::cast(grove::f32, i + 2 * j + 3 * k);
          });
        });
      });
    });
    // Timed: a struct-for over the active voxels.
    scale = prog.kernel("scale", [this] {
      grove::for_each(x, [&](Expr i, Expr j, Expr k) { y(i, j, k) = x(i, j, k).load() * 2.0f + 1.0f; });
    });
    // Timed (sparse_stencil): the neighbours, clamped to the grid.
    laplace = prog.kernel("laplace", [this] {
      auto c = [](const Expr& v) { return grove::max(grove::min(v, Expr(kGrid - 1)), Expr(0)); };
      auto at = [&](const Expr& i, const Expr& j, const Expr& k) { return x(c(i), c(j), c(k)).load(); };
      grove::for_each(x, [&](Expr i, Expr j, Expr k) {
        y(i, j, k) = at(i - 1, j, k) + at(i + 1, j, k) + at(i, j - 1, k) + at(i, j + 1, k) + at(i, j, k - 1) +
                     at(i, j, k + 1) - 6.0f * x(i, j, k).load();
      });
    });
  }

  // y after `timed`, once the selected blocks are filled; the blocks active.
  std::vector<float> first_result(grove::Kernel& timed, std::int64_t* active_blocks) {
    fill();
    timed();
    prog.sync();
    *active_blocks = prog.stats().find(blocks.name())->active_cells;
    return y.to_vector<float>();
  }
};

// A struct-for over x on the selected blocks, Grove's `timed` kernel against
// the hand-written `shader`, each voxel's y checked against `want_y`. The
// hand-written side's pool holds the active blocks in list order (entry e =
// list position e), each voxel (x, y); its buffers are the list, then with
// `slots` each listed block's index and every block's slot (0 or 1 + its
// entry), then the pool.
Pair listed_blocks_pair(const gpu::Backend& backend, grove::Kernel GroveStructFor::*timed, const std::string& what,
                        const char* shader, bool slots, const std::function<float(const Voxel&)>& want_y) {
  auto g = std::make_shared<GroveStructFor>(backend.arch);
  std::int64_t got_blocks = 0;
  const std::vector<float> got = g->first_result((*g).*timed, &got_blocks);
  const std::vector<std::uint32_t> blocks = selected_blocks();
  std::vector<float> want(kGridVoxels, 0.0f);
  for (std::uint32_t b : blocks) {
    for (std::uint32_t l = 0; l < kBlockVoxels; ++l) {
      const Voxel v = voxel_of(b, l);
      want[linear(v.i, v.j, v.k)] = want_y(v);
    }
  }
  gpu::check(gpu::compare(got, want, 0.0f, "Grove " + what));
  if (got_blocks != static_cast<std::int64_t>(blocks.size())) {
    throw grove::Error("Grove " + what + ": " + std::to_string(got_blocks) + " active blocks, expected " +
                       std::to_string(blocks.size()));
  }

  const auto count = static_cast<std::uint32_t>(blocks.size());
  if (count > kStructPool) throw grove::Error("more selected blocks than the pool holds");
  std::vector<std::uint32_t> list(count), slot_of(kBlocks, 0u);
  std::vector<float> pool(static_cast<size_t>(kStructPool) * kBlockVoxels * 2, 0.0f);
  for (std::uint32_t e = 0; e < count; ++e) {
    list[e] = e;
    slot_of[blocks[e]] = e + 1;
    for (std::uint32_t l = 0; l < kBlockVoxels; ++l) pool[(size_t{e} * kBlockVoxels + l) * 2] = x_value(voxel_of(blocks[e], l));
  }
  std::shared_ptr<HandWritten> dev = backend.open(g, g->prog);
  const std::uint64_t list_bytes = std::max<std::uint64_t>(count, 1) * 4;
  std::vector<HandWritten::Buffer> buffers{dev->create_buffer(list_bytes, "active blocks")};
  dev->write(buffers.back(), 0, list.data(), list.size() * 4);
  if (slots) {
    buffers.push_back(dev->create_buffer(list_bytes, "their indices"));
    dev->write(buffers.back(), 0, blocks.data(), blocks.size() * 4);
    buffers.push_back(dev->create_buffer(slot_of.size() * 4, "slots"));
    dev->write(buffers.back(), 0, slot_of.data(), slot_of.size() * 4);
  }
  const HandWritten::Buffer pool_buffer = dev->create_buffer(pool.size() * 4, "pool");
  buffers.push_back(pool_buffer);
  dev->write(pool_buffer, 0, pool.data(), pool.size() * 4);
  const HandWritten::Launch launch = dev->prepare(shader, buffers, {count}, count, 64);
  dev->launch(launch);
  dev->read(pool_buffer, 0, pool.data(), pool.size() * 4);
  std::vector<float> grid(kGridVoxels, 0.0f);
  for (std::uint32_t e = 0; e < count; ++e) {
    for (std::uint32_t l = 0; l < kBlockVoxels; ++l) {
      const Voxel v = voxel_of(blocks[e], l);
      grid[linear(v.i, v.j, v.k)] = pool[(size_t{e} * kBlockVoxels + l) * 2 + 1];
    }
  }
  gpu::check(gpu::compare(grid, got, 0.0f, std::string(backend.hand_written) + " " + what + " vs Grove"));

  Pair p = gpu::hand_written_pair(
      [g, timed] {
        ((*g).*timed)();
        g->prog.sync();
      },
      dev, {launch}, static_cast<std::int64_t>(count) * kBlockVoxels);
  p.counters = {{"active_blocks", static_cast<double>(count)}};
  return p;
}

Pair struct_for_pair(const gpu::Backend& backend) {
  return listed_blocks_pair(backend, &GroveStructFor::scale, "struct-for", "bench_block_map", false,
                            [](const Voxel& v) { return x_value(v) * 2.0f + 1.0f; });
}

// ---- a stencil over the active voxels -------------------------------------------

constexpr int kStencilIterations = 100;

Pair stencil_pair(const gpu::Backend& backend) {
  auto x_of = [](int i, int j, int k) {  // clamped; 0 in an inactive block
    i = std::clamp(i, 0, kGrid - 1), j = std::clamp(j, 0, kGrid - 1), k = std::clamp(k, 0, kGrid - 1);
    const auto b = static_cast<std::uint32_t>(((i / kBlockSide) * kBlocksPerSide + j / kBlockSide) * kBlocksPerSide +
                                              k / kBlockSide);
    const Voxel v{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(k)};
    return selected(b) ? x_value(v) : 0.0f;
  };
  return listed_blocks_pair(backend, &GroveStructFor::laplace, "sparse stencil", "bench_block_stencil", true,
                            [x_of](const Voxel& v) {
                              const int i = static_cast<int>(v.i), j = static_cast<int>(v.j), k = static_cast<int>(v.k);
                              return x_of(i - 1, j, k) + x_of(i + 1, j, k) + x_of(i, j - 1, k) + x_of(i, j + 1, k) +
                                     x_of(i, j, k - 1) + x_of(i, j, k + 1) - 6.0f * x_value(v);
                            });
}

}  // namespace

void register_gpu_sparse() {
  for (const gpu::Backend& b : gpu::backends()) {
    register_pair(gpu::workload(b, "sparse_activate"), b.arch, b.hand_written, kActivateIterations,
                  gpu::kRepetitions, [b] { return activate_pair(b); });
    register_pair(gpu::workload(b, "sparse_struct_for"), b.arch, b.hand_written, kStructIterations,
                  gpu::kRepetitions, [b] { return struct_for_pair(b); });
    register_pair(gpu::workload(b, "sparse_stencil"), b.arch, b.hand_written, kStencilIterations,
                  gpu::kRepetitions, [b] { return stencil_pair(b); });
  }
}

}  // namespace grove_bench
