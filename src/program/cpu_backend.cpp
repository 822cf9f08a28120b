// src/program/cpu_backend.cpp — the compile side of the LLVM CPU backend:
// lowered IR to native code through the shared LLVM code generator
// (src/llvm_cpu/jit.h: one function per task, the kernel linked into one
// shared object for this CPU), put into the kernel's plan and loaded on the
// runtime's CPU device (runtime/cpu/device.h), which opens the shared object
// and runs the tasks on oneTBB's threads (Config::cpu_threads of them). A
// plan made here loads again on any CPU device with the same instruction
// set, in this process or another, with no compiler.
//
// Compiled kernels are kept in the Jit's memory and in the disk cache
// (Config::cache_dir; src/llvm/disk_cache.h). GROVE_DUMP_DIR gets each
// kernel's LLVM IR before (.cpu.ll) and after (.cpu.opt.ll) optimisation
// and its assembly (.cpu.s); a kernel is then compiled, never read from a
// cache.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <memory>
#include <string>
#include <string_view>

#include "grove/error.h"
#include "ir/builder.h"
#include "ir/work_bound.h"
#include "llvm_cpu/jit.h"
#include "llvm/disk_cache.h"
#include "program/backend.h"
#include "program/registry.h"
#include "runtime/cpu/device.h"

namespace grove::detail {

namespace {

class CpuBackend : public Backend {
 public:
  CpuBackend(std::unique_ptr<llvm_backend::Jit> jit, rt::Device& device, bool debug, std::string cache_dir,
             bool tiers)
      : jit_(std::move(jit)),
        device_(device),
        debug_(debug),
        cache_dir_(std::move(cache_dir)),
        masks_near_reads_(jit_->host().vector_isa != "AVX2"),
        tiers_(tiers_enabled() && tiers) {}
  Arch arch() const override { return Arch::Cpu; }
  // A struct-for's iteration is a run of up to 512 cells of one container
  // (a whole 8x8x8 block): its list entry is read once, and the cells are a
  // serial loop that LLVM vectorises. Bigger containers (a dense field under
  // the root) are split into runs, so that they still spread over the cores.
  uint32_t cells_per_iteration() const override { return 512; }
  // A stencil's reads at constant offsets find their neighbouring blocks
  // once per run (ir::LowerAccessOptions::NearReads).
  ir::LowerAccessOptions::NearReads near_reads() const override {
    return ir::LowerAccessOptions::NearReads::at_offsets;
  }
  bool masks_near_reads() const override { return masks_near_reads_; }
  uint32_t range_piece() const override { return 4096; }
  const ir::TargetOps* target_ops() const override { return &llvm_backend::target_ops(); }
  std::unique_ptr<rt::LoadedKernel> compile(const ir::Kernel& kernel, std::string_view text, const ir::SNodeForest&,
                                            rt::KernelPlan plan) override {
    bool quick = false;
    return code(kernel, text, std::move(plan), quick);
  }
  // Tiers: a kernel whose launch runs at most kQuickWork statements
  // (ir::work_bound), about 0.1 ms of unoptimised code at most (a
  // 90,000-point loop of 12 statements: 57 µs a launch on 2 threads, 100 on
  // one, against 6-9 µs at -O3), is first compiled at the quick tier
  // (llvm_backend::CodegenOptions::quick: 1.0-1.2 against 9.9-11.4 ms for
  // a one-loop kernel on a Zen 4 VM), and at the full tier once its
  // launches have run as long as its quick compile took (full_tier: on the
  // Program's background thread, while the launches go on with the quick
  // code). A kernel launched once then saves the full tier's compile, and
  // one launched for long costs at most twice the quick compile more than
  // a full compile at once would have, none of it in a launch. A kernel of
  // unknown work (a loop up to an argument, a while_) or more is compiled
  // at the full tier at once: its first launch might run long in code
  // several times slower. Config::cpu_tiers = false or GROVE_CPU_TIERS=0
  // makes every kernel's code at the full tier at once (dumps do too).
  static constexpr int64_t kQuickWork = int64_t{1} << 20;
  bool tiers() const override { return tiers_; }
  std::unique_ptr<rt::LoadedKernel> compile_first(const ir::Kernel& kernel, std::string_view text,
                                                  const ir::SNodeForest& forest, rt::KernelPlan plan,
                                                  const ir::Kernel& recorded, bool& quick,
                                                  double& tier_up_seconds) override {
    const int64_t work = ir::work_bound(recorded, forest);
    quick = tiers_ && work >= 0 && work <= kQuickWork && dump_dir().empty();
    if (!quick) return compile(kernel, text, forest, std::move(plan));
    const auto start = std::chrono::steady_clock::now();
    bool compiled = false;
    std::unique_ptr<rt::LoadedKernel> out = code(kernel, text, std::move(plan), quick, &compiled);
    // (Code read from a cache took no compile: the last one measured stands for it.)
    if (compiled) quick_compile_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    tier_up_seconds = quick_compile_seconds_;
    return out;
  }
  // On one thread: the Program's launches go on beside it, on every core.
  // The job's kernel reads a copy of the Program's field table (the
  // fingerprint names fields), which the Program may add to meanwhile.
  std::function<rt::KernelPlan()> full_tier(const ir::Kernel& kernel, std::string_view text,
                                            rt::KernelPlan plan) override {
    struct Input {
      ir::FieldTable fields;
      std::unique_ptr<ir::Kernel> kernel;
      std::string text;
      rt::KernelPlan plan;
    };
    auto in = std::make_shared<Input>();
    if (kernel.field_table() != nullptr) in->fields = *kernel.field_table();
    in->kernel = ir::clone_kernel(kernel, in->fields);
    in->text = text;
    in->plan = std::move(plan);
    return [this, in] {
      bool quick = false;
      return make(*in->kernel, in->text, in->plan, quick, nullptr, 1);
    };
  }

