// src/program/program_impl.h — what stands behind grove::Program: fields,
// SNode trees, kernels, the backend, and the DSL's recording context.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grove/dsl.h"
#include "grove/program.h"
#include "ir/builder.h"
#include "ir/interpreter.h"
#include "ir/ir.h"
#include "ir/snode.h"

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
  std::unique_ptr<ir::Interpreter> interpreter;
  int compile_count = 0;
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

class ProgramImpl {
 public:
  explicit ProgramImpl(Config config);

  Config config;
  Arch arch = Arch::Interp;
  ir::FieldTable fields;
  ir::SNodeForest forest;
  std::vector<FieldRecord> field_records;        // per user-visible Field
  std::deque<SNode> snode_handles;               // by SNode id
  std::vector<std::vector<uint32_t>> tree_buffers;  // by tree id
  std::vector<std::unique_ptr<KernelRecord>> kernels;
  std::function<void(std::string_view)> print_sink;
  int open_tree = -1;
  int64_t launches = 0;

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
  void compile(KernelRecord& k);
  void launch(KernelRecord& k, const std::vector<ArgValue>& args);

  // Host access to one element: word address in its tree, checked.
  int64_t host_address(int field, std::initializer_list<int64_t> index, std::vector<uint32_t>*& words);
};

// The context of the kernel being recorded on this thread; raises
// grove::Error when the DSL is used outside a kernel body.
KernelContext& current();
KernelContext* current_or_null();

}  // namespace grove::detail
