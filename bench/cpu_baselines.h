// cpu_baselines.h — the hand-written C++ that the CPU backend's rows are
// measured against: plain loops split over oneTBB's threads, built at -O3
// for this CPU (-march=native; see CMakeLists.txt), with no Grove header.
// Each function runs on `threads` threads of its own task arena.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace grove_bench::cpp {

// Arrays that start on a 64-byte cache line, as tuned code allocates them
// (std::vector's own start 16 bytes into one) and as Grove lays out its
// dense fields: a 512-bit access of either side is never split across two
// lines by where its array starts.
template <class T>
struct LineAllocator {
  using value_type = T;
  LineAllocator() = default;
  template <class U>
  LineAllocator(const LineAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t{64}); }
  template <class U>
  bool operator==(const LineAllocator<U>&) const {
    return true;
  }
};
template <class T>
using LineVector = std::vector<T, LineAllocator<T>>;

// A oneTBB task arena of a fixed number of threads (kept out of this
// header's users, who need no oneTBB header).
class Threads {
 public:
  explicit Threads(int threads);
  ~Threads();
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;
  int count() const { return threads_; }
  // Runs body(lo, hi) over [0, n) in chunks, spread evenly over the threads
  // (a static partition: the loops here cost the same per element).
  void parallel_for(std::int64_t n, void (*body)(void* data, std::int64_t lo, std::int64_t hi), void* data) const;
  // The same with the dynamic partitioner, chunks of at least `grain`
  // (uneven work: the sparse baselines).
  void parallel_for_dynamic(std::int64_t n, std::int64_t grain,
                            void (*body)(void* data, std::int64_t lo, std::int64_t hi), void* data) const;
  // Runs body(data) on one of the arena's threads; the parallel loops it
  // starts (OpenVDB's, say) use the arena's threads.
  void run(void (*body)(void* data), void* data) const;
  // sum over chunks of body(lo, hi), chunk sums added in chunk order.
  double parallel_sum(std::int64_t n, double (*body)(void* data, std::int64_t lo, std::int64_t hi),
                      void* data) const;

 private:
  struct Arena;
  int threads_;
  std::unique_ptr<Arena> arena_;
};

// STREAM (McCalpin): b = a; a = b + s * c.
void copy(const Threads& t, const float* a, float* b, std::int64_t n);
void triad(const Threads& t, float* a, const float* b, const float* c, float s, std::int64_t n);
// y = a x + y.
void saxpy(const Threads& t, float a, const float* x, float* y, std::int64_t n);
// One Jacobi step of the 5-point stencil on an n x n row-major grid:
// b(i, j) = 0.25 (a(i-1, j) + a(i+1, j) + a(i, j-1) + a(i, j+1)) inside the
// border; the border of b is not written.
void stencil5(const Threads& t, const float* a, float* b, std::int64_t n);
// The sum of x[0..n) (integers: exact in any order, so both sides of the
// row compute the same value; a float sum of 2^28 values depends on it).
std::int32_t sum(const Threads& t, const std::int32_t* x, std::int64_t n);

// A hand-written two-level block grid over shell.h's domain: a slot per
// 8^3 block (0: none; kMaking: being allocated; else the pool entry + 2)
// and a pool of blocks taken with an atomic bump. The thread that moves a
// slot from 0 to kMaking allocates and publishes the block; others wait
// for it. What Grove's pointer(ijk, 130).dense(ijk, 8) does, written for
// this one layout.
class BlockGrid {
 public:
  explicit BlockGrid(std::int64_t capacity_blocks);
  // Writes every shell voxel's value (shell.h), columns split over threads.
  void activate_shell(const Threads& t);
  // The sum of every voxel of every allocated block, each truncated to an
  // integer (as in Grove's kernel).
  double sum(const Threads& t) const;
  // Frees every block (not timed: between runs).
  void clear();
  std::int64_t blocks() const { return used_.load(); }
  float read(int i, int j, int k) const;

 private:
  static constexpr std::uint32_t kMaking = 1;
  float* block_for_write(int i, int j, int k);
  std::vector<std::atomic<std::uint32_t>> slots_;
  LineVector<float> pool_;
  std::atomic<std::int64_t> used_{0};
  std::int64_t capacity_;
};

// The occupancy sweep's hand-written side: a grid of 64^3 blocks of 8^3
// voxels (512^3), a slot per block (its pool entry + 1; 0: none) and an
// occupancy bit per slot, its pool in slot order. make_list() lists the
// active blocks from the bits the way Grove's listgen did until it walked
// the pool instead (docs/memory.md), written for this one layout: runs of
// 16 bit words (512 slots) in parallel, the slot of each set bit checked,
// the run's entries (pool entry and the block's three coordinates, four
// words) taken with one atomic add. sum_list() sums every voxel of the listed blocks, each value
// truncated to an integer, entries split over the threads.
class ListedBlockGrid {
 public:
  static constexpr int kBlocksPerAxis = 64;
  // active[b]: whether block b (b = (bi * 64 + bj) * 64 + bk) is active;
  // its voxels hold 1.
  explicit ListedBlockGrid(const std::vector<std::uint8_t>& active);
  void make_list(const Threads& t);
  std::int32_t sum_list(const Threads& t) const;
  std::int64_t listed() const { return count_.load(); }

 private:
  std::vector<std::uint32_t> slots_, bits_, list_;
  LineVector<float> pool_;
  std::atomic<std::uint32_t> count_{0};
};

}  // namespace grove_bench::cpp
