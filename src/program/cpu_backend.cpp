// src/program/cpu_backend.cpp — the LLVM CPU backend: lowered IR to native
// code through the shared LLVM code generator (src/llvm/codegen.h: one
// function per task, JIT-loaded for this CPU), and a device whose buffers
// are host memory, whose serial tasks run on the calling thread and whose
// parallel tasks oneTBB spreads over the cores (Config::cpu_threads of
// them). Launches finish before they return.
//
// print and assert write the context buffer's records as on Vulkan
// (runtime/core/context_layout.h); the device formats them after each
// launch of a kernel that has messages. A failed assertion stops the
// launch after the task that failed it.
//
// Compiled kernels are kept in the Jit's memory and in the disk cache
// (Config::cache_dir; src/llvm/disk_cache.h). GROVE_DUMP_DIR gets each
// kernel's LLVM IR before (.cpu.ll) and after (.cpu.opt.ll) optimisation
// and its assembly (.cpu.s); a kernel is then compiled, never read from a
// cache.
//
// Not yet (issue 12): plans that carry CPU code (a kernel runs in the
// process that compiled it, or one that finds it in the disk cache).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <memory>
#include <string>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/plan_builder.h"
#include "runtime/core/context_records.h"
#include "llvm/codegen.h"
#include "llvm/disk_cache.h"
#include "program/backend.h"
#include "program/cpu_pool.h"
#include "program/host_device.h"

#if GROVE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace grove::detail {

namespace {

// The plan and the JIT-compiled functions (kept alive with their JIT).
class CpuKernel : public rt::LoadedKernel {
 public:
  std::shared_ptr<llvm_backend::Jit> jit;
  llvm_backend::JitKernel code;
};

namespace ctx = rt::context;

class CpuDevice : public HostDevice {
 public:
  CpuDevice(llvm_backend::Jit::Host host, int threads, rt::PrintSink print)
      : HostDevice("CPU backend"), host_(std::move(host)), threads_(threads), pool_(threads),
        records_("CPU backend", std::move(print)) {
    make_context(rt::kInitialPrintRingWords);
  }
  std::string name() const override {
    return "LLVM CPU backend: " + host_.model + " (" + host_.cpu + ", " + host_.vector_isa + " " +
           std::to_string(host_.vector_bits) + "-bit vectors), " + std::to_string(threads_) +
           (threads_ == 1 ? " thread" : " threads");
  }
  bool synchronous() const override { return true; }

  std::unique_ptr<rt::LoadedKernel> load(rt::KernelPlan plan) override {
    throw Error("kernel '" + plan.name + "': the CPU backend runs kernels it compiled in this process; a plan "
                "does not carry CPU code yet, so load plans on Vulkan");
  }

  // The kernel's messages are registered (CpuBackend::compile).
  void add_messages(const rt::KernelPlan& plan) { records_.add(plan); }

  void launch(rt::LoadedKernel& loaded, std::span<const uint64_t> args, const std::vector<bool>& run,
              std::span<const int> slot_buffers) override {
    auto& k = static_cast<CpuKernel&>(loaded);
    const bool reports = records_.launched(k.plan);
    if (!k.plan.messages.empty()) context_[ctx::kMessageBase] = k.plan.messages.front().id;
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
      const rt::TaskPlan& task = k.plan.tasks[i];
      pointers.assign(1, context_.data());
      for (int slot : task.slots)
        pointers.push_back(buffers_.at(static_cast<size_t>(slot_buffers[static_cast<size_t>(slot)])).data());
      uint32_t* const* p = pointers.data();
      const llvm_backend::TaskFn fn = k.code.functions[i];
      if (!task.parallel) {
        fn(p, a, 0, 1);
      } else if (const int32_t count = k.code.counts[i](p, a); count > 0) {
        run_parallel(fn, p, a, count);
      }
      if (failed()) return;  // an assertion failed: later tasks do not run
    }
  }

  void run_parallel(llvm_backend::TaskFn fn, uint32_t* const* p, const uint64_t* a, int32_t count) {
    // About eight chunks per thread: enough to balance uneven iterations
    // (a struct-for's cells differ in cost), few enough that a chunk's
    // call is noise.
    const int32_t grain = std::max<int32_t>(1, count / (8 * threads_));
    // oneTBB orders what the launching thread did before the loop before
    // every chunk, and every chunk before the join. ThreadSanitizer does
    // not see that (cpu_pool.h), so the same edges are told to it here;
    // races between chunks stay visible.
    Job job{fn, p, a};
    auto* start = reinterpret_cast<char*>(&job);
    tsan_release(start);
    pool_.parallel_for(count, grain, run_chunk, &job);
    tsan_acquire(start + 1);
  }

