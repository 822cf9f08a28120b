// src/llvm_cpu/jit.cpp — the CPU target of the LLVM code generator: its
// hooks (the task ABI of jit.h), the Jit that optimises and emits a
// kernel's module for this CPU on its compile threads, links it with lld
// (linker.h) into a shared object, and keeps what it compiled in memory
// and in the disk cache (src/llvm/disk_cache.h).
#include "llvm_cpu/jit.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/SubtargetFeature.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "grove/error.h"
#include "codegen_stamp.h"  // generated: GROVE_CODEGEN_STAMP
#include "grove/version.h"
#include "ir/assert.h"
#include "ir/printer.h"
#include "llvm/disk_cache.h"
#include "llvm/emit.h"
#include "llvm_cpu/linker.h"
#include "runtime/core/bytes.h"
#include "runtime/cpu/device.h"

namespace grove::llvm_backend {

namespace {

void initialize_native_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

constexpr uint8_t kMaxTaskKind = static_cast<uint8_t>(ir::TaskKind::gc_finish);

// The disk cache's payload for a kernel: its tasks, messages and shared
// object.
std::vector<uint8_t> encode(const CpuCode& e) {
  rt::ByteWriter w;
  w.u32(static_cast<uint32_t>(e.tasks.size()));
  for (const TaskCode& t : e.tasks) {
    w.u8(static_cast<uint8_t>(t.kind));
    w.str(t.label);
    w.boolean(t.parallel);
    w.u32(static_cast<uint32_t>(t.trees.size()));
    for (const TreeKey& k : t.trees) {
      w.i32(k.first);
      w.i32(k.second);
    }
    w.str(t.entry);
    w.str(t.count_entry);
  }
  rt::write_messages(w, e.messages);
  w.bytes(e.library);
  return w.take();
}

// Throws grove::Error (caught by load) at the first thing that is wrong.
CpuCode decode(const std::vector<uint8_t>& bytes, const std::string& path) {
  rt::ByteReader r(bytes, path);
  CpuCode e;
  e.source = CpuCode::Source::disk;
  r.part("tasks");
  const uint32_t tasks = r.count(16);
  for (uint32_t i = 0; i < tasks; ++i) {
    TaskCode t;
    const uint8_t kind = r.u8();
    if (kind > kMaxTaskKind) r.fail("an unknown task kind");
    t.kind = static_cast<ir::TaskKind>(kind);
    t.label = r.str();
    t.parallel = r.boolean();
    const uint32_t trees = r.count(8);
    for (uint32_t k = 0; k < trees; ++k) {
      const int32_t tree = r.i32();
      t.trees.emplace_back(tree, r.i32());
    }
    t.entry = r.str();
    t.count_entry = r.str();
    e.tasks.push_back(std::move(t));
  }
  r.part("messages");
  e.messages = rt::read_messages(r);
  r.part("library");
  e.library = r.bytes();
  if (r.left() != 0) r.fail("bytes after the library");
  return e;
}

std::optional<CpuCode> load(const DiskCache& cache, const std::string& key) {
  std::optional<std::vector<uint8_t>> bytes = cache.load_bytes(key);
  if (!bytes) return std::nullopt;
  try {
    return decode(*bytes, cache.path_of(key));
  } catch (const Error& e) {
    if (std::getenv("GROVE_CACHE_LOG") != nullptr) std::cerr << "[grove] cache: miss (" << e.what() << ")\n";
    return std::nullopt;
  }
}

// The CPU's task ABI (codegen.h): (buffers, args, lo, hi), iterations
// [lo, hi) of a parallel loop, a count function per parallel task, libm.
class CpuHooks final : public TargetHooks {
 public:
  explicit CpuHooks(unsigned cas_words) : cas_words_(cas_words) {}
  // Symbols are "<kernel>.t<i>.<kind>" (each kernel is a shared object with
  // a symbol scope of its own, so names may repeat across kernels).
  std::string entry_name(const std::string& kernel, size_t index, ir::TaskKind kind) const override {
    return kernel + ".t" + std::to_string(index) + "." + ir::op_name(kind);
  }
  bool shares_runtime_tasks() const override { return true; }
  llvm::FunctionType* task_type(llvm::LLVMContext& c, size_t, size_t) const override {
    llvm::Type* ptr = llvm::PointerType::get(c, 0);
    llvm::Type* i32 = llvm::Type::getInt32Ty(c);
    return llvm::FunctionType::get(llvm::Type::getVoidTy(c), {ptr, ptr, i32, i32}, false);
  }
  void task_made(llvm::Module&, llvm::Function&) const override {}
  void bind(llvm::Function& f, const std::map<TreeKey, uint32_t>&, Bindings& out) const override {
    out.buffers = f.getArg(0);
    out.args = f.getArg(1);
  }
  llvm::Value* arg_bits(llvm::IRBuilderBase& b, llvm::Function&, const Bindings& bound, size_t,
                        int index) const override {
    llvm::Value* slot = b.CreateGEP(b.getInt64Ty(), bound.args, b.getInt32(static_cast<uint32_t>(index)));
    return b.CreateLoad(b.getInt64Ty(), slot);
  }
  bool count_functions() const override { return true; }
  ParallelBounds parallel_bounds(llvm::IRBuilderBase& b, llvm::Function& f,
                                 const std::function<llvm::Value*()>& count, unsigned) const override {
    ParallelBounds out;
    out.first = f.getArg(2);
    // (No llvm.assume(lo >= 0): it made LLVM rewrite a struct-for's loop
    // over its list in 64 bits, and a struct-for sum over 67 M cells ran
    // 35% slower. for_range over a shape divides unsigned instead.)
    llvm::Value* n = count();
    out.last = b.CreateSelect(b.CreateICmpSLT(f.getArg(3), n), f.getArg(3), n);
    out.stride = b.getInt32(1);
    return out;
  }
  std::string math_function(const std::string& name) const override { return name; }
  bool exact_frem() const override { return true; }
  // x86-64 with cmpxchg16b and AArch64 compare and swap 128 bits inline,
  // every 64-bit CPU 64 bits (an f32 atomic add is a compare-and-swap loop
  // on both: a locked instruction each on x86).
  unsigned cas_words() const override { return cas_words_; }

