// grove/program.h — Program, fields, SNodes and kernels: the host side of Grove's API.
#pragma once

#include <cstdint>
#include <functional>
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

namespace grove {
namespace aot {
class Module;
}  // namespace aot


namespace detail {
class ProgramImpl;
}
class Expr;
class FieldRef;
using Indices = std::vector<Expr>;

// Where kernels run. Auto picks the best backend compiled in that starts: a
// Vulkan GPU (discrete, integrated or virtual; or the device named by
// Config::vulkan_device or GROVE_VULKAN_DEVICE), then the LLVM CPU backend,
// then a Vulkan driver that runs on the CPU (lavapipe), then the
// interpreter.
enum class Arch { Auto, Interp, Cpu, Vulkan, Cuda };
std::string_view arch_name(Arch a);          // "auto", "interp", ...
bool parse_arch(std::string_view s, Arch* out);
// Backends compiled into this build.
std::vector<Arch> compiled_backends();
// Every backend Grove has, built into this build or not (not Auto).
std::vector<Arch> known_backends();
// Auto's order, in words (`grove info` shows it).
std::string_view auto_order();

struct Config {
  Arch arch = Arch::Auto;
  // Memory for the pools of pointer and dynamic SNodes, per program: pools
  // without an explicit SNode::capacity share what is left of it when their
  // tree is laid out (each capped at the most cells it can ever need).
  int64_t device_memory = int64_t{256} << 20;
  // Bounds-check every field access (kernels and host); an error names the
  // kernel, the field and the index.
  bool debug = false;
  // Print the IR of each kernel after each stage of the pipeline to stdout.
  bool print_ir = false;
  // Type of C++ floating-point literals in kernels (Taichi's default_fp).
  DataType default_fp = DataType::f32;
  // Run the IR verifier after every pass: a check of Grove's own passes
  // (the tests turn it on), which finds a compiler bug where it happens
  // instead of in the generated code. Off by default: it is most of what a
  // kernel's compile costs when its code comes from the CPU backend's disk
  // cache (about 2 ms of sparse_life's `count`). Errors in user programs
  // are reported either way.
  bool verify_ir = false;
  // Vulkan: the device to run on, as an index or a case-insensitive part of
  // its name (`grove info` lists them). Empty: the environment variable
  // GROVE_VULKAN_DEVICE if set, else the best device (discrete GPU, then
  // integrated, virtual, CPU).
  std::string vulkan_device;
  // Vulkan: enable the Khronos validation layer (synchronization checks
  // included); its messages go to stderr. GROVE_VULKAN_VALIDATION=1 in the
  // environment enables it too. Needs Debian's vulkan-validationlayers.
  bool vulkan_validation = false;
  // Vulkan: the target SPIR-V is compiled for, as a description
  // (runtime/vulkan/target.h): a preset ("vulkan1.1", "desktop",
  // "lavapipe") and items ("shader_int64", "local_size=128", ...). Empty:
  // what the device offers (`grove info` prints it). With a target, an
  // aot::Module for Arch::Vulkan is made by a Program on any arch, with no
  // Vulkan driver; a Program on Vulkan compiles for it if its device
  // covers it. A device refuses code for a target it does not cover.
  std::string vulkan_target;
  // Vulkan: run on the application's own instance, device and queue (a
  // renderer's, or a window's that presents what the kernels compute)
  // instead of opening a device. Grove creates its buffers, pipelines and
  // command pool there and destroys only those; the application keeps the
  // device alive until the Program is gone and submits nothing to the
  // queue from another thread while a Grove call runs. Arch::Auto then
  // means Vulkan; any other arch is refused. Validation is the
  // application's (the layer on its instance); vulkan_device is unused.
  std::optional<runtime::VulkanHandles> vulkan_external;
  // CPU (Arch::Cpu): threads that run parallel tasks; 0 means every core.
  // With 1 (or 0 on a machine of one core, or GROVE_CPU_THREADS=1), no two
  // threads ever run the Program's code at once, so its atomics compile to
  // plain loads and stores (a scatter of f32 adds is several times
  // faster); its plans, AOT modules included, then run on the launching
  // thread wherever they are loaded. For several threads each running its
  // own work, give each a Program of one thread.
  int cpu_threads = 0;
  // CPU: the processor kernels are compiled for, as LLVM names it
  // ("x86-64-v2", "x86-64-v3", "x86-64-v4", "znver3", ...), with every
  // instruction-set extension it has. Empty: the environment variable
  // GROVE_CPU_TARGET if set, else this machine's own CPU. Code for a CPU
  // with extensions this one lacks is refused when it loads.
  std::string cpu_target;
  // CPU: tiers of code. A kernel whose launch is known to run few
  // statements (constant loop bounds, small fields) is compiled first
  // without LLVM's optimisations, in about a tenth of the time, and again
  // with them once its launches have run as long as that first compile
  // took: on a thread of the Program's own, while its launches go on with
  // the first code, which a launch after the compile is done replaces (no
  // launch waits for it; the thread is made at the first such compile, and
  // the Program's end waits for one under way). A kernel launched once or
  // a few times then costs about 1 ms instead of about 10, and one
  // launched for long reaches the same code. false (or GROVE_CPU_TIERS=0):
  // every kernel is compiled with the optimisations at once, and no launch
  // after the first runs slower code or shares the cores with a compile.
  bool cpu_tiers = true;
  // CPU and CUDA: where compiled kernels are kept between processes
  // (Taichi's offline cache): "" means $XDG_CACHE_HOME/grove (else
  // ~/.cache/grove); "off" keeps none. A kernel found there is loaded
  // without calling LLVM (on CUDA, with the binary the driver made of its
  // PTX for the same GPU and driver, without compiling that either); an
  // entry that is corrupt or was made by another build is ignored and
  // rewritten.
  std::string cache_dir;
  // CUDA (Arch::Cuda): the device to run on, as an index or a
  // case-insensitive part of its name. Empty: the environment variable
  // GROVE_CUDA_DEVICE if set, else device 0. Needs NVIDIA's driver, opened
  // at run time; without it Arch::Cuda raises an Error and Arch::Auto moves
  // on.
  std::string cuda_device;
  // CUDA: the target kernels are compiled for, as a compute capability
  // (major * 10 + minor: 75, 80, 86, 89, 90). 0: the device's own (sm_90
  // for newer GPUs, which the driver compiles sm_90 PTX for). An AOT module
  // for Arch::Cuda saved from a Program on another arch (grove/aot.h) is
  // compiled for it too, with no GPU needed; 0 there means sm_75, which
  // every GPU Grove runs on loads. A target newer than the device is refused.
  int cuda_sm = 0;
  // The profiler: time every task of every launch on the device's own clock
  // (Vulkan timestamp queries, CUDA events; the host's steady clock on the
  // CPU backend and the interpreter), tallied per kernel and task for
  // Program::profile() and profile_report(). A Program whose tally was never
  // reported prints its table to stdout when it is destroyed.
  // GROVE_PROFILE=1 in the environment turns it on too.
  bool profile = false;
};

// One task of a kernel as the profiler tallied it (Config::profile).
struct TaskProfile {
  std::string kernel;
  int task = 0;        // its index among the kernel's tasks
  std::string label;   // what it does: "range_for", "listgen S1pointer->S2dense", "struct_for S2dense", ...
  int64_t count = 0;   // launches that ran it (the list scheduler skips some list generations)
  double total = 0, min = 0, max = 0;  // device time in seconds
  double mean() const { return count > 0 ? total / static_cast<double>(count) : 0.0; }
};

// Physical axes an SNode splits, as in Taichi's ti.i, ti.ij, ...
struct Axes {
  uint8_t count = 0;
  uint8_t axis[8] = {};
};
Axes axes(std::initializer_list<int> list);  // axes({0, 2}); raises Error past axis 7
inline constexpr Axes i{1, {0}};
inline constexpr Axes j{1, {1}};
inline constexpr Axes k{1, {2}};
inline constexpr Axes l{1, {3}};
inline constexpr Axes ij{2, {0, 1}};
inline constexpr Axes ijk{3, {0, 1, 2}};
inline constexpr Axes ijkl{4, {0, 1, 2, 3}};

// A field's shape: extents per axis. {} is a 0-D (single value) field.
using Shape = std::vector<int64_t>;

enum class SNodeKind {
#define GROVE_SNODE_KIND(name, sparse, pool, list) name,
#include "grove/snode_kinds.def"
#undef GROVE_SNODE_KIND
};
std::string_view snode_kind_name(SNodeKind k);

class Field;
class TreeType;
class Tree;

// A structural node of a tree. Returned by reference from the Program, which
// owns it; valid as long as the Program.
class SNode {
 public:
  // A child whose cells split `axes` by `extents` (one extent per axis, or one
  // extent for all of them).
  SNode& dense(Axes axes, std::vector<int64_t> extents);
  SNode& dense(Axes axes, int64_t extent);
  SNode& bitmasked(Axes axes, std::vector<int64_t> extents);
  SNode& bitmasked(Axes axes, int64_t extent);
  SNode& pointer(Axes axes, std::vector<int64_t> extents);
  SNode& pointer(Axes axes, int64_t extent);
  // A list of up to `max_length` cells on one axis, stored in chunks of
  // `chunk_size` cells (0: 32, or max_length when that is smaller).
  SNode& dynamic(Axes axis, int64_t max_length, int64_t chunk_size = 0);
  // Places fields in this SNode's cells (one `place` child each).
  SNode& place(std::initializer_list<Field> fields);
  // With Taichi's offset=: the fields' index d runs over [offset[d],
  // offset[d] + shape[d]); one value per index of this SNode.
  SNode& place(std::initializer_list<Field> fields, const std::vector<int64_t>& offset);
  template <typename... F>
  SNode& place(const Field& first, const F&... rest) {
    return place({first, rest...});
  }

