// runtime/cpu/library.h — a kernel's CPU code, loaded from its plan alone
// (KernelPlan::library: an ELF shared object) by the system's dynamic
// loader, with no compiler in the process.
//
// The bytes go into an anonymous in-memory file (memfd_create; a private
// temporary file where the kernel has none), which dlopen loads by its path
// with a symbol scope of its own, so every kernel may name its tasks alike.
// What the code calls outside itself (libm's sinf, pow, ...) resolves
// against the process.
//
// The descriptor is closed once the library is loaded (its mapping keeps
// the memory file alive), so the number of kernels a process loads is not
// bounded by its descriptor limit; only the first few (at most 256, and an
// eighth of the limit) stay open, so that in-process symbolizers
// (ThreadSanitizer's reports, backtraces) can still read those kernels'
// symbols by their path. glibc recognises loaded libraries by
// the path they were opened by, and a closed descriptor's number comes back
// for the next memory file: each library is therefore opened by a spelling
// of its /proc path used by no other library in the process
// (memory_file_path in library.cpp). A temporary file stays on disk, under a
// name no other file has, until the library is unloaded.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "runtime/core/plan.h"

namespace grove::rt::cpu {

class Library {
 public:
  // Where the bytes go: a memory file first (a temporary file where that
  // fails), or straight to a temporary file.
  enum class Via { memory_file, temporary_file };
  // Raises grove::Error naming `kernel` when the bytes do not load (not a
  // shared object, one for another machine, a symbol it needs is missing).
  Library(std::span<const uint8_t> bytes, const std::string& kernel, Via via = Via::memory_file);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // The address of `name`; raises grove::Error naming the kernel when the
  // library has no such symbol.
  void* symbol(const std::string& name) const;

 private:
  void release();

  std::string kernel_;
  std::string temp_path_;  // the temporary file, where there is no memfd
  int kept_fd_ = -1;       // the memory file, where it stays open (keep_a_file)
  void* handle_ = nullptr;
};

// Raises grove::Error naming the kernel when its ElfCode's target is for
// another architecture, or its target_features name an instruction-set
// extension this CPU lacks (code for it would stop on an illegal
// instruction). Extensions the check does not know are trusted.
void check_target(const KernelPlan& plan);

}  // namespace grove::rt::cpu
