// src/llvm/emit.h — the one LLVM code generator's internal interface, for
// the two places that drive it: the CPU's Jit (codegen.cpp) and the CUDA
// backend's PTX compiler (src/cuda/ptx.cpp). Only their translation units
// include it; it names LLVM types by declaration only.
//
// The targets differ only where they must:
//   - the CPU's task functions take the task ABI of codegen.h (buffers and
//     arguments through arrays, iterations [lo, hi) of a parallel loop, a
//     count function per parallel task);
//   - an NVPTX task is a `kernel` entry point taking (context, trees...,
//     arguments...) as parameters (trees in TaskCode::trees order, each
//     argument as the 64-bit pattern of its compute type) whose parallel
//     loop is grid-stride over the whole count, with thread and block
//     indices from NVVM's special registers; math functions are
//     libdevice's (__nv_*), linked in before optimisation.
// Everything else — arithmetic, tree memory and its atomics (`monotonic`:
// relaxed), the sparse runtime (which arrives as IR), print and assert
// records in the context buffer, debug-mode early returns — is the same
// code.
#pragma once

#include <string>
#include <vector>

#include "llvm/codegen.h"

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace grove::llvm_backend {

enum class Target { cpu, nvptx };

struct Emitted {
  std::vector<TaskCode> tasks;
  std::vector<rt::MessagePlan> messages;  // ids 0, 1, ...
};

// Emits `kernel` (stage lowered) into `module`, whose triple and data
// layout are set, and verifies it; raises InternalError for a statement the
// generator does not handle.
Emitted emit_kernel(const ir::Kernel& kernel, const CodegenOptions& options, Target target, llvm::Module& module);

// LLVM's -O3 pipeline for `machine`'s target (the CPU's vector width, or
// NVPTX with NVVM's reflection and address-space inference).
void optimize(llvm::Module& module, llvm::TargetMachine& machine);

// The module as LLVM IR text.
std::string to_text(const llvm::Module& module);

}  // namespace grove::llvm_backend
