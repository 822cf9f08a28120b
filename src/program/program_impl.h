// src/program/program_impl.h — what stands behind grove::Program: fields,
// SNode trees, kernels, the backend, and the DSL's recording context.
#pragma once

#include <array>
#include <deque>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grove/dsl.h"
#include "grove/program.h"
#include "ir/builder.h"
#include "ir/ir.h"
#include "ir/passes/offload.h"
#include "ir/snode.h"
#include "program/background.h"
#include "program/backend.h"
#include "program/test_hooks.h"
#include "runtime/core/context.h"

namespace grove::detail {

struct FieldRecord {
  std::vector<int> ids;  // one scalar field per component
  int n = 1, m = 1;
};

// A tree type made by Program::tree_type: its tree of the forest (the type
// id), laid out once, and its fields by the names the user gave them.
struct TreeTypeRecord {
  std::string name;
  std::map<std::string, FieldRecord, std::less<>> fields;
  bool ready = false;  // declared and laid out (false while its declaration runs)
};

// A Program's trees as the host sees them: the tree types made by
// Program::tree_type (by tree id), the tree type each field was declared
// in, and each plain tree's own instance (its data, made when the tree is
// laid out).
class TreeTable {
 public:
  // A tree type whose declaration starts now (not ready until it ends).
  TreeTypeRecord& add_type(int tree, std::string name);
  // Forgets a type whose declaration failed.
  void drop_type(int tree) { types_.erase(tree); }
  // Declared, or being declared.
  bool is_type(int tree) const { return types_.count(tree) != 0; }
  bool has_type_named(std::string_view name) const;
  // Declared or being declared; std::out_of_range for another tree.
  TreeTypeRecord& type(int tree) { return types_.at(tree); }
  const TreeTypeRecord& type(int tree) const { return types_.at(tree); }
  // Declared and complete, else null.
  const TreeTypeRecord* ready_type(int tree) const;

  // The tree type whose declaration made `field`, or -1.
  int declared_in(int field) const;
  void set_declared_in(int field, int type);

  // The instance holding a plain tree's data, or -1 before it is laid out.
  int own_instance(int tree) const;
  void set_own_instance(int tree, int instance);

 private:
  std::map<int, TreeTypeRecord> types_;
  std::vector<int> declared_in_;   // by field id
  std::vector<int> own_instance_;  // by tree id
};

struct KernelRecord {
  std::string name;
  std::vector<ArgSpec> args;         // as declared: numbers and trees, in order
  // Per declared argument: its place among the numbers (the IR's `arg`
  // index) or among the trees (the IR's tree parameter), -1 for the other.
  std::vector<int> scalar_index, tree_index;
  std::function<void(Args)> body;
  std::unique_ptr<ir::Kernel> ir;                    // after the pipeline
  // (stage, IR text) after each pass; only the last one's text until
  // Kernel::ir asks for another (run_passes again from `frontend`).
  std::vector<std::pair<std::string, std::string>> stages;
  std::unique_ptr<ir::Kernel> frontend;  // the recorded IR, before the passes
  std::unique_ptr<rt::LoadedKernel> compiled;       // its plan, loaded on the device
  // Tiers (Backend::compile_first): with `full_plan` (the backend-neutral
  // plan, kept for the full tier's compile), `compiled` is quick code, to
  // be replaced by the full tier's once its launches have run for
  // `tier_up_seconds` (what its quick compile took): made meanwhile by
  // `tier_up_job`, in the background (ProgramImpl::start_tier_up).
  std::unique_ptr<rt::KernelPlan> full_plan;
  std::shared_ptr<BackgroundCompiles::Job> tier_up_job;
  double quick_seconds = 0, tier_up_seconds = 0;
  int64_t quick_launches = 0;
  bool quick() const { return full_plan != nullptr; }
  int compile_count = 0;
  bool internal = false;                             // made by Grove (host writes, deactivate_all)
};

// A Program's kernels: the user's, whose ids (in the order they were made)
// are their Kernel handles', and Grove's own (host writes, fills,
// deactivate_all), made on first use and found again by the field or
// SNode they serve. A user's kernel name is unique in its Program.
class KernelTable {
 public:
  // Grove's own kinds of kernel, each one per field or SNode.
  enum class Own { writer, filler, clear };

