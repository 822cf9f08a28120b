// cuda_common.cpp — see cuda_common.h.
#include "cuda_common.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "program/program_impl.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/driver.h"

// bench/cuda/bench_kernels.cu as nvcc built it (bench/embed_bytes.cmake).
extern const unsigned char grove_bench_cuda_fatbin[];
extern const std::size_t grove_bench_cuda_fatbin_size;

namespace grove_bench::cudab {
namespace {

namespace cu = grove::rt::cuda;

class CudaHandWritten : public gpu::HandWritten {
 public:
  CudaHandWritten(std::shared_ptr<const void> owner, const cu::DeviceInfo& info)
      : owner_(std::move(owner)), d_(cu::Driver::get()), name_(info.name) {
    d_.check(d_.cuDeviceGet(&device_, info.index), "cuDeviceGet");
    d_.check(d_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain on " + name_);
    current();
    d_.check(d_.cuStreamCreate(&stream_, cu::CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    d_.check(d_.cuModuleLoadDataEx(&module_, grove_bench_cuda_fatbin, 0, nullptr, nullptr),
             "loading nvcc's kernels (bench/cuda/bench_kernels.cu, " + std::to_string(grove_bench_cuda_fatbin_size) +
                 " bytes) on " + name_);
  }
  ~CudaHandWritten() override {
    d_.cuCtxSetCurrent(context_);
    d_.cuStreamSynchronize(stream_);
    for (const Allocation& a : buffers_) d_.cuMemFree_v2(a.ptr);
    if (module_ != nullptr) d_.cuModuleUnload(module_);
    d_.cuStreamDestroy_v2(stream_);
    d_.cuDevicePrimaryCtxRelease_v2(device_);
  }
  CudaHandWritten(const CudaHandWritten&) = delete;
  CudaHandWritten& operator=(const CudaHandWritten&) = delete;

  Buffer create_buffer(std::uint64_t bytes, const std::string& name) override {
    current();
    Allocation a;
    a.bytes = bytes;
    d_.check(d_.cuMemAlloc_v2(&a.ptr, static_cast<size_t>(bytes == 0 ? 4 : bytes)),
             "allocating " + std::to_string(bytes) + " bytes for '" + name + "' on " + name_);
    buffers_.push_back(a);
    return static_cast<Buffer>(buffers_.size() - 1);
  }
  void write(Buffer buffer, std::uint64_t offset, const void* data, std::uint64_t bytes) override {
    current();
    d_.check(d_.cuMemcpyHtoDAsync_v2(at(buffer, offset, bytes), data, bytes, stream_), "cuMemcpyHtoDAsync");
    d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");  // `data` may be reused on return
  }
  void fill(Buffer buffer, std::uint64_t offset, std::uint64_t bytes, std::uint32_t word) override {
    current();
    if (bytes % 4 != 0) throw grove::Error("CUDA baseline: fill of " + std::to_string(bytes) + " bytes, not whole words");
    d_.check(d_.cuMemsetD32Async(at(buffer, offset, bytes), word, bytes / 4, stream_), "cuMemsetD32Async");
  }
  void read(Buffer buffer, std::uint64_t offset, void* out, std::uint64_t bytes) override {
    current();
    d_.check(d_.cuMemcpyDtoHAsync_v2(out, at(buffer, offset, bytes), bytes, stream_), "cuMemcpyDtoHAsync");
    d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }
  Launch prepare(const std::string& kernel, std::vector<Buffer> buffers, std::vector<std::uint32_t> params,
                 std::uint32_t groups, std::uint32_t group_size) override {
    current();
    Prepared& p = launches_.emplace_back();
    d_.check(d_.cuModuleGetFunction(&p.function, module_, kernel.c_str()),
             "CUDA baseline: kernel '" + kernel + "' of bench/cuda/bench_kernels.cu");
    p.groups = groups;
    p.group_size = group_size;
    for (Buffer b : buffers) p.pointers.push_back(at(b, 0, 0));
    p.values = std::move(params);
    for (cu::CUdeviceptr& ptr : p.pointers) p.args.push_back(&ptr);
    for (std::uint32_t& v : p.values) p.args.push_back(&v);
    return static_cast<Launch>(launches_.size() - 1);
  }
  // Only the launch: the context is current on this thread already.
  void launch(Launch launch) override {
    Prepared& p = launches_.at(static_cast<size_t>(launch));
    d_.check(d_.cuLaunchKernel(p.function, p.groups, 1, 1, p.group_size, 1, 1, 0, stream_, p.args.data(), nullptr),
             "cuLaunchKernel");
  }
  void sync() override { d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize"); }
  bool float_atomic_add() const override { return true; }
  // Double data rate: two transfers per clock across the bus.
  double peak_bytes_per_second() const override {
    int khz = 0, bits = 0;
    if (d_.cuDeviceGetAttribute(&khz, cu::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, device_) != cu::CUDA_SUCCESS ||
        d_.cuDeviceGetAttribute(&bits, cu::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, device_) != cu::CUDA_SUCCESS)
      return 0;
    return 2.0 * khz * 1e3 * bits / 8.0;
  }

 private:
  struct Allocation {
    cu::CUdeviceptr ptr = 0;
    std::uint64_t bytes = 0;
  };
  struct Prepared {
    cu::CUfunction function = nullptr;
    std::uint32_t groups = 1, group_size = 1;
    std::vector<cu::CUdeviceptr> pointers;
    std::vector<std::uint32_t> values;
    std::vector<void*> args;  // into pointers and values
  };

  void current() const { d_.check(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }
  cu::CUdeviceptr at(Buffer buffer, std::uint64_t offset, std::uint64_t bytes) const {
    const Allocation& a = buffers_.at(static_cast<size_t>(buffer));
    if (offset + bytes > a.bytes)
      throw grove::Error("CUDA baseline: bytes " + std::to_string(offset) + " to " + std::to_string(offset + bytes) +
                         " of a buffer of " + std::to_string(a.bytes));
    return a.ptr + offset;
  }

  std::shared_ptr<const void> owner_;  // keeps the Program, and so the primary context's user, alive
  const cu::Driver& d_;
  std::string name_;
  cu::CUdevice device_ = 0;
  cu::CUcontext context_ = nullptr;
  cu::CUstream stream_ = nullptr;
  cu::CUmodule module_ = nullptr;
  std::vector<Allocation> buffers_;
  std::deque<Prepared> launches_;  // a deque: args point into its elements
};

}  // namespace

std::shared_ptr<gpu::HandWritten> hand_written(std::shared_ptr<const void> owner, const grove::Program& program) {
  const cu::DeviceInfo* info = cu::info_of(program.impl()->context->device());
  if (info == nullptr) throw grove::Error("the program does not run on CUDA");
  return std::make_shared<CudaHandWritten>(std::move(owner), *info);
}

}  // namespace grove_bench::cudab
