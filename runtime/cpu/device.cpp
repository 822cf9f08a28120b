// runtime/cpu/device.cpp — the CPU device (device.h).
#include "runtime/cpu/device.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <span>
#include <vector>

#include "grove/error.h"
#include "runtime/core/context_records.h"
#include "runtime/core/host_device.h"
#include "runtime/cpu/library.h"
#include "runtime/cpu/pool.h"
#include "runtime/core/sanitizers.h"

#if GROVE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace grove::rt::cpu {

namespace {

// The plan, its loaded library and the entry points of its tasks.
class CpuKernel : public LoadedKernel {
 public:
  std::unique_ptr<Library> library;
  std::vector<TaskFn> functions;  // per task
  std::vector<CountFn> counts;    // per task; null for serial tasks and counts the host knows
  bool one_thread = false;        // ElfCode::one_thread: every task on the launching thread
};

namespace ctx = context;

class CpuDevice : public HostDevice {
 public:
  CpuDevice(std::string machine, int threads, PrintSink print)
      : HostDevice("CPU device"), machine_(std::move(machine)), threads_(threads), pool_(threads),
        records_("CPU device", std::move(print)) {
    make_context(kInitialPrintRingWords);
  }
  std::string name() const override {
    return "LLVM CPU backend: " + machine_ + ", " + std::to_string(threads_) + (threads_ == 1 ? " thread" : " threads");
  }
  bool synchronous() const override { return true; }

  std::unique_ptr<LoadedKernel> load(KernelPlan plan) override {
    require_backend(plan, "cpu", "the CPU");
    check_target(plan);
    auto k = std::make_unique<CpuKernel>();
    k->library = std::make_unique<Library>(plan.elf().object, plan.name);
    for (const TaskPlan& t : plan.tasks) {
      k->functions.push_back(reinterpret_cast<TaskFn>(k->library->symbol(t.entry_point)));
      CountFn count = nullptr;
      if (t.parallel && !t.count_entry_point.empty()) {
        count = reinterpret_cast<CountFn>(k->library->symbol(t.count_entry_point));
      } else if (t.parallel && !counted_on_host(t)) {
        throw Error("kernel '" + plan.name + "': its task '" + t.label +
                    "' has neither a count function nor a count known on the host; the plan is damaged: "
                    "compile the kernel again");
      }
      k->counts.push_back(count);
    }
    k->one_thread = plan.elf().one_thread;
    records_.add(plan);
    k->plan = std::move(plan);
    return k;
  }

  void launch(LoadedKernel& loaded, std::span<const uint64_t> args, const std::vector<bool>& run,
              std::span<const int> slot_buffers) override {
    auto& k = static_cast<CpuKernel&>(loaded);
    const bool reports = records_.launched(k.plan);
    if (!k.plan.messages.empty()) context_[ctx::kMessageBase] = ContextRecords::message_base(k.plan);
    run_tasks(k, args, run, slot_buffers);
    if (reports) report();
  }
  void sync() override {}