  // The number of cells (dynamic: chunks) this pointer or dynamic node's pool
  // holds; by default its share of Config::device_memory.
  SNode& capacity(int64_t cells);
  // Deactivates every cell of this sparse SNode and frees what is below it.
  // On the root or a dense SNode (Taichi's ti.root.deactivate_all()): every
  // sparse SNode below it; nothing when there is none.
  void deactivate_all();

  SNodeKind kind() const;
  int id() const { return id_; }
  int ndim() const;                 // axes of its index space
  std::string name() const;         // e.g. "S2dense"
  SNode* parent() const;            // nullptr for a root
  Shape shape() const;              // global extent per axis of the cells below it

  // The Program that owns this SNode (handles of one Program cannot be used
  // with another).
  detail::ProgramImpl* program() const { return program_; }

  SNode(detail::ProgramImpl* program, int id) : program_(program), id_(id) {}

 private:
  SNode& child(SNodeKind kind, Axes axes, std::vector<int64_t> extents, int64_t chunk);
  detail::ProgramImpl* program_;
  int id_;
};

// An SNode as a kernel body names it: of its tree's own instance, or of a
// kernel's tree argument (TreeArg::operator[]). Every SNode converts to one.
class SNodeRef {
 public:
  SNodeRef(const SNode& snode) : snode_(&snode) {}  // NOLINT: implicit on purpose
  SNodeRef(const SNode& snode, int tree_param) : snode_(&snode), tree_param_(tree_param) {}
  const SNode& snode() const { return *snode_; }
  int tree_param() const { return tree_param_; }

