// runtime/aot/module.h — an AOT module as a plain value, and its file
// format (DESIGN.md, "Compile time and run time"; the RFC "AOT for all
// SNodes"): the tree types its kernels run on (every SNode kind, pools
// and lists included), the kernels' plans with their code, the device
// features they need, and the Grove version that wrote it.
//
// The file is a header (magic "GRVM", format version, section count) and
// sections, each a tag, a size, an FNV-1a checksum and its bytes: "info"
// (Grove version, backend, features), "tree types" (id, name and layout of
// each), "kernels" (each a kernel plan in its own format). The reader
// trusts nothing: a wrong magic, another format version, a section cut
// short, a checksum that does not match, or contents that do not hold
// together (a kernel naming a tree type or SNode the module lacks, a
// layout whose offsets leave its buffer) raise a grove::Error that names
// the file, the section and what is wrong, before anything is returned.
// Checksums catch damage, not malice: a module is code, as a shader cache is.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grove/error.h"
#include "runtime/core/plan.h"
#include "runtime/core/tree_layout.h"

namespace grove::rt::aot {

inline constexpr uint32_t kModuleMagic = 0x4d565247u;  // "GRVM"
// What a CUDA kernel plan's target starts with; "sm_NN" follows.
inline constexpr std::string_view kCudaTargetPrefix = "nvptx64-nvidia-cuda, sm_";
inline constexpr uint32_t kModuleVersion = 12;  // 2: tree types say whether they are a Program's own tree; 3: pointer pools keep in-use bits and entry coordinates; 4: a list below a pointer holds only its containers; 5: kernel plans of format 4 (a CUDA binary's place); 6: plans of format 5, features signed_zero_inf_nan_preserve; 7: plans of format 7 (the code as a tagged kind); 8: plans of format 8 (the backend told by the code's kind); 9: plans of format 9 (print records with 64-bit values aligned); 10: plans of format 10 (tasks spread over grids); 11: a pool's spare words are a bitmap of its entries, not a ring; plans of format 11 (feature denorm_preserve); 12: a pointer entry's coordinates packed into one word where they fit

struct ModuleTreeType {
  int id = -1;       // what kernel plans' tree slots name (TreeSlotPlan::tree_type)
  std::string name;  // as the user named it (Program::tree_type), or "root", "root1"... (own)
  TreeLayout layout;
  // A tree of the Program's own (prog.field, prog.root()) rather than a
  // tree type: the runtime makes its one instance at load, and kernels
  // reach it through slots bound to no argument (TreeSlotPlan::param -1).
  bool own = false;
};

struct ModuleData {
  std::string grove_version;  // of the Grove that wrote it
  std::string backend;        // "vulkan" or "cuda": every kernel's plan is for it
  Features features;          // what any of its kernels needs of the device
  std::vector<ModuleTreeType> tree_types;
  std::vector<KernelPlan> kernels;  // user kernels, then Grove's own ("__write_x", "__deactivate_all_grid")

  const ModuleTreeType* tree_type(std::string_view name) const;
  const ModuleTreeType* tree_type(int id) const;
  const KernelPlan* kernel(std::string_view name) const;
};

// A section of the file, for tools and tests: where it starts (its tag) and
// where it ends, in bytes from the start of the file.
struct SectionSpan {
  std::string name;
  size_t begin = 0, end = 0;
};

std::vector<uint8_t> write_module(const ModuleData& module);
// What read_module raises: the bytes are no module this Grove reads (so a
// loader can tell a bad file from a device that cannot run a good one).
class FormatError : public Error {
 public:
  using Error::Error;
};
// `source` names the file in errors ("module 'life.grove'"); raises FormatError.
ModuleData read_module(std::span<const uint8_t> bytes, std::string_view source);
// The sections of a module's bytes (read_module's checks on the header and
// section sizes only).
std::vector<SectionSpan> module_sections(std::span<const uint8_t> bytes, std::string_view source);
// Rewrites each section's checksum to match its bytes, wherever the header
// and the section sizes hold together (else leaves `bytes` as it is): how
// fuzzers and tests reach the checks behind the checksums.
void seal_checksums(std::span<uint8_t> bytes);
// Reads a whole file; raises grove::Error naming it when it cannot.
std::vector<uint8_t> read_file(const std::string& path);
// What `grove inspect` prints: version, backend, features, each tree type
// (fields, SNodes, pools, words) and each kernel (arguments, tasks, code size).
std::string describe(const ModuleData& module);
// The union of every kernel's features, as the "info" section records it.
Features features_of(std::span<const KernelPlan> kernels);

}  // namespace grove::rt::aot
