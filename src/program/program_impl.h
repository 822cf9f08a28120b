// src/program/program_impl.h — what stands behind grove::Program: fields,
// SNode trees, kernels, the backend, and the DSL's recording context.
#pragma once

#include <deque>
#include <functional>
#include <memory>
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
#include "program/backend.h"

namespace grove::detail {

struct FieldRecord {
  std::vector<int> ids;  // one scalar field per component
  int n = 1, m = 1;
};

struct KernelRecord {
  std::string name;
  std::vector<ArgSpec> args;
  std::function<void(Args)> body;
  std::unique_ptr<ir::Kernel> ir;                    // after the pipeline
  std::vector<std::pair<std::string, std::string>> stages;  // (stage, IR text)
  std::unique_ptr<CompiledKernel> compiled;
  std::vector<ir::TaskInfo> tasks;                   // from offload, for the scheduler
  int compile_count = 0;
  bool internal = false;                             // made by Grove (host writes, deactivate_all)
  bool may_allocate = false;                         // some task may activate (set at compile)
};

// The list scheduler's memory (DESIGN.md, "List generation"): an epoch
// counter, when each SNode's activity last may have changed, and when each
// list was last generated.
struct ListSchedule {
  int64_t epoch = 0;
  std::vector<int64_t> modified;   // by SNode id
  std::vector<int64_t> generated;  // by SNode id; 0 = never
  std::vector<int64_t> runs;       // listgen runs by SNode id
  std::vector<bool> skip;          // decided at clear_list, applied to its listgen
  void grow(size_t n) {
    if (modified.size() >= n) return;
    modified.resize(n, 0);
    generated.resize(n, 0);
    runs.resize(n, 0);
    skip.resize(n, false);
  }
};

// The recording state while a kernel body runs.
struct KernelContext {
  ProgramImpl* program;
  KernelRecord* record;
  ir::Kernel* kernel;
  ir::Builder builder;
  // Kinds of the enclosing loops, innermost last; a top-level range_for or a
  // struct_for is parallel (no break/continue).
  std::vector<ir::StmtKind> loops;
  int depth_of_parallel_loop = -1;
};

inline constexpr int64_t kScratchWords = 1 << 14;

class ProgramImpl {
 public:
  explicit ProgramImpl(Config config);

  Config config;
  Arch arch = Arch::Interp;
  ir::FieldTable fields;
  ir::SNodeForest forest;
  std::vector<FieldRecord> field_records;        // per user-visible Field
  std::deque<SNode> snode_handles;               // by SNode id
  std::unique_ptr<Backend> backend;
  std::vector<std::unique_ptr<KernelRecord>> kernels;
  std::function<void(std::string_view)> print_sink;
  int open_tree = -1;
  int scratch_tree = -1;           // values kernels keep across tasks
  int64_t scratch_used = 0;
  int64_t launches = 0;
  int64_t allocation_failures = 0;
  int64_t budget_used = 0;         // bytes of Config::device_memory given to trees so far
  ListSchedule schedule;
  std::vector<int> writer_kernels;  // by field id: the internal kernel writing one element, or -1
  std::vector<int> clear_kernels;   // by SNode id: the internal deactivate_all kernel, or -1

  // Fields and SNodes
  Field make_field(DataType type, std::string_view name, int n, int m);
  SNode& root();
  SNode& add_child(int parent, SNodeKind kind, Axes axes, std::vector<int64_t> extents, int64_t chunk);
  void place(int parent, const Field& f);
  const ir::FieldDecl& field_decl(int id) const { return fields.get(id); }
  // Freezes the tree holding `field` (and allocates its buffer); raises if
  // the field is not placed, naming it and `user` (a kernel or "the host").
  void materialize_field(int field, std::string_view user);
  void materialize_tree(int tree);

  // Kernels
  KernelRecord& add_kernel(std::string name, std::vector<ArgSpec> args, std::function<void(Args)> body,
                           bool internal);
  void compile(KernelRecord& k);
  void launch(KernelRecord& k, const std::vector<ArgValue>& args);
  // The scheduler's answer for task `index` of `k` (and its bookkeeping).
  bool schedule_task(const KernelRecord& k, size_t index);
  // Raises the pool errors the last launch left in the tree headers.
  void check_pools();

  // Host writes of one element (activating for sparse paths).
  void host_write(int field, const int64_t* index, uint64_t bits);
  void deactivate_all(int snode);

  // Host access: checks an index against the field's shape (raising a
  // grove::Error that names the field) and returns it padded to 8 axes.
  std::vector<int64_t> check_index(int field, std::initializer_list<int64_t> index);
  // Reads one word of a tree (through the backend; waits for queued work).
  uint32_t read_word(int tree, int64_t address);
  // A reader for a tree, backed by a host copy of the whole buffer (for
  // walks that touch many words: to_vector, stats).
  ir::SNodeForest::WordReader snapshot(int tree, std::vector<uint32_t>& copy);
  // A reader that fetches the pages it touches (for walks over a few parts
  // of a large tree: stats, single reads).
  using PageCache = std::unordered_map<int64_t, std::vector<uint32_t>>;
  ir::SNodeForest::WordReader paged(int tree, PageCache& cache);
  int tree_of_field(int field) const { return forest.snode(forest.place_of(field)).tree; }
  bool pools_dirty = false;  // a launch may have left pool errors in a tree header
};

// The context of the kernel being recorded on this thread; raises
// grove::Error when the DSL is used outside a kernel body.
KernelContext& current();
KernelContext* current_or_null();

}  // namespace grove::detail
