// runtime/cpu/device.h — the CPU device: buffers in host memory, kernels
// loaded from their plans (KernelPlan::library, see library.h), serial tasks
// on the calling thread and parallel tasks spread over a oneTBB pool.
// Launches finish before they return.
//
// The task ABI (what the LLVM code generator emits for the CPU, src/llvm_cpu/jit.h):
// every task is a function
//
//   void task(uint32_t* const* buffers, const uint64_t* args, int32_t lo, int32_t hi)
//
// buffers[0] the context buffer, buffers[1..] the trees of the task's
// slots (TaskPlan::slots, in order); args the arguments' bit patterns. A
// serial task ignores lo and hi; a parallel one runs iterations [lo, hi) of
// its loop, and its count entry point returns the loop's iteration count.
//
// print and assert write the context buffer's records as on Vulkan
// (runtime/core/context_layout.h); the device formats them after each
// launch of a kernel that has messages. A failed assertion stops the
// launch after the task that failed it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/core/device.h"

namespace grove::rt::cpu {

using TaskFn = void (*)(uint32_t* const* buffers, const uint64_t* args, int32_t lo, int32_t hi);
using CountFn = int32_t (*)(uint32_t* const* buffers, const uint64_t* args);

// `machine` describes the CPU in name() (its model, the vector extension
// its kernels use); `threads` (at least 1) is the pool's size.
std::unique_ptr<Device> make_device(std::string machine, int threads, PrintSink print);

// This CPU's model as /proc/cpuinfo names it, or "" where it does not.
std::string cpu_model();

}  // namespace grove::rt::cpu
