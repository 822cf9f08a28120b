// cpu_baselines.cpp — hand-written C++ baselines of the CPU rows (see
// cpu_baselines.h), compiled with -O3 -march=native.
#include "cpu_baselines.h"

#include <cstring>
#include <stdexcept>
#include <thread>

#include "shell.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <vector>

namespace grove_bench::cpp {

struct Threads::Arena {
  tbb::task_arena arena;
  explicit Arena(int threads) : arena(threads) {}
};

Threads::Threads(int threads) : threads_(threads), arena_(std::make_unique<Arena>(threads)) {}
Threads::~Threads() = default;

void Threads::parallel_for(std::int64_t n, void (*body)(void*, std::int64_t, std::int64_t), void* data) const {
  arena_->arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<std::int64_t>(0, n),
        [&](const tbb::blocked_range<std::int64_t>& r) { body(data, r.begin(), r.end()); },
        tbb::static_partitioner());
  });
}

void Threads::parallel_for_dynamic(std::int64_t n, std::int64_t grain,
                                   void (*body)(void*, std::int64_t, std::int64_t), void* data) const {
  arena_->arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, std::max<std::int64_t>(1, grain)),
                      [&](const tbb::blocked_range<std::int64_t>& r) { body(data, r.begin(), r.end()); });
  });
}

void Threads::run(void (*body)(void*), void* data) const {
  arena_->arena.execute([&] { body(data); });
}

double Threads::parallel_sum(std::int64_t n, double (*body)(void*, std::int64_t, std::int64_t), void* data) const {
  // One chunk per thread, summed in chunk order: deterministic.
  const std::int64_t chunks = threads_;
  std::vector<double> partial(static_cast<size_t>(chunks), 0.0);
  arena_->arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<std::int64_t>(0, chunks, 1),
        [&](const tbb::blocked_range<std::int64_t>& r) {
          for (std::int64_t c = r.begin(); c < r.end(); ++c)
            partial[static_cast<size_t>(c)] = body(data, n * c / chunks, n * (c + 1) / chunks);
        },
        tbb::static_partitioner());
  });
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

namespace {

struct CopyArgs {
  const float* a;
  float* b;
};
struct TriadArgs {
  float* a;
  const float* b;
  const float* c;
  float s;
};
struct SaxpyArgs {
  float a;
  const float* x;
  float* y;
};
struct StencilArgs {
  const float* a;
  float* b;
  std::int64_t n;
};

}  // namespace

void copy(const Threads& t, const float* a, float* b, std::int64_t n) {
  CopyArgs args{a, b};
  t.parallel_for(
      n,
      [](void* d, std::int64_t lo, std::int64_t hi) {
        auto& p = *static_cast<CopyArgs*>(d);
        const float* __restrict a = p.a;
        float* __restrict b = p.b;
        for (std::int64_t i = lo; i < hi; ++i) b[i] = a[i];
      },
      &args);
}