  KernelRecord& add(std::unique_ptr<KernelRecord> rec);
  bool has(std::string_view name) const { return names_.count(name) != 0; }
  KernelRecord& at(int id) const { return *records_.at(static_cast<size_t>(id)); }
  // The first kernel of that name, or null.
  KernelRecord* named(std::string_view name) const;
  // Its id, or -1 when it is not one of this table's.
  int id_of(const KernelRecord& rec) const;
  int size() const { return static_cast<int>(records_.size()); }
  // The kernel of `kind` for `key` (a field or SNode id), made by `make`,
  // which adds it, on first use.
  KernelRecord& own(Own kind, int key, const std::function<void()>& make);
  // Every kernel, in the order made.
  auto begin() const { return records_.begin(); }
  auto end() const { return records_.end(); }

 private:
  std::vector<std::unique_ptr<KernelRecord>> records_;
  std::set<std::string, std::less<>> names_;
  std::array<std::vector<int>, 3> own_;  // by Own, then key: the kernel's id, or -1
};

// The host operations of a Program a test observes the end of
// (test_hooks.h), in order, up to the first that raised.
class HostTrace {
 public:
  // Traced from now on.
  void start() { ops_ = std::make_unique<std::vector<HostOp>>(); }
  bool started() const { return ops_ != nullptr; }
  // Started and no operation has raised yet: operations are still recorded.
  bool recording() const { return ops_ != nullptr && !ended_; }
  // A new operation of `kind`: its index, or -1 when not recording.
  long begin(HostOp::Kind kind);
  HostOp& at(long index) { return (*ops_)[static_cast<size_t>(index)]; }
  // Operation `index` raised: the trace ends with it.
  void raised(long index);
  // The operations, and no trace from now on.
  std::unique_ptr<std::vector<HostOp>> take() { return std::move(ops_); }

 private:
  std::unique_ptr<std::vector<HostOp>> ops_;
  bool ended_ = false;
};

// One host operation of a traced Program (test_hooks.h): op() is nullptr
// when the Program is not traced. An exception leaving the scope marks the
// operation as raised and ends the trace.
class TraceScope {
 public:
  TraceScope(ProgramImpl& p, HostOp::Kind kind);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  HostOp* op();

 private:
  ProgramImpl& p_;
  long index_ = -1;
  int exceptions_ = 0;
};

// The recording state while a kernel body runs.
struct KernelContext {
  ProgramImpl* program;
  KernelRecord* record;
  ir::Kernel* kernel;
  ir::Builder builder;
  // The backend the kernel is recorded for (the program's own, or another
  // arch's code generator for an AOT module): the DSL lays loops out for it.
  const Backend* target;
  // Kinds of the enclosing loops, innermost last; a top-level range_for or a
  // struct_for is parallel (no break/continue).
  std::vector<ir::StmtKind> loops;
  int depth_of_parallel_loop = -1;
  int blocks_open = 0;  // nested loop and branch bodies being recorded (ir::kMaxNesting)
};

// The words of a tree a host copy works on, kept from one copy to the next
// up to kKeptBytes (a fresh buffer of each copy's size costs it page faults
// as large as the copy itself); a larger one is freed when the copy ends.
class HostWords {
 public:
  static constexpr size_t kKeptBytes = size_t{64} << 20;
  class Lease {
   public:
    explicit Lease(std::vector<uint32_t>& words) : words_(words) {}
    ~Lease() {
      if (words_.capacity() * 4 > kKeptBytes) std::vector<uint32_t>().swap(words_);
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    std::vector<uint32_t>& words() { return words_; }

   private:
    std::vector<uint32_t>& words_;
  };
  Lease lease() { return Lease(words_); }

 private:
  std::vector<uint32_t> words_;
};

// Words of the scratch buffer a Program starts with; it grows to what the
// kernel keeping the most values across tasks needs. Every kernel uses it
// from word 0: launches run one after the other (each starts with a barrier
// on every backend), and values kept in it live for one launch only.
inline constexpr int64_t kInitialScratchWords = 256;

// The buffer kernels keep values in across tasks: a tree of the forest
// without SNodes (offload and plan_kernel name it) and its one instance.
class ScratchBuffer {
 public:
  // Adds the tree to `forest` and its buffer, kInitialScratchWords long, to `context`.
  ScratchBuffer(ir::SNodeForest& forest, rt::Context& context);
  int tree() const { return tree_; }
  int instance() const { return instance_; }
  // Grows it to at least `words` (to twice its size at least); its
  // contents are not kept, as values live for one launch.
  void ensure(int64_t words);

