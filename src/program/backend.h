// src/program/backend.h — what the Program asks of a backend: tree buffers,
// compiled kernels, launches. The interpreter, Vulkan, CPU and CUDA each
// implement it once; nothing above this line knows which one runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grove/program.h"
#include "ir/ir.h"
#include "ir/snode.h"
#include "runtime/core/plan.h"

namespace grove::detail {

// What a backend made of one kernel's lowered IR: its plan (code blobs
// included), and whatever the backend keeps to launch it.
class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  rt::KernelPlan plan;
};

struct BackendOptions {
  bool debug = false;
  std::function<void(std::string_view)> print;  // where `print` output goes
  // Vulkan: the device (index or name substring; "" = GROVE_VULKAN_DEVICE,
  // else the best one) and whether to enable the Khronos validation layer.
  std::string device;
  bool validation = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Arch arch() const = 0;
  virtual std::string device_name() const = 0;
  // True when launch() finishes the work before returning (errors surface
  // at once); false when work is queued until read_words() or sync().
  virtual bool synchronous() const = 0;
  // The largest tree buffer the backend can hold, in bytes (the program lays
  // out trees to fit).
  virtual int64_t max_buffer_bytes() const { return INT64_MAX; }

  // One buffer per tree id (SNode trees and the scratch buffer).
  virtual void create_buffer(int tree, const std::vector<uint32_t>& initial) = 0;
  // Reads and writes are ordered after every launch queued before them.
  virtual void read_words(int tree, int64_t offset, int64_t count, uint32_t* out) = 0;
  virtual void write_words(int tree, int64_t offset, int64_t count, const uint32_t* in) = 0;

  // `kernel` (at Stage::lowered) outlives the result; `plan` is its
  // backend-neutral plan (ir::plan_kernel), which the backend completes.
  virtual std::unique_ptr<CompiledKernel> compile(const ir::Kernel& kernel, const ir::SNodeForest& forest,
                                                  rt::KernelPlan plan) = 0;
  // A kernel from its plan alone (code blobs included), as an AOT module or
  // a plan read back from bytes gives it. Backends whose code is not in the
  // plan (the interpreter runs IR) raise grove::Error.
  virtual std::unique_ptr<CompiledKernel> load(rt::KernelPlan plan) = 0;
  // Runs task i of the kernel when run[i] is true, in order. `args` are the
  // bit patterns of the kernel's arguments.
  virtual void launch(CompiledKernel& kernel, std::span<const uint64_t> args, const std::vector<bool>& run) = 0;
  // Waits for everything launched; raises the first kernel error (assertion)
  // a queued launch reported.
  virtual void sync() = 0;
};

std::unique_ptr<Backend> make_interp_backend(const BackendOptions& options);
#ifdef GROVE_WITH_VULKAN
// Opens the Vulkan device; raises grove::Error naming what is missing (no
// loader, no device, no validation layer).
std::unique_ptr<Backend> make_vulkan_backend(const BackendOptions& options);
#endif

}  // namespace grove::detail
