// src/program/cuda_backend.cpp — the compile side of the CUDA backend:
// lowered IR to PTX through the shared LLVM code generator retargeted to
// NVPTX (src/cuda/ptx.h), put into the kernel's plan and loaded on the
// runtime's CUDA device (runtime/cuda/device.h), which hands the PTX to the
// driver. Code is made for Config::cuda_sm, else the device's compute
// capability (sm_90 for newer GPUs, which the driver compiles it for).
// Without a device (make_cuda_compiler) it only generates plans, for AOT
// modules saved by a Program on another arch.
//
// Compiled kernels are kept in the disk cache (Config::cache_dir; entries
// of kind "cuda", src/llvm/disk_cache.h): the whole plan, its PTX and the
// binary the driver made of it for the GPU it was loaded on. A kernel found
// there is loaded with neither LLVM nor, on the same GPU and driver, the
// driver's PTX compiler. GROVE_DUMP_DIR gets each kernel's LLVM IR
// (.cuda.ll, .cuda.opt.ll) and PTX (.ptx); a kernel is then compiled, never
// read from the cache.
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "cuda/ptx.h"
#include "llvm/codegen.h"
#include "llvm/disk_cache.h"
#include "program/backend.h"
#include "program/registry.h"
#include "program/program_impl.h"
#include "program/test_hooks.h"
#include "runtime/core/assert.h"
#include "runtime/cuda/device.h"

namespace grove::detail {

namespace {

class CudaBackend : public Backend {
 public:
  // `device`: nullptr for a compiler that only generates; `cache_dir`: ""
  // for no disk cache.
  CudaBackend(int sm, rt::Device* device, bool debug, std::string cache_dir)
      : ptx_(sm), device_(device), debug_(debug), cache_(std::move(cache_dir), "cuda") {}
  Arch arch() const override { return Arch::Cuda; }
  const ir::TargetOps* target_ops() const override { return &llvm_backend::target_ops(); }
  // A shape spreads over a 2-D or 3-D launch (rt::cuda device: blocks of
  // the plan's sizes), its point found with no division.
  uint32_t grid_axes() const override { return 3; }
  std::unique_ptr<rt::LoadedKernel> compile(const ir::Kernel& kernel, std::string_view text,
                                            const ir::SNodeForest& forest, rt::KernelPlan plan) override {
    if (device_ == nullptr) throw InternalError("the CUDA code generator without a device was asked to load a kernel");
    // The key: what decides the code (the generator's build and target, the
    // options, what the plan adds to the IR, the lowered IR's text).
    std::string key;
    std::optional<rt::KernelPlan> cached;
    if (!cache_.dir().empty() && dump_dir().empty()) {
      const std::vector<uint8_t> neutral = rt::serialize(plan);
      key = ptx_.cache_key() + "debug " + (debug_ ? "1" : "0") + "\n" + std::string(neutral.begin(), neutral.end()) +
            "\n" + std::string(text);
      if (std::optional<std::vector<uint8_t>> bytes = cache_.load_bytes(key)) {
        try {
          cached = rt::deserialize_plan(*bytes, cache_.path_of(key));
        } catch (const Error&) {  // a miss: compiled and rewritten
        }
      }
    }
    rt::KernelPlan complete = cached ? std::move(*cached) : generate(kernel, text, forest, std::move(plan));
    const std::string binary_before = complete.ptx().binary_target;
    std::unique_ptr<rt::LoadedKernel> loaded = device_->load(std::move(complete));
    // New, or the driver made a binary for another GPU or driver than the cached one.
    if (!key.empty() && (!cached || loaded->plan.ptx().binary_target != binary_before))
      cache_.store_bytes(key, rt::serialize(loaded->plan));
    return loaded;
  }
  rt::KernelPlan generate(const ir::Kernel& kernel, std::string_view, const ir::SNodeForest&,
                          rt::KernelPlan plan) override {
    const std::string dump = device_ != nullptr ? dump_dir() : "";
    cuda::PtxCode code = ptx_.compile(kernel, debug_, !dump.empty());
    if (!dump.empty()) {
      const std::filesystem::path base = std::filesystem::path(dump) / dump_name(plan.name);
      std::ofstream(base.string() + ".cuda.ll") << code.ir_before;
      std::ofstream(base.string() + ".cuda.opt.ll") << code.ir_after;
      std::ofstream(base.string() + ".ptx") << code.ptx;
    }
    llvm_backend::complete_plan(plan, code.tasks, std::move(code.messages));
    plan.code = rt::PtxCode{.ptx = std::move(code.ptx), .target = ptx_.target()};
    for (rt::TaskPlan& t : plan.tasks)
      if (t.grid.empty()) t.local_size = t.parallel ? rt::cuda::kBlockThreads : 1;
    return plan;
  }

 private:
  cuda::PtxCompiler ptx_;
  rt::Device* device_;  // its device, if any (compile() is only called while the Program lives)
  bool debug_;
  llvm_backend::DiskCache cache_;
};

void check_cuda_sm(int sm) {
  if (sm != 0 && (sm < cuda::kMinSm || sm > cuda::kMaxSm))
    throw Error("Config::cuda_sm is " + std::to_string(sm) + "; give a compute capability from " +
                std::to_string(cuda::kMinSm) + " to " + std::to_string(cuda::kMaxSm) +
                " (major * 10 + minor: 75, 80, 86, 89, 90), or 0 for the device's own");
}

BackendAndDevice make_cuda_backend(const BackendOptions& options) {
  const int wanted = options.cuda_sm;  // checked by the Program (check_cuda_sm)
  std::unique_ptr<rt::Device> device = rt::cuda::make_device(options.cuda_device, options.debug, options.print);
  const int device_sm = rt::cuda::info_of(*device)->sm;
  if (device_sm < cuda::kMinSm)
    throw Error(device->name() + " is older than sm_" + std::to_string(cuda::kMinSm) +
                ", the oldest GPU Grove's CUDA backend targets; use Arch::Vulkan on it");
  if (wanted > device_sm)
    throw Error("Config::cuda_sm is " + std::to_string(wanted) + ", newer than " + device->name() +
                ", which runs sm_" + std::to_string(device_sm) + " and older; give " + std::to_string(device_sm) +
                " or less, or 0 for the device's own");
  const int sm = wanted != 0 ? wanted : std::min(device_sm, cuda::kMaxSm);
  auto backend = std::make_unique<CudaBackend>(sm, device.get(), options.debug, cache_dir_of(options));
  return {std::move(device), std::move(backend)};
}

// PTX needs no GPU: for Config::cuda_sm (the oldest target where it is 0).
std::unique_ptr<Backend> make_cuda_compiler(const BackendOptions& options) {
  return std::make_unique<CudaBackend>(options.cuda_sm != 0 ? options.cuda_sm : cuda::kMinSm, nullptr, options.debug,
                                       "");
}

}  // namespace

const BackendEntry kCudaBackend = {
    .arch = Arch::Cuda,
    .make = make_cuda_backend,
    .auto_rank = [](const BackendOptions&) { return 1; },
    .check_options = [](const BackendOptions& options) { check_cuda_sm(options.cuda_sm); },
    .module_code = "PTX",
    .make_compiler = make_cuda_compiler,
};

int64_t cuda_ptx_compiles(const Program& program) {
  return rt::cuda::ptx_compiles(program.impl()->context->device());
}

}  // namespace grove::detail
