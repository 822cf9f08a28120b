// src/llvm_cpu/linker.h — a kernel's relocatable object to the shared object
// its plan carries (KernelPlan::library), linked by lld, LLVM's linker, as a
// library in this process (no program is run). The runtime opens it with
// dlopen (runtime/cpu/library.h). No LLVM type appears here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace grove::llvm_backend {

// An ELF shared object of `objects` (position-independent code for the
// host; a kernel's tasks may be compiled into several), bound at load
// (-z now), its undefined symbols (libm's functions) left to the loader.
// Raises grove::Error naming `kernel` when lld fails.
std::vector<uint8_t> link_shared_object(const std::vector<std::string>& objects, const std::string& kernel);

}  // namespace grove::llvm_backend
