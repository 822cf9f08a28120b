// src/program/cpu_pool.h — the CPU backend's threads: a oneTBB task arena of
// a fixed size, and a parallel loop over it. Kept in a translation unit of
// its own so that no oneTBB header reaches the backend, and so that
// ThreadSanitizer builds can leave oneTBB's inlined code uninstrumented
// (Debian's libtbb is not instrumented either: ThreadSanitizer would see
// half of its synchronisation and report races inside it). The backend
// tells ThreadSanitizer the edges oneTBB guarantees (cpu_backend.cpp).
#pragma once

#include <cstdint>
#include <memory>

namespace grove::detail {

class CpuPool {
 public:
  explicit CpuPool(int threads);
  ~CpuPool();
  CpuPool(const CpuPool&) = delete;
  CpuPool& operator=(const CpuPool&) = delete;
  int threads() const { return threads_; }

  // Calls chunk(data, lo, hi) for chunks [lo, hi) that cover [0, count),
  // each at least `grain` long where possible, on the pool's threads (the
  // caller's among them); returns when every chunk has returned.
  using Chunk = void (*)(void* data, int32_t lo, int32_t hi);
  void parallel_for(int32_t count, int32_t grain, Chunk chunk, void* data);

 private:
  struct Arena;
  int threads_;
  std::unique_ptr<Arena> arena_;
};

}  // namespace grove::detail