 private:
  const SNode* snode_;
  int tree_param_ = -1;
};

// A handle to a field: scalar, or a small vector/matrix whose components are
// scalar fields placed side by side. Cheap to copy. It refers to its
// Program without keeping it alive: used after the Program is destroyed, it
// raises grove::Error.
class Field {
 public:
  Field() = default;

  // ---- inside kernels ----
  template <typename... I>
  FieldRef operator()(const I&... index) const;
  FieldRef operator()(const Indices& index) const;
  // Component `c` of a vector field (row-major for matrices) as a scalar field.
  Field operator[](int c) const;

  // ---- on the host (never activates on read; writes do) ----
  // A value written must keep its value in the field's type (2.5 is no
  // i32, 300 no u8, NaN no integer): else grove::Error naming the field
  // and the value, and nothing is stored (from_vector checks every value
  // first).
  template <typename T = double>
  T read(std::initializer_list<int64_t> index = {}) const {
    T out{};
    read_raw(index, type_of<T>(), &out);
    return out;
  }
  template <typename T>
  void write(std::initializer_list<int64_t> index, T value) const {
    write_raw(index, type_of<T>(), &value);
  }
  // Every element, row-major over shape(); components interleaved for
  // vectors. Inactive cells read 0.
  template <typename T>
  std::vector<T> to_vector() const {
    std::vector<T> out;
    copy_out(type_of<T>(), detail::vector_destination(out));
    return out;
  }
  // The same into `out`, resized to fit: a loop reading a field every
  // frame reuses its buffer (no allocation, nothing zeroed first).
  template <typename T>
  void to_vector(std::vector<T>& out) const {
    copy_out(type_of<T>(), detail::vector_destination(out));
  }
  template <typename T>
  void from_vector(const std::vector<T>& values) const {
    copy_in(type_of<T>(), values.data(), values.size(), "from_vector");
  }
  // The same with memory the caller holds (an array, a mapped staging
  // buffer of a renderer): exactly num_elements() * components() values,
  // else grove::Error naming the field and both counts.
  template <typename T>
  void to_span(std::span<T> out) const {
    copy_out_to(type_of<std::remove_const_t<T>>(), out.data(), out.size());
  }
  template <typename T>
  void from_span(std::span<const T> values) const {
    copy_in(type_of<T>(), values.data(), values.size(), "from_span");
  }
  // Sets every element to `value`.
  template <typename T>
  void fill(T value) const {
    fill_raw(type_of<T>(), &value);
  }

