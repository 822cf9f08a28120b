// cuda_common.h — the hand-written side of the GPU workloads on CUDA
// (gpu_common.h): the kernels of bench/cuda/bench_kernels.cu, compiled by
// nvcc when Grove was configured and embedded in grove_bench as a fat
// binary (SASS for sm_75, sm_80 and sm_90, and PTX for newer GPUs), loaded
// and launched through the CUDA driver API (runtime/cuda/driver.h) in the
// primary context of the device the Grove Program runs on, on a stream of
// their own. A launch is one cuLaunchKernel: the raw driver-API launch the
// launch-overhead row compares Grove's with.
//
// Built only with GROVE_WITH_CUDA and nvcc (GROVE_BENCH_CUDA).
#pragma once

#include <memory>
#include <string_view>

#include "gpu_common.h"

namespace grove_bench::cudab {

// The baseline names of the records.
inline constexpr std::string_view kNvcc = "nvcc";      // a kernel of bench/cuda/bench_kernels.cu
inline constexpr std::string_view kDriver = "driver";  // the same launched with cuLaunchKernel

// The hand-written side on the CUDA device `program` runs on; raises
// grove::Error when the driver cannot load nvcc's kernels (a driver older
// than the toolkit that built them, say).
std::shared_ptr<gpu::HandWritten> hand_written(std::shared_ptr<const void> owner, const grove::Program& program);

}  // namespace grove_bench::cudab