 private:
  void run_tasks(CpuKernel& k, std::span<const uint64_t> args, const std::vector<bool>& run,
                 std::span<const int> slot_buffers) {
    const uint64_t* a = args.data();
    std::vector<uint32_t*> pointers;
    for (size_t i = 0; i < k.plan.tasks.size(); ++i) {
      if (i < run.size() && !run[i]) continue;
      const TaskPlan& task = k.plan.tasks[i];
      pointers.assign(1, context_.data());
      for (int slot : task.slots)
        pointers.push_back(buffers_.at(static_cast<size_t>(slot_buffers[static_cast<size_t>(slot)])).data());
      uint32_t* const* p = pointers.data();
      const TaskFn fn = k.functions[i];
      const auto start = profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      if (!task.parallel) {
        fn(p, a, 0, 1);
      } else if (const int32_t count = k.counts[i] ? k.counts[i](p, a) : host_count(k.plan, task, args); count > 0) {
        if (k.one_thread) fn(p, a, 0, count);  // its code has no atomics: no other thread may run it
        else run_parallel(fn, p, a, count, min_grain(task.kind));
      }
      if (profiling_)
        add_task_time(k.plan, i, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (failed()) return;  // an assertion failed: later tasks do not run
    }
  }

  // A task's count from its plan (host_iterations). Its code runs
  // iterations [0, count) in 32-bit offsets: a longer loop is refused.
  static int32_t host_count(const KernelPlan& plan, const TaskPlan& task, std::span<const uint64_t> args) {
    const int64_t n = host_iterations(task, args).value_or(0);
    if (n > std::numeric_limits<int32_t>::max())
      throw Error("kernel '" + plan.name + "': its task '" + task.label + "' has " + std::to_string(n) +
                  " iterations, more than the CPU backend runs in one launch (2^31 - 1); split the loop");
    return static_cast<int32_t>(n);
  }

  // The fewest iterations of a task worth handing to another thread. A
  // listgen iteration reads 16 words of in-use bits and writes a word per
  // entry in use (at most 512): well under a microsecond, less than waking
  // a thread and joining it, so a chunk takes eight at least, and a list of
  // a few thousand entries is made on the launching thread alone.
  static int32_t min_grain(TaskKind kind) { return kind == TaskKind::listgen ? 8 : 1; }

  void run_parallel(TaskFn fn, uint32_t* const* p, const uint64_t* a, int32_t count, int32_t min_grain) {
    if (count <= min_grain) {
      fn(p, a, 0, count);
      return;
    }
    // About eight chunks per thread: enough to balance uneven iterations
    // (a struct-for's cells differ in cost), few enough that a chunk's
    // call is noise.
    const int32_t grain = std::max<int32_t>(min_grain, count / (8 * threads_));
    // oneTBB orders what the launching thread did before the loop before
    // every chunk, and every chunk before the join. ThreadSanitizer does
    // not see that (pool.h), so the same edges are told to it here; races
    // between chunks stay visible.
    Job job{fn, p, a};
    auto* start = reinterpret_cast<char*>(&job);
    tsan_release(start);
    pool_.parallel_for(count, grain, run_chunk, &job);
    tsan_acquire(start + 1);
  }

  // A parallel task's chunk. The job's first byte is ThreadSanitizer's start
  // token, its second the end token (apart, so that a chunk that ends is
  // not ordered before the chunks that start after it). In its reports, the
  // kernel's task function is the frame right above this one.
  struct Job {
    TaskFn fn;
    uint32_t* const* p;
    const uint64_t* a;
  };
  static void run_chunk(void* data, int32_t lo, int32_t hi) {
    tsan_acquire(data);
    const Job& j = *static_cast<const Job*>(data);
    j.fn(j.p, j.a, lo, hi);
    tsan_release(static_cast<char*>(data) + 1);
  }

  static void tsan_acquire([[maybe_unused]] void* token) {
#if GROVE_TSAN
    __tsan_acquire(token);
#endif
  }
  static void tsan_release([[maybe_unused]] void* token) {
#if GROVE_TSAN
    __tsan_release(token);
#endif
  }

  // Read once the task's threads have finished (parallel_for has joined).
  bool failed() const { return context_[ctx::kAssertFlag] != 0; }

  void make_context(uint32_t ring_words) {
    context_.assign(ctx::kHeaderWords + size_t{ring_words}, 0u);
    context_[ctx::kPrintCapacity] = ring_words;
    ring_words_ = ring_words;
  }

  // The launch's records: its prints, then its failed assertion (raised).
  void report() {
    uint32_t header[ctx::kHeaderWords];
    std::copy_n(context_.begin(), ctx::kHeaderWords, header);
    if (!ContextRecords::any(header)) return;
    std::fill_n(context_.begin(), ctx::kHeaderWords, 0u);
    context_[ctx::kPrintCapacity] = ring_words_;
    const std::span<const uint32_t> ring(context_.data() + ctx::kHeaderWords,
                                         std::min(header[ctx::kPrintHead], ring_words_));
    const uint32_t wanted = records_.print(header, ring, ring_words_);
    if (wanted > ring_words_) make_context(wanted);
    records_.raise_assertion(header);
  }

  std::string machine_;
  int threads_;
  Pool pool_;
  std::vector<uint32_t> context_;  // header, then the print ring
  uint32_t ring_words_ = 0;
  ContextRecords records_;
};

}  // namespace

std::unique_ptr<Device> make_device(std::string machine, int threads, PrintSink print) {
  return std::make_unique<CpuDevice>(std::move(machine), std::max(1, threads), std::move(print));
}

std::string cpu_model() {
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      std::string model = line.substr(line.find(':') + 1);
      model.erase(0, model.find_first_not_of(' '));
      return model;
    }
  return "";
}

}  // namespace grove::rt::cpu
