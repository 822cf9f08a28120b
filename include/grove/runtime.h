// grove/runtime.h — AOT modules run by Grove's runtime alone (the library
// Grove::runtime, with no compiler, LLVM, SPIRV-Tools or glslang inside).
// A module is saved by grove::aot::Module (grove/aot.h) or `grove aot`;
// here it is opened on a device of its backend (a Vulkan device for a
// Vulkan module; for a CUDA module, an NVIDIA GPU through the driver,
// opened at run time), its tree types are instantiated, its kernels
// launched, and fields read and written by name:
//
//   grove::runtime::Module m = grove::runtime::Module::load("life.grove");
//   grove::runtime::Tree a = m.instantiate("grid", "a");
//   m.launch("seed", {a, 42});
//   float v = a.read<float>("x", {3, 4});
//
// Every misuse (a kernel or field the module lacks, wrong arguments, a
// module that is corrupt, of another format version or needs device
// features the device lacks) raises grove::Error naming it; the module
// stays usable.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "grove/error.h"
#include "grove/host_copy.h"
#include "grove/types.h"
#include "grove/vulkan_handles.h"

namespace grove::runtime {

struct Options {
  // The Vulkan device: "" = GROVE_VULKAN_DEVICE, else the best one; an
  // index or a substring of its name otherwise.
  std::string vulkan_device;
  // For CUDA modules, the GPU: "" = GROVE_CUDA_DEVICE, else device 0; an
  // index or a substring of its name otherwise. The options below it,
  // debug aside, are Vulkan's.
  std::string cuda_device;
  bool validation = false;  // VK_LAYER_KHRONOS_validation
  bool debug = false;       // every launch waits (errors name their launch)
  // Run on the application's own device and queue instead (an engine's
  // renderer): Grove creates its buffers, pipelines and command pool there
  // and destroys only those; the application must not submit to the queue
  // from another thread while a Grove call runs. Validation is then the
  // application's (enable the layer on its instance).
  std::optional<VulkanHandles> external;
  // Make the device look as if it lacked these features (neither used nor
  // enabled): how a module meant for a smaller device is tried here.
  bool without_int64 = false;
  bool without_float64 = false;
  bool without_float_atomics = false;
  // Time every task of every launch on the device's clock (timestamp
  // queries, CUDA events; recorded kernels are not timed), for
  // Module::profile_report(). GROVE_PROFILE=1 turns it on too.
  bool profile = false;
};

class Tree;
class ModuleImpl;

// A field of a tree type, for code outside Grove that reads the tree's
// buffer directly (a graphics pipeline, through shaders/grove_tree.glsl).
struct FieldInfo {
  std::string name;
  DataType dtype = DataType::unknown;
  std::vector<int64_t> shape;   // extent per index
  std::vector<int64_t> offset;  // first index per index
  bool sparse = false;          // a pointer, bitmasked or dynamic node on its path
  // The field's path words: how grove_find_element() in
  // shaders/grove_tree.glsl finds an element's word in the tree's buffer
  // (the layout of each SNode on the path: word offsets, strides, pools).
  // Copy them into a buffer the shader reads. Empty for a field of more
  // than 4 indices (the include takes an ivec4).
  std::vector<uint32_t> path;
};

// A kernel argument: a number (converted to the argument's type when it
// keeps its value, as Program kernels do: 2.5 is no i32, 300 no i8) or a tree.
struct Arg {
  DataType type = DataType::unknown;
  uint64_t bits = 0;
  const Tree* tree = nullptr;
  template <typename T>
    requires std::is_arithmetic_v<T>
  Arg(T v) : type(type_of<T>()) {  // NOLINT: implicit on purpose
    __builtin_memcpy(&bits, &v, sizeof(T));
  }
  Arg(const Tree& t) : tree(&t) {}  // NOLINT: implicit on purpose
};

struct SNodeStats {
  std::string name;  // "S3pointer", as Program::stats names it
  std::string kind;  // "dense", "pointer", ...
  int64_t active_cells = 0, capacity = 0;
  int64_t pool_used = 0, pool_capacity = 0, pool_high_water = 0;
  int64_t list_length = 0, listgen_runs = 0;
};

// One instance of a module's tree type. Cheap to copy; valid while its
// Module lives.
class Tree {
 public:
  Tree() = default;
  const std::string& name() const;
  const std::string& type() const;
  // Element `index` of field `field` (the indices the field was declared
  // with, offsets included); 0 where a sparse cell is inactive.
  template <typename T>
  T read(std::string_view field, std::initializer_list<int64_t> index) const {
    T v{};
    read_raw(field, index, type_of<T>(), &v);
    return v;
  }
  // Writes activate sparse cells (through the module's writer kernel).
  template <typename T>
  void write(std::string_view field, std::initializer_list<int64_t> index, T value) const {
    write_raw(field, index, type_of<T>(), &value);
  }
  // Every element of `field`, row-major over its indices (one read of the
  // tree's buffer); inactive cells read 0.
  // (A field whose copy would not fit in the host's memory raises
  // grove::Error naming it.)
  template <typename T>
  std::vector<T> to_vector(std::string_view field) const {
    std::vector<T> out;
    copy_out(field, type_of<T>(), detail::vector_destination(out));
    return out;
  }
  // The same into `out`, resized to fit: a renderer reading a field every
  // frame reuses its buffer (no allocation, nothing zeroed first).
  template <typename T>
  void to_vector(std::string_view field, std::vector<T>& out) const {
    copy_out(field, type_of<T>(), detail::vector_destination(out));
  }
  // Into memory the caller holds: exactly num_elements(field) values.
  template <typename T>
  void to_span(std::string_view field, std::span<T> out) const {
    copy_out_to(field, type_of<std::remove_const_t<T>>(), out.data(), out.size());
  }
  // Every element of `field` from `values`, row-major (num_elements(field)
  // of them), each checked to keep its value in the field's type before
  // any is stored. On a sparse field, cells not yet active are activated
  // first (through the module's filler kernel for the field: one launch).
  template <typename T>
  void from_vector(std::string_view field, const std::vector<T>& values) const {
    copy_in(field, type_of<T>(), values.data(), values.size(), true, "from_vector");
  }
  template <typename T>
  void from_span(std::string_view field, std::span<const T> values) const {
    copy_in(field, type_of<T>(), values.data(), values.size(), true, "from_span");
  }
  // Every element of `field` set to `value` (a sparse field's cells all activated).
  template <typename T>
  void fill(std::string_view field, T value) const {
    copy_in(field, type_of<T>(), &value, 1, false, "fill");
  }
  int64_t num_elements(std::string_view field) const;
  // num_elements(field), after checking that a copy of them all (of
  // `element_bytes` each) fits in the host's memory.
  size_t host_copy_elements(std::string_view field, size_t element_bytes) const;
  // Every value as `as` into `out` (num_elements(field) of them), or into
  // what `out` places (host_copy_elements checked first).
  void copy_out(std::string_view field, DataType as, void* out) const;
  void copy_out(std::string_view field, DataType as, detail::HostDestination out) const;
  void copy_out_to(std::string_view field, DataType as, void* out, size_t count) const;  // `count` checked first
  // `count` values (`each`; else one for every element); `api` names the call in errors.
  void copy_in(std::string_view field, DataType as, const void* values, size_t count, bool each, const char* api) const;
  void read_raw(std::string_view field, std::span<const int64_t> index, DataType as, void* out) const;
  void write_raw(std::string_view field, std::span<const int64_t> index, DataType as, const void* value) const;
  // Deactivates every sparse SNode of this instance.
  void deactivate_all() const;
  // Deactivates every cell of SNode `snode` ("S3pointer", as stats() names
  // it) and what lies below; a dense node or the root: the sparse nodes
  // nearest below it (Program's SNode::deactivate_all).
  void deactivate_all(std::string_view snode) const;
  // Every SNode of the instance but its places.
  std::vector<SNodeStats> stats() const;

