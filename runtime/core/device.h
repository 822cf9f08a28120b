// runtime/core/device.h — what the runtime asks of a device: buffers of
// 32-bit words, kernels made from plans, launches, waiting. Vulkan
// implements it in runtime/vulkan; the reference interpreter (which runs
// IR, so lives with the compiler) in src/program. Nothing here knows IR.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grove/error.h"
#include "runtime/core/plan.h"
#include "runtime/core/profile.h"

namespace grove::rt {

// A kernel a device can launch: its plan and what the device made of it.
class LoadedKernel {
 public:
  virtual ~LoadedKernel() = default;
  KernelPlan plan;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;  // e.g. "llvmpipe (Vulkan 1.3, CPU)"
  // True when launch() finishes the work before returning (errors surface
  // at once); false when work is queued until a read or sync().
  virtual bool synchronous() const = 0;
  // The largest buffer the device can hold, in bytes.
  virtual int64_t max_buffer_bytes() const { return INT64_MAX; }

  // Buffer `id` (a fresh one; a used id is replaced) of `words` words:
  // `head` first, zeros after it. Devices that can zero memory themselves
  // send only `head`.
  virtual void create_buffer(int id, int64_t words, std::span<const uint32_t> head) = 0;
  virtual void destroy_buffer(int id) = 0;
  // Words [offset, offset + count) of buffer `id` are written front to back
  // and, once reached, kept (a pool's entries, taken in order; a dense
  // tree's arrays): a device whose buffers are host memory may back them
  // with large pages, a first write faulting once per 2 MiB instead of once
  // per 4 KiB. A hint; devices may ignore it.
  virtual void advise_filled_in_order(int /*id*/, int64_t /*offset*/, int64_t /*count*/) {}
  // Reads and writes are ordered after every launch queued before them.
  virtual void read_words(int id, int64_t offset, int64_t count, uint32_t* out) = 0;
  virtual void write_words(int id, int64_t offset, int64_t count, const uint32_t* in) = 0;
  // Buffer `id`'s words themselves, where its memory is the host's (the
  // CPU, the interpreter; a Vulkan device of unified memory, after waiting
  // for the work queued before): host copies of many elements then read
  // and write them in place. Valid until the next launch, transfer or
  // buffer change; empty on other devices.
  virtual std::span<uint32_t> host_words(int /*id*/) { return {}; }

  // A kernel from its plan alone (code blobs included); raises grove::Error
  // when the device cannot run it (another backend's plan, a feature the
  // device lacks, a device that runs no code blobs).
  virtual std::unique_ptr<LoadedKernel> load(KernelPlan plan) = 0;
  // Runs task i of the kernel when run[i] is true, in order; slot s of the
  // plan is buffer slot_buffers[s]. `args` are the bit patterns of the
  // arguments in their compute types.
  virtual void launch(LoadedKernel& kernel, std::span<const uint64_t> args, const std::vector<bool>& run,
                      std::span<const int> slot_buffers) = 0;
  // As launch(), recorded into an application's command buffer (a
  // VkCommandBuffer as void*) that the application submits, any number of
  // times; raises grove::Error on devices that cannot.
  virtual void record(LoadedKernel& kernel, std::span<const uint64_t> args, const std::vector<bool>& run,
                      std::span<const int> slot_buffers, void* command_buffer);
  // Waits for everything launched; raises the first kernel error (a failed
  // assertion) a queued launch reported.
  virtual void sync() = 0;

  // Profiling (Config::profile): while on, each task of each launch is
  // timed on the device's own clock (Vulkan timestamp queries, CUDA events,
  // the host's steady clock where tasks run on the host); record() is not
  // timed. A device that times nothing keeps this default, which refuses.
  virtual void set_profiling(bool on) {
    if (on) throw Error(name() + " cannot time its kernels' tasks, so it cannot be profiled; profile on another device");
    profiling_ = false;
  }
  bool profiling() const { return profiling_; }
  // Moves the times of the tasks of finished launches to `out`, oldest
  // first.
  virtual void take_task_times(std::vector<TaskTime>& out) {
    for (TaskTime& t : task_times_) out.push_back(std::move(t));
    task_times_.clear();
  }

 protected:
  // For devices whose tasks finish on the host.
  void add_task_time(const KernelPlan& plan, size_t task, double seconds) {
    task_times_.push_back(
        {plan.name, static_cast<int>(task), task < plan.tasks.size() ? plan.tasks[task].label : "", seconds});
  }
  bool profiling_ = false;
  std::vector<TaskTime> task_times_;
};

// Where `print` output goes (one call per line, newline included).
using PrintSink = std::function<void(std::string_view)>;

}  // namespace grove::rt