  // The name it was declared with ("v" for a vector field, "v.1" for one
  // of its components).
  std::string name() const;
  DataType dtype() const;
  Shape shape() const;          // empty until placed
  int ndim() const;
  bool placed() const;
  int n() const { return n_; }  // vector length (rows for matrices)
  int m() const { return m_; }  // columns (1 for vectors and scalars)
  int components() const { return n_ * m_; }
  int64_t num_elements() const;  // product of shape()
  std::vector<int> component_ids() const { return ids_; }
  // The Program this field belongs to; raises grove::Error when the handle
  // is empty or its Program was destroyed.
  detail::ProgramImpl* program() const;

  // The tree instance this handle reads and writes on the host (-1: its
  // tree's own instance), and the kernel tree parameter it names inside a
  // kernel body (-1: none); see Tree::field and TreeArg::field.
  int instance() const { return instance_; }
  int tree_param() const { return tree_param_; }

  Field(std::weak_ptr<detail::ProgramImpl> program, std::vector<int> ids, int n, int m, int instance = -1,
        int tree_param = -1)
      : program_(std::move(program)), ids_(std::move(ids)), n_(n), m_(m), instance_(instance), tree_param_(tree_param) {}

 private:
  friend class SNode;
  // Bytes a host copy of every element takes; raises grove::Error when that
  // cannot be allocated (a sparse field's index space may be far larger
  // than memory).
  size_t host_copy_bytes(size_t element_bytes) const;
  void read_raw(std::initializer_list<int64_t> index, DataType as, void* out) const;
  void write_raw(std::initializer_list<int64_t> index, DataType as, const void* value) const;
  // Every value as `as` into what `out` places (host_copy_bytes checked first).
  void copy_out(DataType as, detail::HostDestination out) const;
  void copy_out_to(DataType as, void* out, size_t count) const;  // `count` checked first
  // `api` names the call in errors ("from_vector").
  void copy_in(DataType as, const void* values, size_t count, const char* api) const;
  void fill_raw(DataType as, const void* value) const;
  // program(), held for the whole of a host operation: a print sink it runs
  // may destroy the Program's last handle.
  std::shared_ptr<detail::ProgramImpl> hold() const;
  std::weak_ptr<detail::ProgramImpl> program_;
  std::vector<int> ids_;
  int n_ = 1, m_ = 1;
  int instance_ = -1;
  int tree_param_ = -1;
};

// A kernel argument's declaration: arg(f32, "value"), or a tree of a type:
// arg(grid, "tr") (the kernel runs on whichever instance a launch passes).
struct ArgSpec {
  DataType type = DataType::unknown;
  std::string name;
  int tree_type = -1;  // a tree argument: the type's id (TreeType::id())
  std::weak_ptr<detail::ProgramImpl> tree_program;  // and the Program that made the type
};
inline ArgSpec arg(DataType type, std::string name = "") { return {type, std::move(name), -1, {}}; }
ArgSpec arg(const TreeType& type, std::string name = "");

// A value passed to a kernel on launch: a number, converted to the
// argument's type, or a Tree for a tree argument.
struct ArgValue {
  DataType type = DataType::unknown;
  uint64_t bits = 0;
  const Tree* tree = nullptr;  // valid for the call it is passed to
  template <typename T>
    requires std::is_arithmetic_v<T>
  ArgValue(T v) : type(type_of<T>()) {  // NOLINT: implicit on purpose
    static_assert(sizeof(T) <= sizeof(bits));
    __builtin_memcpy(&bits, &v, sizeof(T));
  }
  ArgValue(const Tree& t) : tree(&t) {}  // NOLINT: implicit on purpose
};

class TreeArg;

// Inside a kernel body: the kernel's arguments as expressions, and its tree
// arguments as handles.
class Args {
 public:
  Expr operator[](int index) const;
  Expr operator[](std::string_view name) const;
  // A tree argument: args.tree("tr").field("x")(i, j).
  TreeArg tree(int index) const;
  TreeArg tree(std::string_view name) const;
  int size() const { return count_; }
  explicit Args(int count) : count_(count) {}