 private:
  ir::SNodeForest& forest_;
  rt::Context& context_;
  int tree_ = -1;
  int instance_ = -1;
};

// The SNode handles Program::root, SNode::dense, ... hand out, by SNode id:
// one per SNode, made on first use, kept as long as the Program (a deque:
// references to them stay valid).
class SNodeHandles {
 public:
  explicit SNodeHandles(ProgramImpl* program) : program_(program) {}
  SNode& at(int id);

 private:
  ProgramImpl* program_;
  std::deque<SNode> handles_;
};

// The tree Program::root and the fields Program::field makes with a shape
// go into: open until it is laid out, or until the dense fields in it would
// outgrow one buffer of the device.
class ImplicitTree {
 public:
  // The open tree, added to `forest` when there is none.
  int open(ir::SNodeForest& forest);
  // Starts a new tree unless the open one has room for `bytes` more within `limit`.
  void make_room(const ir::SNodeForest& forest, int64_t bytes, int64_t limit);
  // Counts `bytes` of dense field put in the open tree (a new one from 0).
  void add(const ir::SNodeForest& forest, int64_t bytes);
  // Fields declared from now on go into a new tree if `tree` is the open one.
  void close(int tree) {
    if (tree == tree_) tree_ = -1;
  }

 private:
  bool is_open(const ir::SNodeForest& forest) const { return tree_ >= 0 && !forest.tree(tree_).laid_out; }
  int tree_ = -1;
  int64_t dense_bytes_ = 0;  // what make_dense_field put in it, with margins
};

// How many times a Program's kernels were launched.
class LaunchCounts {
 public:
  // A launch of a user's kernel (Grove's own are not counted).
  void user_launch() { ++launches_; }
  // A launch the profiler timed.
  void timed() { ++unreported_; }
  // The user's kernels' launches (Stats::kernel_launches).
  int64_t launches() const { return launches_; }
  // Launches timed since the profiler's tally was last reported (a Program
  // destroyed with some prints the table).
  int64_t unreported() const { return unreported_; }
  void reported() { unreported_ = 0; }

 private:
  int64_t launches_ = 0;
  int64_t unreported_ = 0;
};

// Most components of a vector or matrix field (each is a scalar field).
inline constexpr int kMaxComponents = 64;

using rt::host_memory_bytes;  // the bound for host copies

class ProgramImpl : public std::enable_shared_from_this<ProgramImpl> {
 public:
  explicit ProgramImpl(Config config);

  // A Program is used by one thread at a time: every public operation on
  // it or its handles (Field, SNode, Kernel, Tree, TreeType) holds this
  // lock while it runs, so threads sharing a Program are serialised, not
  // racing. Recursive: kernel bodies and print sinks run inside operations
  // and may use the Program's handles.
  mutable std::recursive_mutex mutex;
  [[nodiscard]] std::unique_lock<std::recursive_mutex> lock() { return std::unique_lock(mutex); }

  // Programs are numbered in creation order, process-wide, so that an error
  // about a handle of another Program can name both.
  const int serial;
  std::string label() const { return "Program #" + std::to_string(serial); }
  Config config;
  Arch arch = Arch::Interp;
  BackendOptions backend_options;  // what the Config says to the backends
  // The declarations: every scalar field, and the SNode trees they are
  // placed in. Read here; changed only by ProgramImpl's own operations
  // (make_field, add_child, place, set_capacity, materialize_tree, ...).
  const ir::FieldTable& fields() const { return fields_; }
  const ir::SNodeForest& forest() const { return forest_; }
  SNodeHandles snodes{this};
  // The run side (instances, launches, host access) and the compile side.
  std::unique_ptr<rt::Context> context;
  std::unique_ptr<Backend> backend;
  // The full tier's compiles (declared after the backend, which their jobs
  // use: destroyed before it).
  BackgroundCompiles background;
  TreeTable trees;
  KernelTable kernels;
  std::function<void(std::string_view)> print_sink;
  HostTrace trace;                         // while a test observes Programs' ends
  std::unique_ptr<ScratchBuffer> scratch;  // values kernels keep across tasks
  LaunchCounts launches;
  HostWords host_words;                    // for host copies of whole fields

  // `type`, with `real` taken as Config::default_fp.
  DataType resolve(DataType type) const { return type == real ? config.default_fp : type; }

