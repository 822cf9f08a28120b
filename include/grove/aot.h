// grove/aot.h — saving AOT modules (the RFC "AOT for all SNodes", with the
// sparse SNodes it left out): tree types, kernels compiled ahead of time,
// and what they need of the device, in one file that grove/runtime.h
// loads with no compiler:
//
//   grove::aot::Module m(prog, grove::Arch::Vulkan);
//   m.add_tree_type("grid", grid);
//   m.add_kernel("step", step);
//   m.save("life.grove");
//
// Kernels in a module take tree types' instances as arguments (arg(type,
// "tr")), or use the Program's own fields (prog.field, prog.root()): a
// Program's own tree that a kernel uses is saved as tree type "root"
// ("root1", "root2"... for trees laid out later), and the runtime makes
// its one instance at load (runtime::Module::tree("root")). Each tree type
// brings Grove's own kernels along: one per sparse field, which the
// runtime's host writes use to activate cells, and one per sparse SNode,
// which deactivate_all runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grove/program.h"

namespace grove::aot {

class Module {
 public:
  // Kernels are compiled for `arch`, which must be the Program's own (its
  // Config::arch, or what Arch::Auto chose); modules are made for
  // Arch::Vulkan (SPIR-V), which lavapipe compiles where there is no GPU.
  Module(Program& program, Arch arch);
  ~Module();
  Module(Module&&) noexcept;
  Module& operator=(Module&&) noexcept;

  // `name` is what the runtime's Module::instantiate takes.
  void add_tree_type(std::string_view name, const TreeType& type);
  // Compiles `kernel` (if it was not yet); `name` is what the runtime's
  // Module::launch takes. A tree type it takes is added under its own
  // name unless it was added before.
  void add_kernel(std::string_view name, const Kernel& kernel);
  // The module file's bytes, and the file itself (written whole or not at all).
  std::vector<uint8_t> bytes() const;
  void save(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove::aot