  // ---- reading the tree from the application's own shaders ----
  // The tree's VkBuffer (as void*): 32-bit words, the memory contract of
  // docs/memory.md; bind it as a storage buffer. Valid while the Module lives.
  void* vulkan_buffer() const;
  uint64_t buffer_bytes() const;
  // Field `field`'s type, indices and path words (raises naming the fields there are).
  FieldInfo field(std::string_view field) const;

  Tree(std::shared_ptr<ModuleImpl> module, int instance) : module_(std::move(module)), instance_(instance) {}
  int instance() const { return instance_; }

 private:
  friend class ModuleImpl;
  std::shared_ptr<ModuleImpl> module_;
  int instance_ = -1;
};

// Threads: a Module and its Trees may be used from several threads; each
// operation holds the Module's lock while it runs, so they take turns (load
// one Module per thread to run in parallel).
class Module {
 public:
  // Opens the module file at `path` (or its bytes, `source` naming them in
  // errors) on a device Grove opens (Vulkan or CUDA, as the module was
  // saved for), or on Options::external. Without that device (no Vulkan
  // loader, no NVIDIA driver) it raises grove::Error saying so.
  static Module load(const std::string& path, const Options& options = {});
  static Module load(std::span<const uint8_t> bytes, std::string_view source, const Options& options = {});