 private:
  // `plan` with its code at the full tier, or at the quick one where
  // `quick` is set and the Jit holds no full tier's code for the kernel
  // (`quick` then says which it made), loaded on the device; `compiled`:
  // LLVM made it now.
  std::unique_ptr<rt::LoadedKernel> code(const ir::Kernel& kernel, std::string_view text, rt::KernelPlan plan,
                                         bool& quick, bool* compiled = nullptr) {
    return device_.load(make(kernel, text, std::move(plan), quick, compiled, 0));
  }
  // The same, loaded nowhere; the Jit compiles on `threads` threads at most
  // (0: its own count). Called on the Program's thread, and on its
  // background compile's (full_tier): the Jit takes turns.
  rt::KernelPlan make(const ir::Kernel& kernel, std::string_view text, rt::KernelPlan plan, bool& quick,
                      bool* compiled, int threads) {
    const std::string dump = dump_dir();
    llvm_backend::CodegenOptions options;
    options.debug = debug_;
    options.keep_text = !dump.empty();
    options.cache_dir = cache_dir_;
    options.text = text;
    options.quick = quick;
    options.threads = threads;
    {
      const std::vector<uint8_t> bytes = rt::serialize(plan);  // what the plan adds to the IR
      options.key_extra.assign(bytes.begin(), bytes.end());
    }
    llvm_backend::CpuCode code = jit_->add(kernel, options);
    quick = code.quick;
    if (compiled != nullptr) *compiled = code.source == llvm_backend::CpuCode::Source::compiled;
    if (!dump.empty()) {
      const std::filesystem::path base = std::filesystem::path(dump) / dump_name(plan.name);
      std::ofstream(base.string() + ".cpu.ll") << code.ir_before;
      std::ofstream(base.string() + ".cpu.opt.ll") << code.ir_after;
      std::ofstream(base.string() + ".cpu.s") << code.assembly;
    }
    llvm_backend::complete_plan(plan, code.tasks, std::move(code.messages));
    plan.code = rt::ElfCode{.object = std::move(code.library),
                            .target = jit_->target(),
                            .target_features = jit_->features(),
                            .one_thread = jit_->one_thread()};
    return plan;
  }

