// src/program/cuda_backend.cpp — the compile side of the CUDA backend:
// lowered IR to PTX through the shared LLVM code generator retargeted to
// NVPTX (src/cuda/ptx.h), put into the kernel's plan and loaded on the
// runtime's CUDA device (runtime/cuda/device.h), which hands the PTX to the
// driver. Code is made for Config::cuda_sm, else the device's compute
// capability (sm_90 for newer GPUs, which the driver compiles it for).
// Without a device (make_cuda_compiler) it only generates plans, for AOT
// modules saved by a Program on another arch. GROVE_DUMP_DIR gets each
// kernel's LLVM IR (.cuda.ll, .cuda.opt.ll) and PTX (.ptx).
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "cuda/ptx.h"
#include "program/backend.h"
#include "runtime/core/assert.h"
#include "runtime/cuda/device.h"

namespace grove::detail {

namespace {

class CudaBackend : public Backend {
 public:
  // `device`: nullptr for a compiler that only generates.
  CudaBackend(int sm, rt::Device* device, bool debug) : ptx_(sm), device_(device), debug_(debug) {}
  Arch arch() const override { return Arch::Cuda; }
  std::unique_ptr<rt::LoadedKernel> compile(const ir::Kernel& kernel, std::string_view text,
                                            const ir::SNodeForest& forest, rt::KernelPlan plan) override {
    if (device_ == nullptr) throw InternalError("the CUDA code generator without a device was asked to load a kernel");
    return device_->load(generate(kernel, text, forest, std::move(plan)));
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
    llvm_backend::complete_plan(plan, "cuda", code.tasks, std::move(code.messages));
    plan.library.assign(code.ptx.begin(), code.ptx.end());
    plan.target = ptx_.target();
    for (rt::TaskPlan& t : plan.tasks) t.local_size = t.parallel ? rt::cuda::kBlockThreads : 1;
    return plan;
  }

 private:
  cuda::PtxCompiler ptx_;
  rt::Device* device_;  // its device, if any (compile() is only called while the Program lives)
  bool debug_;
};

int checked_sm(int sm) {
  check_cuda_sm(sm);
  return sm;
}

}  // namespace

void check_cuda_sm(int sm) {
  if (sm != 0 && (sm < cuda::kMinSm || sm > cuda::kMaxSm))
    throw Error("Config::cuda_sm is " + std::to_string(sm) + "; give a compute capability from " +
                std::to_string(cuda::kMinSm) + " to " + std::to_string(cuda::kMaxSm) +
                " (major * 10 + minor: 75, 80, 86, 89, 90), or 0 for the device's own");
}

BackendAndDevice make_cuda_backend(const BackendOptions& options) {
  const int wanted = checked_sm(options.cuda_sm);
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
  auto backend = std::make_unique<CudaBackend>(sm, device.get(), options.debug);
  return {std::move(device), std::move(backend)};
}

std::unique_ptr<Backend> make_cuda_compiler(int sm, bool debug) {
  return std::make_unique<CudaBackend>(checked_sm(sm) != 0 ? sm : cuda::kMinSm, nullptr, debug);
}

}  // namespace grove::detail