  std::string device_name() const;
  std::string grove_version() const;  // of the Grove that saved it
  std::vector<std::string> kernels() const;     // the user's, in the order added
  std::vector<std::string> tree_types() const;
  // A zeroed instance of tree type `type`.
  Tree instantiate(std::string_view type, std::string_view name = "");
  // The one instance of a Program's own tree (its prog.field and
  // prog.root() fields), saved as tree type "root" ("root1", ... for
  // later trees): made, zeroed, at load; kernels that use it take no
  // argument for it.
  Tree tree(std::string_view type);
  // Launches `kernel`: numbers for its number arguments and trees for its
  // tree arguments, each group in the order declared (more or fewer of
  // either raise grove::Error). Only the user's kernels (kernels()):
  // Grove's own, named "__...", run as Tree::write and deactivate_all call
  // them.
  void launch(std::string_view kernel, std::initializer_list<Arg> args);
  void launch(std::string_view kernel, const std::vector<Arg>& args);
  // Waits for every launch; raises what they reported (a full pool, a
  // failed assertion).
  void sync();
  // With Options::profile: waits for every launch, then the device time of
  // each kernel's tasks as a table (count, total, mean, min, max in ms);
  // raises grove::Error when the module is not profiled.
  std::string profile_report();

  // ---- embedding in the application's renderer (Vulkan modules) ----
  // The Vulkan objects the module runs on (Grove's own, or those of
  // Options::external); a CUDA module raises grove::Error.
  VulkanHandles vulkan() const;
  // Records `kernel` into the application's command buffer (a
  // VkCommandBuffer of this device, recording, outside a render pass)
  // instead of submitting it; the application submits it, as often as it
  // likes (arguments are fixed when recorded). Barriers, recorded by Grove:
  // before the kernel, one after everything earlier in submission order
  // (any stage's reads and writes of the trees, Grove's uploads) and
  // between its tasks. After it, the application calls record_barrier()
  // (or records its own: src COMPUTE_SHADER / SHADER_WRITE) before a pass
  // that reads a tree. Trees and the module must outlive every pending
  // submission of the command buffer. Full pools and failed assertions of
  // recorded kernels are raised by the next sync() or read.
  void record(void* command_buffer, std::string_view kernel, std::initializer_list<Arg> args);
  void record(void* command_buffer, std::string_view kernel, const std::vector<Arg>& args);
  // The barrier that makes recorded kernels' writes visible to the
  // application's `dst_stage_mask` (VkPipelineStageFlags) and
  // `dst_access_mask` (VkAccessFlags), e.g. VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT
  // and VK_ACCESS_SHADER_READ_BIT before drawing a tree.
  void record_barrier(void* command_buffer, uint32_t dst_stage_mask, uint32_t dst_access_mask);

 private:
  explicit Module(std::shared_ptr<ModuleImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<ModuleImpl> impl_;
};

}  // namespace grove::runtime