 private:
  int count_;
};

// A compiled-on-first-use kernel. Copies share the same kernel. Like a
// Field, it raises grove::Error when used after its Program is destroyed.
class Kernel {
 public:
  Kernel() = default;
  template <typename... A>
  void operator()(const A&... args) const {
    launch({ArgValue(args)...});
  }
  void launch(const std::vector<ArgValue>& args) const;
  const std::string& name() const;
  // The kernel's IR after `stage` ("frontend", "type_check", "simplify";
  // "final" for the last one), compiling it if needed.
  std::string ir(std::string_view stage = "final") const;
  // How many times it was compiled (1 after any number of launches; the
  // CPU's optimised recompile of a kernel first compiled quick,
  // Config::cpu_tiers, is not counted).
  int compile_count() const;

  Kernel(std::weak_ptr<detail::ProgramImpl> program, int id) : program_(std::move(program)), id_(id) {}

 private:
  friend class aot::Module;
  std::weak_ptr<detail::ProgramImpl> program_;
  int id_ = -1;
};

struct SNodeStats {
  int id = 0;
  std::string name;
  SNodeKind kind = SNodeKind::dense;
  int64_t active_cells = 0;     // cells currently active (under active ancestors)
  int64_t capacity = 0;         // most cells that can exist at once
  // pointer and dynamic nodes (dynamic: in chunks):
  int64_t pool_used = 0;        // pool entries in use
  int64_t pool_capacity = 0;    // pool entries
  int64_t pool_high_water = 0;  // most entries in use at the end of any kernel
  // every node but root and place:
  int64_t list_length = 0;      // containers in its list after the last listgen
  int64_t listgen_runs = 0;     // how often its list was generated
};

struct Stats {
  std::vector<SNodeStats> snodes;
  int64_t kernels_compiled = 0;
  // Of the user's kernels compiled, those whose code is still the quick
  // tier's (Config::cpu_tiers: not yet run long enough to be optimised).
  int64_t kernels_on_quick_code = 0;
  int64_t kernel_launches = 0;
  int64_t tree_words = 0;           // total 32-bit words of all tree buffers
  int64_t allocation_failures = 0;  // allocations and appends that found a pool or list full
  // The statistics of one SNode by name (SNode::name()), as a copy: nullopt
  // when there is none. at() raises grove::Error naming the SNode instead.
  std::optional<SNodeStats> find(std::string_view snode_name) const;
  SNodeStats at(std::string_view snode_name) const;
};

// Declares a tree type: its fields and SNodes, as under prog.root() (see
// Program::tree_type).
class TreeTypeBuilder {
 public:
  // A field of the type; place it under root().
  Field field(DataType type, std::string_view name);
  Field vector_field(int n, DataType type, std::string_view name);
  Field matrix_field(int n, int m, DataType type, std::string_view name);
  SNode& root();