  // Fields and SNodes
  Field make_field(DataType type, std::string_view name, int n, int m);
  // A field of `shape` on its own root-level dense node (Program::field with
  // a shape); {} places it in the root's cell.
  Field make_dense_field(DataType type, std::string_view name, int n, int m, const Shape& shape,
                         const Shape& offset = {});
  SNode& root();
  SNode& add_child(int parent, SNodeKind kind, Axes axes, std::vector<int64_t> extents, int64_t chunk);
  void place(int parent, const Field& f, const Shape& offset = {});
  // SNode::capacity: the cells `snode`'s pool holds (ir::SNodeForest::set_capacity's checks).
  void set_capacity(int snode, int64_t cells) { forest_.set_capacity(snode, cells); }
  const ir::FieldDecl& field_decl(int id) const { return fields_.get(id); }
  // Freezes the tree holding `field` (and allocates its buffer); raises if
  // the field is not placed, naming it and `user` (a kernel or "the host").
  void materialize_field(int field, std::string_view user);
  // Lays out `tree` and creates its buffer. On failure (too large, no
  // memory) it raises grove::Error and leaves the program as it was.
  void materialize_tree(int tree);
  // `tree` laid out on a copy of the forest, pools without an explicit
  // capacity sharing at most `budget` bytes (less when the tree would not
  // fit in one buffer); `pool_bytes` receives what its pools take. Raises
  // grove::Error when it cannot fit.
  ir::SNodeForest lay_out(int tree, int64_t budget, int64_t* pool_bytes) const;
  // Program::tree_type and Program::instantiate.
  int make_tree_type(std::string_view name, const std::function<void(TreeTypeBuilder&)>& declare);
  int instantiate(int type, std::string_view name);
  const TreeTypeRecord& tree_type(int type) const;

  // Kernels
  // A kernel recorded from its body and run through the pass pipeline for
  // `target`'s devices, whose largest buffer holds `max_buffer_words`;
  // `report`: print and dump its stages (Config::print_ir, GROVE_DUMP_DIR)
  // and let tests observe it.
  struct Lowered {
    std::unique_ptr<ir::Kernel> kernel;
    // (stage, IR text): every text with `all_stages`, else the last one's
    // (and those a dump or Config::print_ir printed).
    std::vector<std::pair<std::string, std::string>> stages;
    rt::KernelPlan plan;  // backend-neutral (ir::plan_kernel)
    int64_t scratch_words = 0;
  };
  // Records `k`'s body (it runs once per call) and runs the passes.
  Lowered lower(KernelRecord& k, const Backend& target, int64_t max_buffer_words, bool report);
  std::unique_ptr<ir::Kernel> record_body(KernelRecord& k, const Backend& target);
  Lowered run_passes(KernelRecord& k, std::unique_ptr<ir::Kernel> kernel, const Backend& target,
                     int64_t max_buffer_words, bool report, bool all_stages);
  KernelRecord& add_kernel(std::string name, std::vector<ArgSpec> args, std::function<void(Args)> body,
                           bool internal);
  void compile(KernelRecord& k);
  // `k` compiled at the full tier: its quick code, if any, replaced (its
  // background compile waited for, or run here).
  void tier_up(KernelRecord& k);
  // `k`'s full tier's compile queued in the background.
  void start_tier_up(KernelRecord& k);
  // `k`'s background compile's code taken, once it is done: its quick
  // code replaced, or kept where the compile raised (then this raises,
  // saying so, and the kernel goes on with its quick code).
  void finish_tier_up(KernelRecord& k);
  // `k`'s plan with code for `target`, a backend of another arch than the
  // Program's that compiles without a device (Backend::generate): what an
  // AOT module for that arch holds. The Program's own compile is untouched.
  rt::KernelPlan plan_for(KernelRecord& k, Backend& target);
  void launch(KernelRecord& k, const std::vector<ArgValue>& args);
  // Argument `n` of `k` as the bits of its compute type; raises grove::Error
  // naming the kernel and argument when the value does not convert exactly.
  uint64_t convert_argument(const KernelRecord& k, size_t n, const ArgValue& value) const;
  // The instance passed for tree argument `n`; raises grove::Error naming
  // the kernel, the parameter and both types when it is not a live tree of
  // the parameter's type and of this program.
  int tree_argument(const KernelRecord& k, size_t n, const ArgValue& value) const;
  // "x: f32, tr: tree of type 'grid'", for messages.
  std::string signature(const KernelRecord& k) const;
  // Raises the pool errors launches left in the tree headers.
  void check_pools() { context->check_pools(); }