void triad(const Threads& t, float* a, const float* b, const float* c, float s, std::int64_t n) {
  TriadArgs args{a, b, c, s};
  t.parallel_for(
      n,
      [](void* d, std::int64_t lo, std::int64_t hi) {
        auto& p = *static_cast<TriadArgs*>(d);
        float* __restrict a = p.a;
        const float* __restrict b = p.b;
        const float* __restrict c = p.c;
        const float s = p.s;
        for (std::int64_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
      },
      &args);
}

void saxpy(const Threads& t, float a, const float* x, float* y, std::int64_t n) {
  SaxpyArgs args{a, x, y};
  t.parallel_for(
      n,
      [](void* d, std::int64_t lo, std::int64_t hi) {
        auto& p = *static_cast<SaxpyArgs*>(d);
        const float a = p.a;
        const float* __restrict x = p.x;
        float* __restrict y = p.y;
        for (std::int64_t i = lo; i < hi; ++i) y[i] = a * x[i] + y[i];
      },
      &args);
}

void stencil5(const Threads& t, const float* a, float* b, std::int64_t n) {
  StencilArgs args{a, b, n};
  t.parallel_for(
      n - 2,
      [](void* d, std::int64_t lo, std::int64_t hi) {
        auto& p = *static_cast<StencilArgs*>(d);
        const std::int64_t n = p.n;
        for (std::int64_t i = lo + 1; i < hi + 1; ++i) {
          const float* __restrict up = p.a + (i - 1) * n;
          const float* __restrict row = p.a + i * n;
          const float* __restrict down = p.a + (i + 1) * n;
          float* __restrict out = p.b + i * n;
          for (std::int64_t j = 1; j < n - 1; ++j) out[j] = 0.25f * (up[j] + down[j] + row[j - 1] + row[j + 1]);
        }
      },
      &args);
}

std::int32_t sum(const Threads& t, const std::int32_t* x, std::int64_t n) {
  return static_cast<std::int32_t>(t.parallel_sum(
      n,
      [](void* d, std::int64_t lo, std::int64_t hi) {
        const std::int32_t* x = static_cast<const std::int32_t*>(d);
        std::int32_t s = 0;
        for (std::int64_t i = lo; i < hi; ++i) s += x[i];
        return static_cast<double>(s);
      },
      const_cast<std::int32_t*>(x)));
}

// ---- the block grid ------------------------------------------------------------

namespace {
constexpr int kBlockVoxels = shell::kBlock * shell::kBlock * shell::kBlock;

size_t voxel_of(int i, int j, int k) {
  return static_cast<size_t>(((i % shell::kBlock) * shell::kBlock + j % shell::kBlock) * shell::kBlock +
                             k % shell::kBlock);
}
}  // namespace

BlockGrid::BlockGrid(std::int64_t capacity_blocks)
    : slots_(static_cast<size_t>(shell::kBlocks) * shell::kBlocks * shell::kBlocks),
      pool_(static_cast<size_t>(capacity_blocks) * kBlockVoxels, 0.0f),
      capacity_(capacity_blocks) {}

float* BlockGrid::block_for_write(int i, int j, int k) {
  std::atomic<std::uint32_t>& slot = slots_[shell::block_of(i, j, k)];
  std::uint32_t v = slot.load(std::memory_order_acquire);
  if (v < 2) {
    std::uint32_t expected = 0;
    if (v == 0 && slot.compare_exchange_strong(expected, kMaking, std::memory_order_acquire)) {
      const std::int64_t b = used_.fetch_add(1, std::memory_order_relaxed);
      if (b >= capacity_) throw std::runtime_error("BlockGrid: pool full");
      v = static_cast<std::uint32_t>(b) + 2;  // the pool is zero: nothing to clear
      slot.store(v, std::memory_order_release);
    } else {
      while ((v = slot.load(std::memory_order_acquire)) < 2) std::this_thread::yield();
    }
  }
  return pool_.data() + static_cast<size_t>(v - 2) * kBlockVoxels;
}

void BlockGrid::activate_shell(const Threads& t) {
  t.parallel_for_dynamic(
      std::int64_t{shell::kSide} * shell::kSide, 1024,
      [](void* d, std::int64_t lo, std::int64_t hi) {
        auto& g = *static_cast<BlockGrid*>(d);
        for (std::int64_t c = lo; c < hi; ++c) {
          const int i = static_cast<int>(c / shell::kSide), j = static_cast<int>(c % shell::kSide);
          float* block = nullptr;
          int block_k = -1;
          shell::for_column(i, j, [&](int k) {
            if (k / shell::kBlock != block_k) {  // a column meets few blocks: look each up once
              block = g.block_for_write(i, j, k);
              block_k = k / shell::kBlock;
            }
            block[voxel_of(i, j, k)] = shell::value(i, j, k);
          });
        }
      },
      this);
}

double BlockGrid::sum(const Threads& t) const {
  return t.parallel_sum(
      used_.load(),
      [](void* d, std::int64_t lo, std::int64_t hi) {
        // Each value truncated to an integer and summed exactly, as Grove's
        // kernel does (cast(i32, x) into an i32 total).
        const float* p = static_cast<const float*>(d);
        std::int32_t s = 0;
        for (std::int64_t v = lo * kBlockVoxels; v < hi * kBlockVoxels; ++v) s += static_cast<std::int32_t>(p[v]);
        return static_cast<double>(s);
      },
      const_cast<float*>(pool_.data()));
}

void BlockGrid::clear() {
  std::memset(pool_.data(), 0, static_cast<size_t>(used_.load()) * kBlockVoxels * sizeof(float));
  for (auto& s : slots_) s.store(0, std::memory_order_relaxed);
  used_.store(0);
}

float BlockGrid::read(int i, int j, int k) const {
  const std::uint32_t v = slots_[shell::block_of(i, j, k)].load(std::memory_order_acquire);
  return v < 2 ? 0.0f : pool_[static_cast<size_t>(v - 2) * kBlockVoxels + voxel_of(i, j, k)];
}

// ---- the listed block grid (the occupancy sweep) -------------------------------

namespace {
constexpr int kRunWords = 16;  // bit words per listgen iteration, as Grove's CPU listgen
}  // namespace

ListedBlockGrid::ListedBlockGrid(const std::vector<std::uint8_t>& active) {
  const size_t blocks = size_t{kBlocksPerAxis} * kBlocksPerAxis * kBlocksPerAxis;
  if (active.size() != blocks) throw std::invalid_argument("ListedBlockGrid: one flag per block");
  slots_.assign(blocks, 0);
  bits_.assign(blocks / 32, 0);
  list_.assign(blocks * 4, 0);
  std::uint32_t entries = 0;
  for (size_t b = 0; b < blocks; ++b)
    if (active[b]) {
      slots_[b] = ++entries;
      bits_[b / 32] |= 1u << (b % 32);
    }
  pool_.assign(size_t{entries} * kBlockVoxels, 1.0f);
}

void ListedBlockGrid::make_list(const Threads& t) {
  count_.store(0);
  t.parallel_for_dynamic(
      static_cast<std::int64_t>(bits_.size() / kRunWords), 8,
      [](void* d, std::int64_t lo, std::int64_t hi) {
        auto& g = *static_cast<ListedBlockGrid*>(d);
        for (std::int64_t run = lo; run < hi; ++run) {
          const size_t first = static_cast<size_t>(run) * kRunWords;
          std::uint32_t n = 0;
          for (size_t w = first; w < first + kRunWords; ++w)
            for (std::uint32_t m = g.bits_[w]; m != 0; m &= m - 1) {
              const size_t slot = w * 32 + static_cast<size_t>(__builtin_ctz(m));
              if (g.slots_[slot] != 0) ++n;
              else g.bits_[w] &= ~(1u << (slot % 32));  // emptied since
            }
          if (n == 0) continue;
          std::uint32_t at = g.count_.fetch_add(n, std::memory_order_relaxed);
          for (size_t w = first; w < first + kRunWords; ++w)
            for (std::uint32_t m = g.bits_[w]; m != 0; m &= m - 1) {
              const std::uint32_t slot = static_cast<std::uint32_t>(w * 32) + static_cast<std::uint32_t>(__builtin_ctz(m));
              std::uint32_t* e = &g.list_[size_t{at++} * 4];
              e[0] = (g.slots_[slot] - 1) * kBlockVoxels;
              e[1] = slot / (kBlocksPerAxis * kBlocksPerAxis) * 8;
              e[2] = slot / kBlocksPerAxis % kBlocksPerAxis * 8;
              e[3] = slot % kBlocksPerAxis * 8;
            }
        }
      },
      this);
}

std::int32_t ListedBlockGrid::sum_list(const Threads& t) const {
  std::atomic<std::int32_t> total{0};
  struct Args {
    const ListedBlockGrid* g;
    std::atomic<std::int32_t>* total;
  } args{this, &total};
  t.parallel_for_dynamic(
      count_.load(), 16,
      [](void* d, std::int64_t lo, std::int64_t hi) {
        const Args& a = *static_cast<const Args*>(d);
        std::int32_t s = 0;
        for (std::int64_t e = lo; e < hi; ++e) {
          const float* block = a.g->pool_.data() + a.g->list_[static_cast<size_t>(e) * 4];
          for (int v = 0; v < kBlockVoxels; ++v) s += static_cast<std::int32_t>(block[v]);
        }
        a.total->fetch_add(s, std::memory_order_relaxed);
      },
      &args);
  return total.load();
}

}  // namespace grove_bench::cpp
