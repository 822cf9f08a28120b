// runtime/cpu/pool.h — the CPU device's threads: a oneTBB task arena of
// a fixed size, and a parallel loop over it. Kept in a translation unit of
// its own so that no oneTBB header reaches the backend, and so that
// ThreadSanitizer builds can leave oneTBB's inlined code uninstrumented
// (Debian's libtbb is not instrumented either: ThreadSanitizer would see
// half of its synchronisation and report races inside it). The
// device tells ThreadSanitizer the edges oneTBB guarantees (device.cpp).
#pragma once

#include <cstdint>
#include <memory>

namespace grove::rt::cpu {

class Pool {
 public:
  explicit Pool(int threads);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
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

}  // namespace grove::rt::cpu