  TreeTypeBuilder(detail::ProgramImpl* program, int type) : program_(program), type_(type) {}

 private:
  detail::ProgramImpl* program_;
  int type_;
};

// A tree type (the RFC "AOT for all SNodes"'s SNodeTree): SNodes and fields
// laid out once, when the type is made, pool capacities included; any
// number of instances share the layout, and a kernel taking a tree of the
// type (arg(type, "tr")) is compiled once for all of them. Cheap to copy.
class TreeType {
 public:
  TreeType() = default;
  const std::string& name() const;
  int id() const { return id_; }
  // The type's field named `name` (its declaration; read and write a field
  // through an instance: Tree::field).
  Field field(std::string_view name) const;

  TreeType(std::weak_ptr<detail::ProgramImpl> program, int id) : program_(std::move(program)), id_(id) {}

 private:
  friend class Tree;
  friend class Program;
  friend class aot::Module;
  friend ArgSpec arg(const TreeType& type, std::string name);
  std::weak_ptr<detail::ProgramImpl> program_;
  int id_ = -1;
};

// One instance of a tree type: its own buffer, lists and pool state.
class Tree {
 public:
  Tree() = default;
  const std::string& name() const;
  TreeType type() const;
  int instance() const { return instance_; }
  // The field `name` of this instance, for the host (read, write,
  // to_vector, fill).
  Field field(std::string_view name) const;
  // Deactivates every sparse SNode of this instance.
  void deactivate_all() const;
  // This instance's SNodes (Program::stats counts trees' own instances).
  Stats stats() const;
  // Frees the instance's buffer now (else it lives as long as its
  // Program); every later use of a handle to it raises grove::Error.
  void destroy() const;
  // The Program this tree belongs to; raises grove::Error when the handle
  // is empty, its Program was destroyed, or the tree was.
  detail::ProgramImpl* program() const;

  Tree(std::weak_ptr<detail::ProgramImpl> program, int type, int instance, std::string name)
      : program_(std::move(program)), type_(type), instance_(instance), name_(std::move(name)) {}

 private:
  std::weak_ptr<detail::ProgramImpl> program_;
  int type_ = -1;
  int instance_ = -1;  // never given to another instance, even after destroy()
  std::string name_;   // for errors after destroy(), when the Program has forgotten it
};

// Inside a kernel body: a tree argument, bound to the instance each launch
// passes.
class TreeArg {
 public:
  // The type's field `name`, on this argument's instance: x(i, j) reads it.
  Field field(std::string_view name) const;
  // An SNode of the type, on this argument's instance, for the SNode
  // operations and struct-fors: activate(tr[blocks], {i}).
  SNodeRef operator[](const SNode& snode) const;
  int index() const { return param_; }

  TreeArg(detail::ProgramImpl* program, int type, int param) : program_(program), type_(type), param_(param) {}

