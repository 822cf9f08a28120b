// src/program/kernel.cpp — recording kernels from the DSL, compiling them
// through the pass pipeline, and launching them on the backend.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "ir/eval.h"
#include "ir/interpreter.h"
#include "ir/passes/pipeline.h"
#include "ir/printer.h"
#include "program/program_impl.h"

namespace grove {

namespace detail {

namespace {
thread_local KernelContext* g_current = nullptr;

// Makes `ctx` the recording context for the lifetime of the guard.
class ContextGuard {
 public:
  explicit ContextGuard(KernelContext* ctx) : saved_(g_current) { g_current = ctx; }
  ~ContextGuard() { g_current = saved_; }
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  KernelContext* saved_;
};

std::string sanitize(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  return out;
}
}  // namespace

KernelContext* current_or_null() { return g_current; }

KernelContext& current() {
  if (g_current == nullptr)
    throw Error("a Grove kernel expression was used outside a kernel body; build expressions "
                "only inside the function given to Program::kernel");
  return *g_current;
}

void ProgramImpl::compile(KernelRecord& rec) {
  if (rec.ir) return;
  std::vector<ir::KernelArg> args;
  for (const ArgSpec& a : rec.args) args.push_back({a.name, a.type});
  auto kernel = std::make_unique<ir::Kernel>(rec.name, std::move(args), &fields);
  kernel->forest = &forest;
  KernelContext ctx{this, &rec, kernel.get(), ir::Builder(kernel->body()), {}, -1};
  {
    ContextGuard guard(&ctx);
    rec.body(Args(static_cast<int>(rec.args.size())));
  }
  std::set<int> used, trees;
  ir::walk(kernel->body(), [&](ir::Stmt* s) {
    if (s->field() >= 0) used.insert(s->field());
    if (s->kind() == ir::StmtKind::SNodeOp || (s->kind() == ir::StmtKind::StructFor && s->field() < 0))
      trees.insert(forest.snode(s->snode()).tree);
  });
  for (int f : used) materialize_field(f, "kernel '" + rec.name + "'");
  for (int t : trees) materialize_tree(t);

  std::vector<std::pair<std::string, std::string>> stages;
  const char* dump_dir = std::getenv("GROVE_DUMP_DIR");
  ir::PipelineOptions options;
  options.verify = config.verify_ir;
  options.on_stage = [&](std::string_view stage, const ir::Kernel& k) {
    std::string text = ir::print_module({&k});
    if (config.print_ir)
      std::cout << "[grove] kernel '" << rec.name << "' after " << stage << ":\n" << text << std::flush;
    if (dump_dir != nullptr && *dump_dir != '\0') {
      std::filesystem::create_directories(dump_dir);
      char num[8];
      std::snprintf(num, sizeof num, "%02zu", stages.size());
      std::filesystem::path p = std::filesystem::path(dump_dir) /
                                (sanitize(rec.name) + "." + num + "_" + std::string(stage) + ".ir");
      std::ofstream(p) << text;
    }
    stages.emplace_back(std::string(stage), std::move(text));
  };
  ir::OffloadResult offloaded;
  options.offload.scratch_tree = scratch_tree;
  options.offload.scratch_base = scratch_used;
  options.offload.scratch_words = kScratchWords - scratch_used;
  options.offload_result = &offloaded;
  options.lower.debug = config.debug;
  ir::run_pipeline(*kernel, options);
  scratch_used += offloaded.scratch_words_used;
  rec.tasks = std::move(offloaded.tasks);
  // Only a kernel that may activate can fail to allocate: the others leave
  // the failure counters alone, and a sync after them need not read them.
  rec.may_allocate = std::any_of(rec.tasks.begin(), rec.tasks.end(),
                                 [](const ir::TaskInfo& t) { return !t.modifies.empty(); });
  rec.compiled = backend->compile(*kernel, forest);
  rec.ir = std::move(kernel);
  rec.stages = std::move(stages);
  ++rec.compile_count;
}

void ProgramImpl::launch(KernelRecord& rec, const std::vector<ArgValue>& values) {
  if (values.size() != rec.args.size()) {
    std::string sig;
    for (size_t n = 0; n < rec.args.size(); ++n)
      sig += (n ? ", " : "") + rec.args[n].name + ": " + std::string(type_name(rec.args[n].type));
    throw Error("kernel '" + rec.name + "' takes " + std::to_string(rec.args.size()) +
                " argument(s) (" + sig + ") but was called with " + std::to_string(values.size()));
  }
  compile(rec);
  std::vector<uint64_t> bits;
  for (size_t n = 0; n < values.size(); ++n)
    bits.push_back(ir::eval_cast(values[n].type, compute_type(rec.args[n].type), values[n].bits));
  // The scheduler decides on the host, before anything is queued, which
  // list generations this launch can skip (nothing it reads is on a device).
  std::vector<bool> run(rec.tasks.size());
  for (size_t i = 0; i < run.size(); ++i) run[i] = schedule_task(rec, i);
  if (!rec.internal) ++launches;
  backend->launch(*rec.compiled, bits, run);
  pools_dirty = pools_dirty || rec.may_allocate;
  if (backend->synchronous()) check_pools();
}

bool ProgramImpl::schedule_task(const KernelRecord& rec, size_t index) {
  const ir::TaskInfo& t = rec.tasks.at(index);
  ListSchedule& s = schedule;
  s.grow(static_cast<size_t>(forest.num_snodes()));
  for (int n : t.modifies) s.modified[static_cast<size_t>(n)] = ++s.epoch;
  auto u = static_cast<size_t>(t.snode);
  switch (t.kind) {
    case ir::TaskKind::clear_list: {
      // A list is up to date when it was generated after the last change of
      // every SNode on its path.
      bool fresh = s.generated[u] > 0;
      for (int n = t.snode; n >= 0 && fresh; n = forest.snode(n).parent)
        if (s.modified[static_cast<size_t>(n)] >= s.generated[u]) fresh = false;
      s.skip[u] = fresh;
      return !fresh;
    }
    case ir::TaskKind::listgen:
      if (s.skip[u]) return false;
      s.generated[u] = ++s.epoch;
      ++s.runs[u];
      return true;
    default:
      return true;
  }
}

void ProgramImpl::check_pools() {
  if (!pools_dirty) return;
  pools_dirty = false;
  std::string problems;
  for (int t = 0; t < forest.num_trees(); ++t) {
    const ir::TreeDecl& tree = forest.tree(t);
    if (!tree.laid_out || tree.root < 0 || tree.pools.empty()) continue;
    // The pools' states lie side by side in the tree header, in pool order:
    // one read (one round trip to a device) for all of them.
    const int64_t first = forest.snode(tree.pools.front()).state_offset;
    const int64_t words = static_cast<int64_t>(tree.pools.size()) * ir::kPoolStateWords;
    std::vector<uint32_t> states(static_cast<size_t>(words));
    backend->read_words(t, first, words, states.data());
    for (int p : tree.pools) {
      const ir::SNodeDecl& s = forest.snode(p);
      const uint32_t* state = states.data() + (s.state_offset - first);
      uint32_t alloc = state[ir::kAllocFailures], append = state[ir::kAppendFailures];
      if (alloc == 0 && append == 0) continue;
      if (alloc != 0) {
        problems += (problems.empty() ? "" : "; ") + std::string("SNode '") + s.name() + "' ran out of pool memory (" +
                    std::to_string(alloc) + " allocation(s) failed, capacity " + std::to_string(s.capacity) +
                    (s.type == ir::SNodeType::dynamic ? " chunks" : " cells") +
                    "): raise it with SNode::capacity(...) or Config::device_memory";
      }
      if (append != 0) {
        problems += (problems.empty() ? "" : "; ") + std::string("SNode '") + s.name() + "': " +
                    std::to_string(append) + " append(s) past the maximum length " +
                    std::to_string(s.num_cells) + " were dropped";
      }
      allocation_failures += alloc + append;
      static_assert(ir::kAppendFailures == ir::kAllocFailures + 1);
      const uint32_t zero[2] = {0, 0};
      backend->write_words(t, s.state_offset + ir::kAllocFailures, 2, zero);
    }
  }
  if (!problems.empty())
    throw Error(problems + " (everything stored before is intact)");
}

KernelRecord& ProgramImpl::add_kernel(std::string name, std::vector<ArgSpec> args,
                                      std::function<void(Args)> body, bool internal) {
  auto rec = std::make_unique<KernelRecord>();
  rec->name = std::move(name);
  rec->args = std::move(args);
  rec->body = std::move(body);
  rec->internal = internal;
  kernels.push_back(std::move(rec));
  return *kernels.back();
}

void ProgramImpl::host_write(int field, const int64_t* index, uint64_t bits) {
  materialize_field(field, "the host");
  const ir::FieldDecl& d = fields.get(field);
  int place = forest.place_of(field);
  if (!forest.is_sparse_path(forest.snode(place).parent)) {
    int tree = tree_of_field(field);
    int64_t a = forest.find_element(field, index, [](int64_t) { return 0u; });  // dense: reads nothing
    std::vector<uint32_t> words(2, 0u);
    ir::store_element(words, 0, d.dtype, bits);
    backend->write_words(tree, a, storage_words(d.dtype), words.data());
    return;
  }
  // Sparse: a write activates, which only the runtime (a kernel) may do.
  if (writer_kernels.size() <= static_cast<size_t>(field)) writer_kernels.resize(static_cast<size_t>(field) + 1, -1);
  int& id = writer_kernels[static_cast<size_t>(field)];
  if (id < 0) {
    std::vector<ArgSpec> args;
    for (int a = 0; a < d.ndim(); ++a) args.push_back(arg(DataType::i32, "i" + std::to_string(a)));
    args.push_back(arg(compute_type(d.dtype), "value"));
    Field f(this, {field}, 1, 1);
    int n = d.ndim();
    add_kernel("__write_" + d.name, std::move(args), [f, n](Args a) {
      Indices I;
      for (int k = 0; k < n; ++k) I.push_back(a[k]);
      f(I) = a[n];
    }, true);
    id = static_cast<int>(kernels.size()) - 1;
  }
  std::vector<ArgValue> values;
  for (int a = 0; a < d.ndim(); ++a) values.emplace_back(static_cast<int32_t>(index[a]));
  ArgValue v(uint64_t{0});
  v.type = compute_type(d.dtype);
  v.bits = bits;
  values.push_back(v);
  launch(*kernels[static_cast<size_t>(id)], values);
}

void ProgramImpl::deactivate_all(int snode) {
  const ir::SNodeDecl& s = forest.snode(snode);
  if (!s.is_sparse())
    throw Error("deactivate_all on SNode '" + s.name() + "': it is " + ir::snode_type_name(s.type) +
                "; only pointer, bitmasked and dynamic SNodes can be deactivated");
  if (clear_kernels.size() <= static_cast<size_t>(snode)) clear_kernels.resize(static_cast<size_t>(snode) + 1, -1);
  int& id = clear_kernels[static_cast<size_t>(snode)];
  if (id < 0) {
    SNode& handle = snode_handles[static_cast<size_t>(snode)];
    bool dynamic = s.type == ir::SNodeType::dynamic;
    SNode& over = dynamic ? *handle.parent() : handle;
    add_kernel("__deactivate_all_" + s.name(), {}, [&handle, &over](Args) {
      for_each(over, [&](Indices I) { deactivate(handle, I); });
    }, true);
    id = static_cast<int>(kernels.size()) - 1;
  }
  materialize_tree(s.tree);
  launch(*kernels[static_cast<size_t>(id)], {});
}

}  // namespace detail

// ---- Program::kernel, Kernel, Args ------------------------------------------

Kernel Program::kernel(std::string_view name, std::function<void()> body) {
  return kernel(name, {}, [body = std::move(body)](Args) { body(); });
}

Kernel Program::kernel(std::string_view name, std::vector<ArgSpec> args, std::function<void(Args)> body) {
  if (name.empty()) throw Error("a kernel needs a name");
  if (name.substr(0, 2) == "__") throw Error("kernel names starting with '__' are Grove's own; choose another for '" + std::string(name) + "'");
  for (const auto& k : impl_->kernels)
    if (k->name == name) throw Error("a kernel named '" + std::string(name) + "' already exists");
  if (!body) throw Error("kernel '" + std::string(name) + "' has no body");
  for (size_t n = 0; n < args.size(); ++n) {
    if (args[n].type == DataType::unknown || args[n].type == DataType::u1)
      throw Error("kernel '" + std::string(name) + "': argument " + std::to_string(n) +
                  " needs a numeric type (i8..u64, f16, f32, f64)");
    if (args[n].name.empty()) args[n].name = "arg" + std::to_string(n);
  }
  impl_->add_kernel(std::string(name), std::move(args), std::move(body), false);
  return Kernel(impl_.get(), static_cast<int>(impl_->kernels.size()) - 1);
}

static detail::KernelRecord& record(detail::ProgramImpl* p, int id) {
  if (p == nullptr) throw Error("this Kernel is empty; get one from Program::kernel(...)");
  return *p->kernels[static_cast<size_t>(id)];
}

void Kernel::launch(const std::vector<ArgValue>& args) const {
  program_->launch(record(program_, id_), args);
}

const std::string& Kernel::name() const { return record(program_, id_).name; }

std::string Kernel::ir(std::string_view stage) const {
  auto& rec = record(program_, id_);
  program_->compile(rec);
  if (stage == "final") return rec.stages.back().second;
  std::string known;
  for (const auto& [name, text] : rec.stages) {
    if (name == stage) return text;
    known += (known.empty() ? "" : ", ") + name;
  }
  throw Error("kernel '" + rec.name + "' has no IR stage '" + std::string(stage) + "'; stages: " +
              known + ", final");
}

int Kernel::compile_count() const { return record(program_, id_).compile_count; }

Expr Args::operator[](int index) const {
  auto& ctx = detail::current();
  if (index < 0 || index >= count_)
    throw Error("kernel '" + ctx.record->name + "' has " + std::to_string(count_) +
                " argument(s); argument " + std::to_string(index) + " does not exist");
  return Expr(ctx.builder.arg(ctx.record->args[static_cast<size_t>(index)].type, index));
}

Expr Args::operator[](std::string_view name) const {
  auto& ctx = detail::current();
  for (size_t n = 0; n < ctx.record->args.size(); ++n)
    if (ctx.record->args[n].name == name) return (*this)[static_cast<int>(n)];
  throw Error("kernel '" + ctx.record->name + "' has no argument named '" + std::string(name) + "'");
}

}  // namespace grove
