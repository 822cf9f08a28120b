// src/program/cuda_backend.cpp — the compile side of the CUDA backend:
// lowered IR to PTX through the shared LLVM code generator retargeted to
// NVPTX (src/cuda/ptx.h), put into the kernel's plan and loaded on the
// runtime's CUDA device (runtime/cuda/device.h), which hands the PTX to the
// driver. Code is made for the device's compute capability (sm_90 for
// newer GPUs, which the driver compiles it for). GROVE_DUMP_DIR gets each
// kernel's LLVM IR (.cuda.ll, .cuda.opt.ll) and PTX (.ptx).
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "cuda/ptx.h"
#include "program/backend.h"
#include "runtime/cuda/device.h"

namespace grove::detail {

namespace {

class CudaBackend : public Backend {
 public:
  CudaBackend(int sm, rt::Device& device, bool debug) : ptx_(sm), device_(device), debug_(debug) {}
  Arch arch() const override { return Arch::Cuda; }
  std::unique_ptr<rt::LoadedKernel> compile(const ir::Kernel& kernel, std::string_view, const ir::SNodeForest&,
                                            rt::KernelPlan plan) override {
    const std::string dump = dump_dir();
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
    return device_.load(std::move(plan));
  }

 private:
  cuda::PtxCompiler ptx_;
  rt::Device& device_;  // its device (compile() is only called while the Program lives)
  bool debug_;
};

}  // namespace

BackendAndDevice make_cuda_backend(const BackendOptions& options) {
  std::unique_ptr<rt::Device> device = rt::cuda::make_device(options.cuda_device, options.debug, options.print);
  const int sm = std::min(rt::cuda::info_of(*device)->sm, cuda::kMaxSm);
  if (sm < cuda::kMinSm)
    throw Error(device->name() + " is older than sm_" + std::to_string(cuda::kMinSm) +
                ", the oldest GPU Grove's CUDA backend targets; use Arch::Vulkan on it");
  auto backend = std::make_unique<CudaBackend>(sm, *device, options.debug);
  return {std::move(device), std::move(backend)};
}

}  // namespace grove::detail