  // Host writes of one element at the user's `index` (activating for sparse paths).
  // `instance` holds the field (host_instance).
  void host_write(int field, int instance, const int64_t* index, uint64_t bits);
  // Grove's own kernels: the one writing an element of a sparse field
  // (activating its cell), and the one deactivating every cell of a sparse
  // SNode; made on first use (and saved in AOT modules).
  KernelRecord& writer_kernel(int field);
  KernelRecord& clear_kernel(int snode);
  // Grove's own kernel writing its argument to every element of a field
  // (a sparse field's fill, and the activation before a from_vector).
  KernelRecord& filler_kernel(int field);
  // Host copies of whole fields (Field::to_vector, from_vector, fill):
  // every component of `ids` in `instance`, row-major, components
  // interleaved; values one per element and component, or one for
  // all (`each` false): `value_bytes` (4 or 8) bytes each, the bits of the
  // field's compute type.
  // Returns where the `count` values went (what `out` placed).
  const void* copy_field_out(const std::vector<int>& ids, int instance, DataType as, HostDestination out,
                             size_t count);
  void copy_field_in(const std::vector<int>& ids, int instance, const void* values, size_t value_bytes, bool each);
  // The sparse SNodes nearest below `snode` (itself excluded).
  std::vector<int> nearest_sparse(int snode) const;
  // Every cell of `snode` (its tree's own instance, or `instance` of a tree type).
  void deactivate_all(int snode, int instance = -1);
  // The instance's SNodes, measured (Program::stats, Tree::stats).
  Stats instance_stats(int tree, int instance);
  // The program-wide counts of a Stats: kernels, launches, failures.
  void add_program_counts(Stats& st) const;

  // Raises grove::Error when a kernel body is being recorded on this
  // thread: `what` (a host operation on `name`) runs between launches, never
  // inside a kernel.
  void host_access(std::string_view what, std::string_view name) const;
  // Raises grove::Error when `handle` (a field, SNode or kernel named `name`)
  // belongs to `owner`, another Program than this one; `user` says who uses it.
  // Raises unless `owner` is this Program: "<user> uses <kind> '<name>',
  // which belongs to Program #2...". `name` (which reads the other
  // Program) is called only on a mismatch, and only if that Program's lock
  // is free at once: waiting for it while this one's is held could
  // deadlock against a thread making the opposite mistake.
  void check_same_program(const ProgramImpl* owner, std::string_view kind, const std::function<std::string()>& name,
                          std::string_view user) const;

  // Host access: checks an index (one value per index of the field, its
  // offset included) against the field's shape, raising a grove::Error that
  // names the field, and returns it.
  std::vector<int64_t> check_index(int field, std::initializer_list<int64_t> index);
  // The physical index (one value per axis, ir::SNodeDecl::ndim()) of the
  // element at `index` (the user's indices, offset included).
  std::array<int64_t, ir::kMaxAxes> physical_index(int field, const int64_t* index) const;
  // The instance a field of a tree's own instance lives in (laying the
  // tree out first).
  int own_instance_of_field(int field);
  // The instance a Field handle reads and writes on the host: an
  // instance's (Tree::field), or its tree's own; raises grove::Error for a
  // field of a tree type used without an instance.
  int host_instance(const Field& f);
  bool is_tree_type(int tree) const { return trees.is_type(tree); }
  // A handle to instance `instance` of tree type `type`, for internal kernels.
  Tree tree_handle(int type, int instance) { return Tree(weak_from_this(), type, instance, context->name_of(instance)); }
  int tree_of_field(int field) const { return forest_.snode(forest_.place_of(field)).tree; }

 private:
  ir::FieldTable fields_;
  ir::SNodeForest forest_;
  ImplicitTree implicit_tree_;
  int64_t user_fields_ = 0;   // made by make_field (naming unnamed ones)
  int64_t budget_used_ = 0;   // bytes of Config::device_memory given to trees so far
};

// One node's measured statistics into the API's form.
void copy_stats(const rt::NodeStats& n, SNodeStats& out);

// The context of the kernel being recorded on this thread; raises
// grove::Error when the DSL is used outside a kernel body.
KernelContext& current();
// Raises grove::Error "kernel '<name>': <message>" for a mistake in a kernel body.
[[noreturn]] void kernel_error(const std::string& message);
KernelContext* current_or_null();

}  // namespace grove::detail
