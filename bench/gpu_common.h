// gpu_common.h — what the GPU benchmarks share, whatever the backend: the
// hand-written side of a pair on the device a Grove Program runs on
// (HandWritten: GLSL shaders through runtime/vulkan's Device on Vulkan,
// nvcc's kernels through the CUDA driver API on CUDA), the GPU backends
// that can run here, the hash the sparse workloads use (the same in C++,
// the Grove DSL, GLSL and CUDA), and result checks.
//
// The workloads (gpu_dense.cpp, gpu_sparse.cpp, gpu_launch.cpp) are written
// once against it and registered for each GPU backend: "vk_saxpy/pair/
// vulkan/glsl", "cuda_saxpy/pair/cuda/nvcc", and so on.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <grove/grove.h>

#include "harness.h"

namespace grove_bench::gpu {

// Repetitions of each device benchmark (a record averages them): lavapipe
// runs on the host's cores, so other load on the machine shows up as noise.
inline constexpr int kRepetitions = 3;

// Hand-written kernels on the device (and, on CUDA, the context) a Grove
// Program runs on, so that both sides of a pair share the driver and the
// GPU. Buffers and launches are handles into the object's own tables.
class HandWritten {
 public:
  using Buffer = int;
  using Launch = int;
  virtual ~HandWritten() = default;

  virtual Buffer create_buffer(std::uint64_t bytes, const std::string& name) = 0;
  // Copies `bytes` bytes from the host; `data` may be reused on return.
  virtual void write(Buffer buffer, std::uint64_t offset, const void* data, std::uint64_t bytes) = 0;
  // Sets `bytes` bytes (a multiple of 4) to copies of `word`.
  virtual void fill(Buffer buffer, std::uint64_t offset, std::uint64_t bytes, std::uint32_t word) = 0;
  // Waits for the work queued before it, then copies to the host.
  virtual void read(Buffer buffer, std::uint64_t offset, void* out, std::uint64_t bytes) = 0;

  // A launch of the hand-written kernel `kernel` (shaders/<kernel>.comp on
  // Vulkan; the function <kernel> of bench/cuda/bench_kernels.cu on CUDA)
  // on `buffers` with `params` (push constants; kernel parameters after the
  // buffers), in `groups` groups of `group_size` invocations: the shader's
  // local_size_x, the CUDA block size.
  virtual Launch prepare(const std::string& kernel, std::vector<Buffer> buffers, std::vector<std::uint32_t> params,
                         std::uint32_t groups, std::uint32_t group_size) = 0;
  // Queues the launch; sync() waits for everything queued.
  virtual void launch(Launch launch) = 0;
  virtual void sync() = 0;

  // Whether the hand-written sum may add floats atomically (Vulkan:
  // shaderBufferFloat32AtomicAdd).
  virtual bool float_atomic_add() const = 0;
  // The device memory's peak bandwidth in bytes per second, or 0 where the
  // API does not say (Vulkan).
  virtual double peak_bytes_per_second() const = 0;
};

// A GPU backend the workloads are registered for.
struct Backend {
  grove::Arch arch;
  std::string_view prefix;       // of the workload names: "vk", "cuda"
  std::string_view hand_written;  // the baseline name of the hand-written kernels: "glsl", "nvcc"
  std::string_view raw_launch;    // the baseline name of launches recorded by hand: "device", "driver"
  // The hand-written side on the device of `program` (an Arch of this
  // backend); `owner` keeps `program` alive as long as the result lives.
  std::shared_ptr<HandWritten> (*open)(std::shared_ptr<const void> owner, const grove::Program& program);
};

// The GPU backends that can run here (each one that cannot is reported on
// stderr with its reason and left out).
const std::vector<Backend>& backends();

// "<prefix>_<name>": "vk_saxpy".
std::string workload(const Backend& backend, std::string_view name);

// A pair whose hand-written side is `launches` queued, then a sync.
Pair hand_written_pair(std::function<void()> grove_run, std::shared_ptr<HandWritten> device,
                       std::vector<HandWritten::Launch> launches, std::int64_t items_per_run);

// Reports each side's bandwidth for `bytes_per_run` bytes of memory traffic
// per run (harness.h) and, where the device's peak is known, each side's
// share of it (counters grove_of_peak, baseline_of_peak and peak_GBps).
void report_bandwidth(Pair& pair, double bytes_per_run, double peak_bytes_per_second);

// Groups of `group_size` that cover `invocations`.
std::uint32_t groups_for(std::uint64_t invocations, std::uint32_t group_size);

std::uint32_t float_bits(float f);

// A 32-bit integer hash (the finaliser of a multiplicative hash). Written
// out identically in shaders/bench_sparse_activate.comp,
// bench/cuda/bench_kernels.cu and, through hash_dsl, in the Grove kernels.
constexpr std::uint32_t hash_u32(std::uint32_t n, std::uint32_t salt) {
  std::uint32_t h = n * 0x9E3779B1u ^ salt;
  h = (h ^ (h >> 15u)) * 0x2C1B3C6Du;
  h = (h ^ (h >> 12u)) * 0x297A2D39u;
  return h ^ (h >> 15u);
}
// The same inside a Grove kernel (n and salt: u32 expressions).
grove::Expr hash_dsl(const grove::Expr& n, const grove::Expr& salt);

// "" if got == want element by element (|difference| <= tolerance), else a
// message naming the first mismatch and how many there are.
std::string compare(std::span<const float> got, std::span<const float> want, float tolerance,
                    std::string_view what);

// Throws `error` as a grove::Error unless it is empty (the result of compare()).
void check(const std::string& error);

// Seconds since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace grove_bench::gpu
