// src/program/cpu_pool.cpp — CpuPool over oneTBB (see cpu_pool.h).
#include "program/cpu_pool.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

namespace grove::detail {

struct CpuPool::Arena {
  tbb::task_arena arena;
  explicit Arena(int threads) : arena(threads) {}
};

CpuPool::CpuPool(int threads) : threads_(threads), arena_(std::make_unique<Arena>(threads)) {}
CpuPool::~CpuPool() = default;

void CpuPool::parallel_for(int32_t count, int32_t grain, Chunk chunk, void* data) {
  arena_->arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<int32_t>(0, count, grain),
                      [&](const tbb::blocked_range<int32_t>& r) { chunk(data, r.begin(), r.end()); });
  });
}

}  // namespace grove::detail
