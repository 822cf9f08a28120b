// runtime/cpu/pool.cpp — the CPU device's pool over oneTBB (see pool.h).
#include "runtime/cpu/pool.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

namespace grove::rt::cpu {

struct Pool::Arena {
  tbb::task_arena arena;
  explicit Arena(int threads) : arena(threads) {}
};

Pool::Pool(int threads) : threads_(threads), arena_(std::make_unique<Arena>(threads)) {}
Pool::~Pool() = default;

void Pool::parallel_for(int32_t count, int32_t grain, Chunk chunk, void* data) {
  arena_->arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<int32_t>(0, count, grain),
                      [&](const tbb::blocked_range<int32_t>& r) { chunk(data, r.begin(), r.end()); });
  });
}

}  // namespace grove::rt::cpu