 private:
  detail::ProgramImpl* program_;
  int type_;
  int param_;
};

// Threads: a Program and its handles (Field, SNode, Kernel, Tree, TreeType)
// may be used from several threads. Each operation holds the Program's lock
// while it runs, so operations of one Program take turns (a kernel's first
// launch compiles it once, whichever thread gets there first); use one
// Program per thread to run in parallel. Kernel bodies, tree type
// declarations and the print sink run inside such an operation: they may
// use the Program's handles, but must not wait for another thread that uses
// the same Program. A Program destroyed while another thread's operation
// runs (or from its own kernel body or print sink) lives until that
// operation returns; later uses of its handles raise grove::Error.
class Program {
 public:
  explicit Program(Config config = {});
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // An unplaced scalar field; place it with root().dense(...).place(f).
  Field field(DataType type, std::string_view name = "");
  // A dense field of `shape` on its own root-level dense node (Taichi's
  // ti.field(shape=...)); {} gives a 0-D field.
  Field field(DataType type, Shape shape);
  Field field(DataType type, std::string_view name, Shape shape);
  // With an offset per axis: valid indices run from offset[d] (Taichi's
  // ti.field(shape=..., offset=...)).
  Field field(DataType type, std::string_view name, Shape shape, Shape offset);
  // Vector (n components) and matrix (n x m) fields of up to 64 components,
  // scalarised: component c is a scalar field placed beside the others.
  Field vector_field(int n, DataType type, std::string_view name = "");
  Field vector_field(int n, DataType type, std::string_view name, Shape shape);
  Field matrix_field(int n, int m, DataType type, std::string_view name, Shape shape);

  // The root of the tree being declared. Once a kernel has run (or a field was
  // accessed from the host), the tree is frozen and root() starts a new one.
  SNode& root();

  // A tree type named `name`, declared by `declare` and laid out at once
  // (capacities set there with SNode::capacity, else shares of
  // Config::device_memory); then instances of it:
  //   TreeType grid = prog.tree_type("grid", [](TreeTypeBuilder& b) {
  //     Field x = b.field(f32, "x");
  //     b.root().pointer(ij, 64).dense(ij, 8).place(x);
  //   });
  //   Tree a = prog.instantiate(grid, "a"), b = prog.instantiate(grid, "b");
  TreeType tree_type(std::string_view name, const std::function<void(TreeTypeBuilder&)>& declare);
  Tree instantiate(const TreeType& type, std::string_view name = "");

  Kernel kernel(std::string_view name, std::function<void()> body);
  Kernel kernel(std::string_view name, std::vector<ArgSpec> args, std::function<void(Args)> body);

  // Deactivates every sparse SNode of every tree (Taichi's
  // ti.deactivate_all_snodes()).
  void deactivate_all();
  // Waits until every launched kernel has finished.
  void sync();
  Stats stats() const;
  Arch arch() const;  // the backend actually used (never Auto)
  // The device kernels run on, in words: "llvmpipe (LLVM 19.1.7, 256 bits)
  // (Vulkan 1.3.289, CPU)", "LLVM CPU backend: AMD EPYC 7B13 (znver3,
  // AVX2 256-bit vectors), 2 threads".
  std::string device_name() const;
  const Config& config() const;
  // Where `print` inside kernels goes (stdout by default).
  void set_print_sink(std::function<void(std::string_view)> sink);

  // The profiler (Config::profile; raises grove::Error when it is off).
  // Each waits for every launch first. profile(): a row per kernel and
  // task, by kernel name; profile_report(): the same as a table (count,
  // total, mean, min, max in ms, kernels by time); clear_profile() starts
  // the tally afresh.
  std::vector<TaskProfile> profile();
  std::string profile_report();
  void clear_profile();

  detail::ProgramImpl* impl() const { return impl_.get(); }

 private:
  std::shared_ptr<detail::ProgramImpl> impl_;
};

}  // namespace grove
