// grove/aot.h — saving AOT modules (the RFC "AOT for all SNodes", with the
// sparse SNodes it left out): tree types, kernels compiled ahead of time,
// and what they need of the device, in one file that grove/runtime.h
// loads with no compiler:
//
//   grove::aot::Module m(prog, grove::Arch::Vulkan);  // or Arch::Cuda
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

// What modules are made for in this build: an arch, and what its code is
// ("SPIR-V", "PTX").
struct Target {
  Arch arch;
  std::string_view code;
};
std::vector<Target> targets();

class Module {
 public:
  // Kernels are compiled for `arch`:
  // - Arch::Vulkan (SPIR-V): for the Program's device when it runs on
  //   Vulkan (its Config::arch, or what Arch::Auto chose; lavapipe will do
  //   where there is no GPU), or, from a Program on any arch with no Vulkan
  //   driver needed, for Config::vulkan_target (runtime/vulkan/target.h).
  //   A device loads the module only if it covers the target.
  // - Arch::Cuda (PTX): from a Program on any arch, with no GPU or driver
  //   needed, for Config::cuda_sm (0: sm_75, which every GPU Grove runs on
  //   loads; a Program on CUDA saves the code it runs). Kernels are recorded
  //   again for it, so a kernel body must record the same kernel each time.
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