  std::unique_ptr<llvm_backend::Jit> jit_;
  rt::Device& device_;  // its device (compile() is only called while the Program lives)
  bool debug_;
  std::string cache_dir_;
  // Reads at offsets as masked loads, but with AVX2 alone (measured:
  // ir::LowerAccessOptions::masked_near_reads).
  bool masks_near_reads_;
  bool tiers_;  // Config::cpu_tiers and GROVE_CPU_TIERS
  double quick_compile_seconds_ = 1e-3;  // the last quick compile measured

  static bool tiers_enabled() {
    const char* env = std::getenv("GROVE_CPU_TIERS");
    if (env == nullptr || *env == '\0') return true;
    if (std::string_view(env) == "0") return false;
    if (std::string_view(env) == "1") return true;
    throw Error(std::string("GROVE_CPU_TIERS is \"") + env + "\"; give 0 (every kernel's code at the full tier at "
                "once) or 1 (small kernels first at the quick tier, the default), or unset it");
  }
};

}  // namespace

std::string cache_dir_of(const BackendOptions& options) {
  if (options.cache_dir == "off") return "";
  return options.cache_dir.empty() ? llvm_backend::DiskCache::default_dir() : options.cache_dir;
}

namespace {

// The most threads a Program's parallel tasks run on (Config::cpu_threads,
// GROVE_CPU_THREADS): oneTBB's arena dies, or takes gigabytes, far past it.
constexpr int kMaxCpuThreads = 4096;

BackendAndDevice make_cpu_backend(const BackendOptions& options) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int threads = options.cpu_threads == 0 ? cores : options.cpu_threads;
  // GROVE_CPU_THREADS stands in for "every core" (like OMP_NUM_THREADS): a
  // program that names its thread count keeps it.
  if (const char* env = std::getenv("GROVE_CPU_THREADS"); env != nullptr && options.cpu_threads == 0) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (*env == '\0' || *end != '\0' || n < 1 || n > kMaxCpuThreads)
      throw Error(std::string("GROVE_CPU_THREADS is \"") + env + "\"; give a number of threads from 1 to " +
                  std::to_string(kMaxCpuThreads) + ", or unset it to use every core (" +
                  std::to_string(cores) + " here)");
    threads = static_cast<int>(n);
  }
  std::string target = options.cpu_target;
  if (const char* env = std::getenv("GROVE_CPU_TARGET"); env != nullptr && target.empty()) target = env;
  // One thread: the Program's operations take turns and its tasks run on
  // the launching thread, so no two threads ever run its code at once, and
  // its atomics can be plain loads and stores (3.8x a step of mpm88).
  auto jit = std::make_unique<llvm_backend::Jit>(target, threads == 1);
  const llvm_backend::Jit::Host host = jit->host();
  auto device = rt::cpu::make_device(host.model + " (" + host.cpu + ", " + host.vector_isa + " " +
                                         std::to_string(host.vector_bits) + "-bit vectors)",
                                     threads, options.print);
  auto backend =
      std::make_unique<CpuBackend>(std::move(jit), *device, options.debug, cache_dir_of(options), options.cpu_tiers);
  return {std::move(device), std::move(backend)};
}

}  // namespace

const BackendEntry kCpuBackend = {
    .arch = Arch::Cpu,
    .make = make_cpu_backend,
    .auto_rank = [](const BackendOptions&) { return 2; },
    // Whatever the arch: Auto, passing over the CPU, would hide a bad value.
    .check_options = [](const BackendOptions& options) {
      if (options.cpu_threads < 0 || options.cpu_threads > kMaxCpuThreads)
        throw Error("Config::cpu_threads is " + std::to_string(options.cpu_threads) +
                    "; give the number of threads, 1 to " + std::to_string(kMaxCpuThreads) + " (0: every core, " +
                    std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " here)");
    },
};

}  // namespace grove::detail
