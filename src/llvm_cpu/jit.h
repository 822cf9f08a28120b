// src/llvm_cpu/jit.h — the CPU target of the LLVM code generator
// (src/llvm/codegen.h): a kernel becomes one shared object (linked by lld,
// linker.h), which its plan carries and the runtime opens with dlopen
// (runtime/cpu/library.h): nothing of LLVM is needed to run it. No LLVM
// type appears here.
//
// The task ABI. Each task of a kernel becomes one function
//
//   void <kernel>.t<i>.<kind>(uint32_t* const* buffers, const uint64_t* args,
//                             int32_t lo, int32_t hi)
//
// (each kernel is a library with a symbol scope of its own, so names may
// repeat; the runtime calls them as runtime/cpu/device.h says)
//
// buffers[0] is the context buffer (runtime/core/context_layout.h: the
// first failed assertion and the print ring, written as on Vulkan),
// buffers[1..] the trees the task touches, in the order of
// TaskCode::trees; a tree is an array of u32 words, 64-bit values at even
// words. args[n] is argument n's bit pattern in its compute type. A serial
// task ignores lo and hi. A parallel task runs the statements before its
// range_for, then iterations k in [lo, hi) of it (index begin + k); its
// count function
//
//   int32_t <kernel>.t<i>.<kind>.count(uint32_t* const* buffers, const uint64_t* args)
//
// runs the same statements and returns max(end - begin, 0), so a caller
// splits [0, count) into chunks across threads. Every invocation of the
// statements before the loop is harmless, as on Vulkan, where every
// invocation runs them.
//
// Compiling: one Jit per Program. A kernel whose lowered IR and options
// (the plan among them) have the fingerprint (ir::fingerprint) of one this
// Jit compiled is not compiled again, and nothing is printed; with a cache
// directory, a key another process compiled (the code generator's build,
// LLVM's version, the target, the options, the plan and the lowered IR
// text) is read from disk (src/llvm/disk_cache.h) and LLVM is not called
// at all. The sparse runtime's tasks (a node's clear_list, listgen, gc,
// gc_finish: the same code in every kernel over the node) are named by
// their fingerprint (ir::fingerprint_task), not by kernel
// (<kind>.S<node>.<32 hex digits>), compiled alone the first time, and
// their object is linked into every later kernel that has them.
//
// Code is position-independent, optimised at -O3 for this CPU (its
// features, vector width included), and needs no more of the process than
// libm's functions. The quick tier (CodegenOptions::quick: a kernel's
// first code where its launch is known to be small, Config::cpu_tiers) is
// not optimised and is generated at LLVM's lowest level, about a tenth of
// the compile time; its keys in memory and on disk are its own, and a
// quick request is answered with the full tier's code wherever that is
// held already (CpuCode::quick says which). add() may be called from
// several threads (the Program's, and its background compile's): they take
// turns, one compile at a time. The sparse runtime's shared
// tasks have a quick tier of their own, for quick kernels while their full
// tier's objects are not made.
//
// ThreadSanitizer builds (make tsan) instrument the compiled code too:
// every task function gets LLVM's ThreadSanitizer pass, and its calls go to
// the sanitizer runtime of this process, so races between tasks' threads
// are reported like races in Grove's own C++.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llvm/codegen.h"

namespace grove::llvm_backend {

// A kernel compiled: its tasks with their entry points and the shared
// object that holds them.
struct CpuCode {
  std::vector<TaskCode> tasks;
  // Its print and assert messages, ids 0, 1, ... (see above).
  std::vector<rt::MessagePlan> messages;
  std::vector<uint8_t> library;  // an ELF shared object (KernelPlan::library)
  // With CodegenOptions::keep_text: LLVM IR before and after optimisation
  // and the assembly (for GROVE_DUMP_DIR).
  std::string ir_before, ir_after, assembly;
  // Where the code came from: compiled by LLVM, this Jit's memory, or disk.
  enum class Source { compiled, memory, disk } source = Source::compiled;
  // The quick tier's code (CodegenOptions::quick), not the full tier's.
  bool quick = false;
};

// Compiles kernels just in time for the host CPU, and remembers what it
// compiled (see above).
class Jit {
 public:
  // Compiles for `cpu`, an LLVM CPU name ("x86-64-v2", "x86-64-v3",
  // "znver3", ...) with every instruction-set feature it has; "" or "host"
  // compile for this machine's CPU and its features. An unknown name raises
  // grove::Error naming Config::cpu_target. `one_thread`: the code is only
  // ever run by one thread at a time (a Program with Config::cpu_threads =
  // 1, whose operations take turns): its atomics are compiled as plain
  // loads and stores, and its plans say so (rt::ElfCode::one_thread), so
  // that any device runs them on the launching thread alone.
  explicit Jit(const std::string& cpu = "", bool one_thread = false);
  ~Jit();
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;

  // Translates `kernel` (stage lowered) into a shared object. A statement
  // the generator does not handle yet raises grove::Error naming it and the
  // kernel.
  CpuCode add(const ir::Kernel& kernel, const CodegenOptions& options = {});
  // Kernels LLVM compiled in this process, over every Jit (cache hits are
  // not counted).
  static int64_t compilations();
  // The sparse runtime's tasks LLVM compiled on their own, over every Jit:
  // each distinct one once, its object then linked into every kernel that
  // has it.
  static int64_t shared_task_compilations();
  // Of compilations(), those at the quick tier (CodegenOptions::quick).
  static int64_t quick_compilations();
  // "x86_64-pc-linux-gnu, znver3" and the like.
  std::string target() const;
  // The features its code may use, in LLVM's spelling ("+avx2,-sse4a,..."):
  // with target(), what a plan records (KernelPlan::target, target_features).
  std::string features() const;
  bool one_thread() const;

  // This CPU as users know it: its model (/proc/cpuinfo's model name where
  // there is one, else LLVM's CPU name), LLVM's CPU name, and the vector
  // extension its code uses with that extension's register width.
  struct Host {
    std::string model, cpu, vector_isa;
    int vector_bits = 0;
  };
  Host host() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove::llvm_backend