 private:
  unsigned cas_words_;
};

// Kernels LLVM compiled in this process (Jit::compilations()).
std::atomic<int64_t> g_compilations{0};
std::atomic<int64_t> g_shared_task_compilations{0};
std::atomic<int64_t> g_quick_compilations{0};

}  // namespace

struct Jit::Impl {
  // The host CPU's features; emit the objects. One per compile thread (a
  // target machine is not thread-safe), made when a kernel first needs that
  // many; machines[0] also for dumps.
  std::vector<std::unique_ptr<llvm::TargetMachine>> machines;
  const llvm::Target* target = nullptr;
  size_t threads = 1;  // compile threads: the cores, at most 8
  bool one_thread = false;  // Jit::one_thread: atomics lowered to plain loads and stores
  std::string triple, cpu, features;
  std::unique_ptr<CpuHooks> hooks;

  // Position-independent code: each kernel becomes a shared object
  // (linker.h) that the runtime opens with dlopen.
  void add_machine() {
    machines.emplace_back(target->createTargetMachine(triple, cpu, features, llvm::TargetOptions(), llvm::Reloc::PIC_,
                                                      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
    if (!machines.back()) throw Error("LLVM cannot target this CPU (" + triple + ", " + cpu + ")");
  }
  std::mutex mutex;                                 // the machines and the table are not thread-safe
  // Compiled kernels (without the texts), by the fingerprint of the kernel
  // and of what else decides the code (the options): a hit prints nothing.
  // Per key, its full tier's code or its quick tier's (CodegenOptions::
  // quick), the quick one dropped once the full one is made.
  struct MemoryKeyHash {
    size_t operator()(const ir::Fingerprint& f) const { return static_cast<size_t>(f.a); }
  };
  template <typename T>
  struct Tiers {
    std::optional<T> full, quick;
    // The full tier's, else the quick one's where `quick` asks for it.
    const T* best(bool quick_too) const { return full ? &*full : quick_too && quick ? &*quick : nullptr; }
    void set(bool quick_tier, T value) {
      (quick_tier ? quick : full) = std::move(value);
      if (!quick_tier) quick.reset();
    }
  };
  std::unordered_map<ir::Fingerprint, Tiers<CpuCode>, MemoryKeyHash> memory;

  // A relocatable object (or assembly text) for `module`. LLVM's
  // instruction schedulers and register allocator take time quadratic in a
  // basic block's length: a kernel keeping 10,000 values in one block of
  // 40,000 instructions spent 30 s in them at the Aggressive level (24 s at
  // Less), 4.5 s at None. The longest block of every example and test
  // kernel is about 2,200, so a module with one longer than kLongBlock is
  // code-generated at None (its IR is optimised at -O3 all the same), and
  // every other at Aggressive.
  static constexpr size_t kLongBlock = 16384;
  // The quick tier (CodegenOptions::quick) is generated at None too.
  static std::string emit(llvm::TargetMachine& machine, llvm::Module& module, llvm::CodeGenFileType type,
                          const std::string& kernel, bool quick = false) {
    size_t longest = 0;
    for (const llvm::Function& f : module)
      for (const llvm::BasicBlock& b : f) longest = std::max(longest, b.size());
    struct Restore {
      llvm::TargetMachine& machine;
      ~Restore() { machine.setOptLevel(llvm::CodeGenOptLevel::Aggressive); }
    } restore{machine};
    if (quick || longest > kLongBlock) machine.setOptLevel(llvm::CodeGenOptLevel::None);
    llvm::SmallVector<char, 0> out;
    llvm::raw_svector_ostream os(out);
    llvm::legacy::PassManager pm;
    if (machine.addPassesToEmitFile(pm, os, nullptr, type))
      throw InternalError("LLVM cannot emit code for this CPU (kernel '" + kernel + "')");
    pm.run(module);
    return std::string(out.data(), out.size());
  }

  // The objects of a kernel's module whose tasks are `tasks`. The sparse
  // runtime's tasks (TaskCode::shared: a node's list clearing, generation,
  // gc) are the same in every kernel over their node: each is compiled once,
  // alone, and its object kept (shared_objects) for every later kernel that
  // has it, whose link takes it as it is. The kernel's own tasks are dealt
  // into groups of about equal size (instructions before optimisation), one
  // per compile thread (the Jit's, at most `most_threads` where that is
  // above 0). With one group and nothing shared the module is compiled as
  // it is; else each group is optimised and emitted on a thread of its
  // own, in an LLVM context of its own (read back from the module's
  // bitcode, the functions of other groups left as declarations); lld
  // links the objects into one shared object. `quick`: the tasks at the
  // quick tier; a shared task's full tier's object is taken wherever it is
  // held, and the quick one is made only where it is not (a kernel's full
  // compile makes the full ones).
  std::vector<std::string> objects(llvm::Module& module, const std::vector<TaskCode>& tasks,
                                   const std::string& kernel, bool quick, int most_threads) {
    const size_t threads = most_threads > 0 ? std::min(this->threads, static_cast<size_t>(most_threads)) : this->threads;
    std::vector<std::string> out;
    std::vector<std::set<std::string>> names;
    std::vector<const TaskCode*> fresh;  // per group of a shared task made now; nullptr for the kernel's own
    std::set<std::string> seen;
    std::vector<size_t> own;
    bool any_shared = false;
    for (size_t i = 0; i < tasks.size(); ++i) {
      const TaskCode& t = tasks[i];
      if (!t.shared) {
        own.push_back(i);
        continue;
      }
      any_shared = true;
      if (!seen.insert(t.entry).second) continue;  // twice in this kernel: one function
      if (auto kept = shared_objects.find(t.shape); kept != shared_objects.end()) {
        if (const std::string* object = kept->second.best(quick)) {
          out.push_back(*object);
          continue;
        }
      }
      names.push_back({t.entry});
      if (!t.count_entry.empty()) names.back().insert(t.count_entry);
      fresh.push_back(&t);
    }
    const size_t own_groups = std::min(own.size(), threads);
    if (own_groups <= 1 && !any_shared) {
      while (machines.empty()) add_machine();
      optimize(module, *machines[0], one_thread, quick);
      return {emit(*machines[0], module, llvm::CodeGenFileType::ObjectFile, kernel, quick)};
    }
    const size_t first_own = names.size();
    names.resize(first_own + own_groups);
    fresh.resize(first_own + own_groups, nullptr);
    std::vector<size_t> load(own_groups, 0);
    std::vector<size_t> size(tasks.size(), 0);
    for (size_t i : own)
      for (const std::string* n : {&tasks[i].entry, &tasks[i].count_entry})
        if (llvm::Function* f = module.getFunction(*n)) size[i] += f->getInstructionCount();
    std::stable_sort(own.begin(), own.end(), [&](size_t a, size_t b) { return size[a] > size[b]; });
    for (size_t i : own) {
      const size_t g = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      load[g] += size[i];
      names[first_own + g].insert(tasks[i].entry);
      if (!tasks[i].count_entry.empty()) names[first_own + g].insert(tasks[i].count_entry);
    }
    const size_t groups = names.size();
    if (groups == 0) return out;  // every task's object made before
    const size_t workers = std::min(groups, threads);
    while (machines.size() < workers) add_machine();
    llvm::SmallVector<char, 0> bitcode;
    {
      llvm::raw_svector_ostream os(bitcode);
      llvm::WriteBitcodeToFile(module, os);
    }
    std::vector<std::string> made(groups);
    std::vector<std::exception_ptr> failed(groups);
    std::atomic<size_t> next{0};
    auto work = [&](size_t worker) {
      for (size_t g = next++; g < groups; g = next++) {
        try {
          llvm::LLVMContext context;
          auto parsed = llvm::parseBitcodeFile(
              llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()), kernel), context);
          if (!parsed)
            throw InternalError("LLVM cannot read back kernel '" + kernel + "': " + llvm::toString(parsed.takeError()));
          llvm::Module& part = **parsed;
          for (llvm::Function& f : part)
            if (!f.isDeclaration() && f.hasExternalLinkage() && !names[g].count(f.getName().str())) f.deleteBody();
          optimize(part, *machines[worker], one_thread, quick);
          made[g] = emit(*machines[worker], part, llvm::CodeGenFileType::ObjectFile, kernel, quick);
        } catch (...) {
          failed[g] = std::current_exception();
        }
      }
    };
    std::vector<std::thread> helpers;
    for (size_t w = 1; w < workers; ++w) helpers.emplace_back(work, w);
    work(0);
    for (std::thread& t : helpers) t.join();
    for (const std::exception_ptr& e : failed)
      if (e) std::rethrow_exception(e);
    for (size_t g = 0; g < groups; ++g) {
      if (fresh[g] != nullptr) {
        shared_objects[fresh[g]->shape].set(quick, made[g]);
        ++g_shared_task_compilations;
      }
      if (!names[g].empty()) out.push_back(std::move(made[g]));
    }
    return out;
  }
  // The sparse runtime's task objects made so far (objects()), by the
  // fingerprint of their task, at either tier as the kernels' code above.
  std::unordered_map<ir::Fingerprint, Tiers<std::string>, MemoryKeyHash> shared_objects;
};

Jit::Jit(const std::string& cpu, bool one_thread) : impl_(std::make_unique<Impl>()) {
  initialize_native_target();
  impl_->one_thread = one_thread;
  impl_->triple = llvm::sys::getProcessTriple();
  std::string error;
  impl_->target = llvm::TargetRegistry::lookupTarget(impl_->triple, error);
  if (impl_->target == nullptr) throw Error("LLVM cannot target this CPU (" + impl_->triple + "): " + error);
  llvm::SubtargetFeatures features;
  if (cpu.empty() || cpu == "host") {
    impl_->cpu = llvm::sys::getHostCPUName().str();
    for (const auto& [name, on] : llvm::sys::getHostCPUFeatures()) features.AddFeature(name, on);
  } else {
    // A named CPU: every feature LLVM gives it, spelled out like the host's,
    // so that a plan says what its code needs (runtime/cpu/library.cpp).
    // (Asked of a generic subtarget first: LLVM warns on stderr when made
    // for a CPU it does not know.)
    std::unique_ptr<llvm::MCSubtargetInfo> generic(impl_->target->createMCSubtargetInfo(impl_->triple, "", ""));
    if (generic == nullptr || !generic->isCPUStringValid(cpu))
      throw Error("Config::cpu_target (or GROVE_CPU_TARGET) is \"" + cpu + "\", which LLVM does not know as a CPU of " +
                  impl_->triple + "; give one such as x86-64-v2, x86-64-v3, x86-64-v4 or znver3, or leave it empty "
                  "for this machine's CPU (" + llvm::sys::getHostCPUName().str() + ")");
    impl_->cpu = cpu;
    std::unique_ptr<llvm::MCSubtargetInfo> info(impl_->target->createMCSubtargetInfo(impl_->triple, cpu, ""));
    for (const llvm::SubtargetFeatureKV& f : info->getAllProcessorFeatures())
      features.AddFeature(f.Key, info->getFeatureBits().test(f.Value));
  }
  impl_->features = features.getString();
  const llvm::Triple triple(impl_->triple);
  const std::vector<std::string>& flags = features.getFeatures();
  const bool cx16 = std::find(flags.begin(), flags.end(), "+cx16") != flags.end();
  const bool wide = triple.isAArch64() || (triple.getArch() == llvm::Triple::x86_64 && cx16);
  impl_->hooks = std::make_unique<CpuHooks>(wide ? 4 : 2);
  impl_->threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  impl_->add_machine();
}

Jit::~Jit() = default;

int64_t Jit::compilations() { return g_compilations.load(); }
int64_t Jit::shared_task_compilations() { return g_shared_task_compilations.load(); }
int64_t Jit::quick_compilations() { return g_quick_compilations.load(); }

std::string Jit::target() const { return impl_->triple + ", " + impl_->cpu; }
std::string Jit::features() const { return impl_->features; }
bool Jit::one_thread() const { return impl_->one_thread; }

Jit::Host Jit::host() const {
  Host h;
  h.cpu = impl_->cpu;
  h.model = rt::cpu::cpu_model();
  if (h.model.empty()) h.model = impl_->cpu;
  const std::string features = "," + impl_->machines[0]->getTargetFeatureString().str() + ",";
  auto has = [&](const char* f) { return features.find(std::string(",+") + f + ",") != std::string::npos; };
  if (has("avx512f")) {
    h.vector_isa = "AVX-512", h.vector_bits = 512;
  } else if (has("avx2")) {
    h.vector_isa = "AVX2", h.vector_bits = 256;
  } else if (has("avx")) {
    h.vector_isa = "AVX", h.vector_bits = 256;
  } else if (has("sve")) {
    h.vector_isa = "SVE", h.vector_bits = 128;  // at least; the length is set by the hardware
  } else if (has("neon")) {
    h.vector_isa = "NEON", h.vector_bits = 128;
  } else if (has("sse2")) {
    h.vector_isa = "SSE2", h.vector_bits = 128;
  } else {
    h.vector_isa = "scalar", h.vector_bits = 0;
  }
  return h;
}

CpuCode Jit::add(const ir::Kernel& kernel, const CodegenOptions& options) {
  if (!ir::is_lowered(kernel.stage))
    throw InternalError("LLVM codegen: kernel '" + kernel.name() + "' is not lowered");
  // In memory: the kernel's fingerprint, and the options' (what else
  // decides the code; the target and build are this Jit's own).
  // (Dumps show the full tier's code.)
  const bool quick = options.quick && !options.keep_text;
  const ir::Fingerprint memory_key = ir::fingerprint(kernel, {options.debug ? "debug" : "release", options.key_extra});
  // (The memory is this Jit's, whose thread count is one for all it holds.)
  // A copy of the code held in memory, if any (called with the lock held):
  // the full tier's first.
  auto held = [&]() -> std::optional<CpuCode> {
    if (options.keep_text) return std::nullopt;  // texts are not kept in memory: compile
    auto it = impl_->memory.find(memory_key);
    const CpuCode* code = it == impl_->memory.end() ? nullptr : it->second.best(quick);
    if (code == nullptr) return std::nullopt;
    CpuCode out = *code;
    out.source = CpuCode::Source::memory;
    return out;
  };
  std::unique_lock<std::mutex> lock(impl_->mutex);
  if (std::optional<CpuCode> hit = held()) return std::move(*hit);
  lock.unlock();
  // On disk: everything that decides the code, as text. The stamp stands
  // for the code generator's own source (codegen_stamp.h, a hash of it): a
  // Grove whose generator changed never trusts an older file.
  std::string key = std::string("grove ") + kVersion + ", code generator " + GROVE_CODEGEN_STAMP +
                    "\nllvm " + LLVM_VERSION_STRING + "\ntarget " + impl_->triple + " " + impl_->cpu + " " +
                    impl_->features + "\ndebug " + (options.debug ? "1" : "0") + "\none thread " + (impl_->one_thread ? "1" : "0") + "\ntsan " +
                    (GROVE_TSAN ? "1" : "0") + "\n" + options.key_extra + "\n";
  if (options.text.empty()) key += ir::print_module({&kernel});
  else key += options.text;
  auto disk_key_of = [&](bool quick_tier) { return (quick_tier ? "tier quick\n" : "") + key; };
  lock.lock();
  if (std::optional<CpuCode> hit = held()) return std::move(*hit);  // another thread compiled it meanwhile
  if (!options.keep_text && !options.cache_dir.empty()) {
    for (bool quick_tier : {false, true}) {
      if (quick_tier && !quick) break;
      if (std::optional<CpuCode> hit = load(DiskCache(options.cache_dir), disk_key_of(quick_tier))) {
        hit->quick = quick_tier;
        impl_->memory[memory_key].set(quick_tier, *hit);
        return std::move(*hit);
      }
    }
  }
  ++g_compilations;
  if (quick) ++g_quick_compilations;
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>(kernel.name(), *context);
  module->setTargetTriple(impl_->triple);
  module->setDataLayout(impl_->machines[0]->createDataLayout());
  Emitted emitted = emit_kernel(kernel, options, *impl_->hooks, *module);
  std::string ir_before, ir_after, assembly;  // with keep_text
  std::vector<std::string> objects;
  if (options.keep_text) {
    // Dumps: one module, optimised and emitted whole, so that its texts
    // show every task.
    ir_before = to_text(*module);
    optimize(*module, *impl_->machines[0], impl_->one_thread);  // -O3 for the host CPU (its vector width included)
    ir_after = to_text(*module);
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*module);
    assembly = Impl::emit(*impl_->machines[0], *copy, llvm::CodeGenFileType::AssemblyFile, kernel.name());
    objects.push_back(Impl::emit(*impl_->machines[0], *module, llvm::CodeGenFileType::ObjectFile, kernel.name()));
  } else {
    objects = impl_->objects(*module, emitted.tasks, kernel.name(), quick, options.threads);
  }
  CpuCode out;
  out.tasks = std::move(emitted.tasks);
  out.messages = std::move(emitted.messages);
  out.library = link_shared_object(objects, kernel.name());
  out.quick = quick;
  if (!options.cache_dir.empty()) DiskCache(options.cache_dir).store_bytes(disk_key_of(quick), encode(out));
  impl_->memory[memory_key].set(quick, out);
  out.ir_before = std::move(ir_before);
  out.ir_after = std::move(ir_after);
  out.assembly = std::move(assembly);
  return out;
}

}  // namespace grove::llvm_backend