  // A parallel task's chunk. The job's first byte is ThreadSanitizer's start
  // token, its second the end token (apart, so that a chunk that ends is
  // not ordered before the chunks that start after it). In its reports, the
  // JIT-compiled task function is the frame right above this one (shown as
  // <null>: ThreadSanitizer cannot name JIT code).
  struct Job {
    llvm_backend::TaskFn fn;
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
    if (!rt::ContextRecords::any(header)) return;
    std::fill_n(context_.begin(), ctx::kHeaderWords, 0u);
    context_[ctx::kPrintCapacity] = ring_words_;
    const std::span<const uint32_t> ring(context_.data() + ctx::kHeaderWords,
                                         std::min(header[ctx::kPrintHead], ring_words_));
    const uint32_t wanted = records_.print(header, ring, ring_words_);
    if (wanted > ring_words_) make_context(wanted);
    records_.raise_assertion(header);
  }

  llvm_backend::Jit::Host host_;
  int threads_;
  CpuPool pool_;
  std::vector<uint32_t> context_;  // header, then the print ring
  uint32_t ring_words_ = 0;
  rt::ContextRecords records_;
};

class CpuBackend : public Backend {
 public:
  CpuBackend(std::shared_ptr<llvm_backend::Jit> jit, CpuDevice& device, bool debug, std::string cache_dir)
      : jit_(std::move(jit)), device_(device), debug_(debug), cache_dir_(std::move(cache_dir)) {}
  Arch arch() const override { return Arch::Cpu; }
  // A struct-for's iteration is a run of up to 512 cells of one container
  // (a whole 8x8x8 block): its list entry is read once, and the cells are a
  // serial loop that LLVM vectorises. Bigger containers (a dense field under
  // the root) are split into runs, so that they still spread over the cores.
  uint32_t cells_per_iteration() const override { return 512; }
  std::unique_ptr<rt::LoadedKernel> compile(const ir::Kernel& kernel, const ir::SNodeForest&,
                                            rt::KernelPlan plan) override {
    auto k = std::make_unique<CpuKernel>();
    k->jit = jit_;
    const std::string dump = dump_dir();
    llvm_backend::CodegenOptions options;
    options.debug = debug_;
    options.keep_text = !dump.empty();
    options.cache_dir = cache_dir_;
    {
      const std::vector<uint8_t> bytes = rt::serialize(plan);  // what the plan adds to the IR
      options.key_extra.assign(bytes.begin(), bytes.end());
    }
    k->code = jit_->add(kernel, options);
    if (!dump.empty()) {
      const std::filesystem::path base = std::filesystem::path(dump) / dump_name(plan.name);
      std::ofstream(base.string() + ".cpu.ll") << k->code.ir_before;
      std::ofstream(base.string() + ".cpu.opt.ll") << k->code.ir_after;
      std::ofstream(base.string() + ".cpu.s") << k->code.assembly;
    }
    GROVE_ASSERT(k->code.tasks.size() == plan.tasks.size(), "the LLVM code generator made a function per task");
    plan.backend = "cpu";
    for (size_t i = 0; i < plan.tasks.size(); ++i) {
      const llvm_backend::CpuTask& c = k->code.tasks[i];
      rt::TaskPlan& t = plan.tasks[i];
      t.entry_point = c.entry;
      t.count_entry_point = c.count_entry;
      for (const llvm_backend::TreeKey& key : c.trees) t.slots.push_back(ir::slot_of(plan, key.first, key.second));
    }
    plan.messages = k->code.messages;
    for (rt::MessagePlan& m : plan.messages) m.id += next_message_;  // the device's ids
    next_message_ += static_cast<uint32_t>(plan.messages.size());
    device_.add_messages(plan);
    k->plan = std::move(plan);
    return k;
  }

 private:
  std::shared_ptr<llvm_backend::Jit> jit_;
  CpuDevice& device_;  // its device (compile() is only called while the Program lives)
  bool debug_;
  std::string cache_dir_;
  uint32_t next_message_ = 0;  // message ids are unique in the device's table
};

}  // namespace

BackendAndDevice make_cpu_backend(const BackendOptions& options) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options.cpu_threads < 0)
    throw Error("Config::cpu_threads is " + std::to_string(options.cpu_threads) +
                "; give the number of threads (0: every core, " + std::to_string(cores) + " here)");
  int threads = options.cpu_threads == 0 ? cores : options.cpu_threads;
  // GROVE_CPU_THREADS stands in for "every core" (like OMP_NUM_THREADS): a
  // program that names its thread count keeps it.
  if (const char* env = std::getenv("GROVE_CPU_THREADS"); env != nullptr && options.cpu_threads == 0) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (*env == '\0' || *end != '\0' || n < 1 || n > 4096)
      throw Error(std::string("GROVE_CPU_THREADS is \"") + env +
                  "\"; give a number of threads from 1 to 4096, or unset it to use every core (" +
                  std::to_string(cores) + " here)");
    threads = static_cast<int>(n);
  }
  auto jit = std::make_shared<llvm_backend::Jit>();
  auto device = std::make_unique<CpuDevice>(jit->host(), threads, options.print);
  const std::string cache_dir = options.cache_dir == "off" ? ""
                                : options.cache_dir.empty() ? llvm_backend::DiskCache::default_dir()
                                                            : options.cache_dir;
  auto backend = std::make_unique<CpuBackend>(jit, *device, options.debug, cache_dir);
  return {std::move(device), std::move(backend)};
}

}  // namespace grove::detail
