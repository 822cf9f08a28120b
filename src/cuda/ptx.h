// src/cuda/ptx.h — the CUDA backend's compile side: lowered IR to PTX
// through the shared LLVM code generator (src/llvm/emit.h), retargeted to
// NVPTX. Each task of a kernel becomes a `kernel` entry point of one PTX
// module (the kernel's plan carries it; runtime/cuda loads it through the
// driver, which compiles PTX for the GPU it runs on).
//
// The entry ABI: parameters (context, trees..., arguments...) — the context
// buffer and the trees of TaskCode::trees as device pointers to u32 words,
// then each kernel argument as the 64-bit pattern of its compute type. A
// parallel task strides over its whole iteration count (so any grid size
// runs it); a serial task runs in one thread.
//
// Math functions come from the CUDA toolkit's libdevice
// (nvvm/libdevice/libdevice.10.bc), found as find_cuda_toolkit() says; a
// kernel that needs one where no toolkit is installed gets a grove::Error
// saying so. LLVM 19 targets sm_75 to sm_90; newer GPUs run sm_90 PTX
// (the driver compiles it for them).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "llvm/codegen.h"
#include "runtime/core/plan.h"

namespace grove::cuda {

// The oldest and newest targets the code generator accepts.
inline constexpr int kMinSm = 75;
inline constexpr int kMaxSm = 90;

// The CUDA toolkit's root: $CUDA_PATH, else $CUDA_HOME, else the parent of
// the directory of `nvcc` or `ptxas` on PATH, else /usr/local/cuda — the
// first that exists; "" when none does.
std::string find_cuda_toolkit();

struct PtxCode {
  std::vector<llvm_backend::TaskCode> tasks;  // entry = the PTX entry's name
  std::vector<rt::MessagePlan> messages;      // ids 0, 1, ... (plus the context's message base)
  std::string ptx;
  // With keep_text: LLVM IR before and after optimisation.
  std::string ir_before, ir_after;
};

class PtxCompiler {
 public:
  // Raises grove::Error for an `sm` outside [kMinSm, kMaxSm] or one LLVM
  // does not know.
  explicit PtxCompiler(int sm);
  ~PtxCompiler();
  PtxCompiler(const PtxCompiler&) = delete;
  PtxCompiler& operator=(const PtxCompiler&) = delete;

  int sm() const;
  // "nvptx64-nvidia-cuda, sm_90" (KernelPlan::target).
  std::string target() const;
  // What decides the code besides the kernel and the generator's options
  // (Grove's version and build, LLVM's, the target, the toolkit whose
  // libdevice is linked): the start of a disk cache key.
  std::string cache_key() const;
  // PTX for `kernel` (stage lowered). Thread-safe.
  PtxCode compile(const ir::Kernel& kernel, bool debug, bool keep_text = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove::cuda
