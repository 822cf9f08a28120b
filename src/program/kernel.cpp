// src/program/kernel.cpp — recording kernels from the DSL, compiling them
// through the pass pipeline, and launching them on the backend.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <set>

#include "ir/eval.h"
#include "ir/interpreter.h"
#include "ir/passes/pipeline.h"
#include "ir/plan_builder.h"
#include "ir/printer.h"
#include "program/program_impl.h"
#include "program/test_hooks.h"
#include "runtime/core/assert.h"

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

}  // namespace

std::string dump_dir() {
  const char* dir = std::getenv("GROVE_DUMP_DIR");
  if (dir == nullptr || *dir == '\0') return "";
  std::filesystem::create_directories(dir);
  return dir;
}

std::string dump_name(std::string_view kernel) {
  std::string out(kernel);
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
  return out;
}

rt::KernelPlan Backend::generate(const ir::Kernel&, std::string_view, const ir::SNodeForest&, rt::KernelPlan plan) {
  throw Error("kernel '" + plan.name + "': Arch::" + std::string(arch_name(arch())) +
              " compiles only for the device it runs on, so its code cannot be made for a module here");
}

std::function<rt::KernelPlan()> Backend::full_tier(const ir::Kernel&, std::string_view, rt::KernelPlan plan) {
  throw InternalError("kernel '" + plan.name + "': Arch::" + std::string(arch_name(arch())) +
                      " has one tier of code; no kernel of it runs quick code");
}

KernelContext* current_or_null() { return g_current; }

KernelContext& current() {
  if (g_current == nullptr)
    throw Error("a Grove kernel expression was used outside a kernel body; build expressions "
                "only inside the function given to Program::kernel");
  return *g_current;
}

void kernel_error(const std::string& message) { throw Error("kernel '" + current().record->name + "': " + message); }

// Kernels are recorded, compiled and launched only from the host: a kernel
// body that launches (or compiles) a kernel would run it on the host in the
// middle of recording, and one that launches itself would recurse forever.
static void refuse_inside_kernel_body(const KernelRecord& rec, const char* what) {
  const KernelContext* ctx = current_or_null();
  if (ctx == nullptr) return;
  if (ctx->record == &rec)
    throw Error("kernel '" + rec.name + "' " + what + " itself inside its own body; a kernel body only "
                "records the kernel: launch it from the host, and loop inside it with for_range or loop_");
  throw Error("kernel '" + ctx->record->name + "' " + what + " kernel '" + rec.name +
              "' inside its body; kernels cannot launch kernels: launch '" + rec.name +
              "' from the host, before or after '" + ctx->record->name + "'");
}

ProgramImpl::Lowered ProgramImpl::lower(KernelRecord& rec, const Backend& target, int64_t max_buffer_words,
                                        bool report) {
  return run_passes(rec, record_body(rec, target), target, max_buffer_words, report, false);
}

std::unique_ptr<ir::Kernel> ProgramImpl::record_body(KernelRecord& rec, const Backend& target) {
  refuse_inside_kernel_body(rec, "compiles");
  // Numbers become the IR's arguments, trees its tree parameters.
  std::vector<ir::KernelArg> args;
  std::vector<ir::TreeParam> tree_params;
  for (const ArgSpec& a : rec.args) {
    if (a.tree_type >= 0) tree_params.push_back({a.name, a.tree_type});
    else args.push_back({a.name, a.type});
  }
  auto kernel = std::make_unique<ir::Kernel>(rec.name, std::move(args), &fields_);
  kernel->tree_params = std::move(tree_params);
  kernel->forest = &forest_;
  KernelContext ctx{this, &rec, kernel.get(), ir::Builder(kernel->body()), &target, {}, -1};
  {
    ContextGuard guard(&ctx);
    rec.body(Args(static_cast<int>(rec.args.size())));
  }
  std::set<int> used, used_trees;
  ir::walk(kernel->body(), [&](ir::Stmt* s) {
    if (s->field() >= 0) used.insert(s->field());
    if (s->kind() == ir::StmtKind::SNodeOp || (s->kind() == ir::StmtKind::StructFor && s->field() < 0))
      used_trees.insert(forest_.snode(s->snode()).tree);
  });
  for (int f : used) materialize_field(f, "kernel '" + rec.name + "'");
  for (int t : used_trees) materialize_tree(t);
  return kernel;
}

ProgramImpl::Lowered ProgramImpl::run_passes(KernelRecord& rec, std::unique_ptr<ir::Kernel> kernel,
                                             const Backend& target, int64_t max_buffer_words, bool report,
                                             bool all_stages) {
  Lowered out;
  const std::string dump = report ? dump_dir() : "";
  const bool print_ir = report && config.print_ir;
  ir::PipelineOptions options;
  options.verify = config.verify_ir;
  // Each stage's text only where it is asked for (all_stages, a dump,
  // print_ir), the last one's after the pipeline: printing every stage was
  // a third of the front end's time for sparse_life's count (0.4 of 1.2 ms).
  options.on_stage = [&](std::string_view stage, const ir::Kernel& k) {
    std::string text = all_stages || print_ir || !dump.empty() ? ir::print_module({&k}) : std::string();
    if (print_ir) std::cout << "[grove] kernel '" << rec.name << "' after " << stage << ":\n" << text << std::flush;
    if (!dump.empty()) {
      char num[8];
      std::snprintf(num, sizeof num, "%02zu", out.stages.size());
      std::filesystem::path p = std::filesystem::path(dump) / (dump_name(rec.name) + "." + num + "_" + std::string(stage) + ".ir");
      std::ofstream(p) << text;
    }
    out.stages.emplace_back(std::string(stage), std::move(text));
  };
  ir::OffloadResult offloaded;
  options.offload.scratch_tree = scratch->tree();
  options.offload.scratch_base = 0;
  options.offload.scratch_words = std::min(max_buffer_words, ir::kMaxTreeWords);
  options.offload_result = &offloaded;
  options.lower.debug = config.debug;
  options.lower.cells_per_iteration = options.offload.cells_per_iteration = target.cells_per_iteration();
  options.lower.least_iterations = options.offload.least_iterations = target.least_list_iterations();
  options.lower.group_activations = target.groups_activations();
  options.lower.near_reads = target.near_reads();
  options.lower.masked_near_reads = target.masks_near_reads();
  options.lower.subgroup_activations = target.subgroup_activations();
  // GROVE_NEAR_READS=0 or 1 overrides the target's choice (to measure it
  // on a device, or to test the lowering on every backend).
  if (const char* env = std::getenv("GROVE_NEAR_READS"); env != nullptr && (env[0] == '0' || env[0] == '1'))
    options.lower.near_reads =
        env[0] == '1' ? ir::LowerAccessOptions::NearReads::all : ir::LowerAccessOptions::NearReads::off;
  options.target = target.target_ops();
  options.on_lowered = [&](const ir::Kernel& k) {
    if (report) observe_lowered_kernel(k, config.debug);
    ir::PlanOptions plan_options;
    plan_options.scratch_tree = scratch->tree();
    plan_options.scratch_words = offloaded.scratch_words_used;
    out.plan = ir::plan_kernel(k, offloaded.tasks, plan_options);
  };
  ir::run_pipeline(*kernel, options);
  // (The last pass's stage: nothing changes the kernel after it.)
  if (out.stages.back().second.empty()) out.stages.back().second = ir::print_module({kernel.get()});
  out.scratch_words = offloaded.scratch_words_used;
  out.kernel = std::move(kernel);
  return out;
}

void ProgramImpl::compile(KernelRecord& rec) {
  if (rec.ir) return;
  std::unique_ptr<ir::Kernel> recorded = record_body(rec, *backend);
  std::unique_ptr<ir::Kernel> frontend = ir::clone_kernel(*recorded);  // for Kernel::ir of a stage
  Lowered l = run_passes(rec, std::move(recorded), *backend, context->device().max_buffer_bytes() / 4, true, false);
  if (backend->tiers()) {
    auto full_plan = std::make_unique<rt::KernelPlan>(l.plan);  // for the full tier's compile
    bool quick = false;
    rec.compiled = backend->compile_first(*l.kernel, l.stages.back().second, forest_, std::move(l.plan), *frontend,
                                          quick, rec.tier_up_seconds);
    if (quick) rec.full_plan = std::move(full_plan);
  } else {
    rec.compiled = backend->compile(*l.kernel, l.stages.back().second, forest_, std::move(l.plan));
  }
  if (const std::string dump = dump_dir(); !dump.empty())
    std::ofstream(std::filesystem::path(dump) / (dump_name(rec.name) + ".plan.json")) << rt::to_json(rec.compiled->plan);
  scratch->ensure(l.scratch_words);
  rec.ir = std::move(l.kernel);
  rec.stages = std::move(l.stages);
  rec.frontend = std::move(frontend);
  ++rec.compile_count;
}

// (Not counted in compile_count: the kernel's code is the same kernel's,
// made faster.)
void ProgramImpl::tier_up(KernelRecord& rec) {
  compile(rec);
  if (!rec.quick()) return;
  if (!rec.tier_up_job) start_tier_up(rec);
  background.wait(*rec.tier_up_job);
  finish_tier_up(rec);
}

void ProgramImpl::start_tier_up(KernelRecord& rec) {
  // (Asked once: should the compile raise, the kernel goes on with its
  // quick code, and no later launch asks again.)
  rec.tier_up_seconds = std::numeric_limits<double>::infinity();
  rec.tier_up_job = background.submit(backend->full_tier(*rec.ir, rec.stages.back().second, *rec.full_plan));
}

void ProgramImpl::finish_tier_up(KernelRecord& rec) {
  const std::shared_ptr<BackgroundCompiles::Job> job = std::move(rec.tier_up_job);
  if (job->failed) {
    try {
      std::rethrow_exception(job->failed);
    } catch (const std::exception& e) {
      throw Error("kernel '" + rec.name + "': its full tier's code (Config::cpu_tiers) could not be made, so it "
                  "goes on running its quick code: " + e.what());
    }
  }
  rec.compiled = context->device().load(std::move(*job->plan));
  rec.full_plan.reset();
}

rt::KernelPlan ProgramImpl::plan_for(KernelRecord& rec, Backend& target) {
  // Recorded again: the pipeline lowers for `target`'s devices, which the
  // Program's own compile did not (cells per iteration, buffer sizes).
  Lowered l = lower(rec, target, ir::kMaxTreeWords, false);
  return target.generate(*l.kernel, l.stages.back().second, forest_, std::move(l.plan));
}

namespace {

std::string describe(DataType t, uint64_t bits) { return rt::describe_value(t, bits); }

}  // namespace

uint64_t ProgramImpl::convert_argument(const KernelRecord& rec, size_t n, const ArgValue& value) const {
  const ArgSpec& spec = rec.args[n];
  if (value.tree != nullptr)
    throw Error("kernel '" + rec.name + "': argument " + std::to_string(n) + " ('" + spec.name + "', " +
                std::string(type_name(spec.type)) + ") was given a tree; pass a number");
  const std::string problem = rt::argument_problem(value.type, value.bits, spec.type);
  if (!problem.empty())
    throw Error("kernel '" + rec.name + "': argument " + std::to_string(n) + " ('" + spec.name + "', " +
                std::string(type_name(spec.type)) + ") was given " + problem + "; convert it on the host first");
  return rt::convert_argument(value.type, value.bits, spec.type);
}

std::string ProgramImpl::signature(const KernelRecord& rec) const {
  std::string sig;
  for (size_t n = 0; n < rec.args.size(); ++n) {
    const ArgSpec& a = rec.args[n];
    sig += (n ? ", " : "") + a.name + ": " +
           (a.tree_type >= 0 ? "tree of type '" + trees.type(a.tree_type).name + "'" : std::string(type_name(a.type)));
  }
  return sig;
}

int ProgramImpl::tree_argument(const KernelRecord& rec, size_t n, const ArgValue& value) const {
  const ArgSpec& spec = rec.args[n];
  const std::string type = trees.type(spec.tree_type).name;
  const std::string what = "kernel '" + rec.name + "': argument " + std::to_string(n) + " ('" + spec.name +
                           "', a tree of type '" + type + "')";
  if (value.tree == nullptr)
    throw Error(what + " was given " + describe(value.type, value.bits) + "; pass a Tree made by "
                "Program::instantiate of type '" + type + "'");
  const detail::ProgramImpl* owner = nullptr;
  try {
    owner = value.tree->program();  // raises for an empty, destroyed or dead handle
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  if (owner != this)
    throw Error(what + " was given tree '" + owner->context->name_of(value.tree->instance()) + "' of " +
                owner->label() + "; this is " + label() + ": pass a tree of this Program");
  const int given = context->instance(value.tree->instance()).type;
  if (given != spec.tree_type)
    throw Error(what + " was given tree '" + context->name_of(value.tree->instance()) + "' of type '" +
                trees.type(given).name + "'; pass a tree of type '" + type + "'");
  return value.tree->instance();
}

namespace {
constexpr int kTimedLaunchEvery = 16;
}  // namespace

void ProgramImpl::launch(KernelRecord& rec, const std::vector<ArgValue>& values) {
  refuse_inside_kernel_body(rec, "launches");
  if (values.size() != rec.args.size())
    throw Error("kernel '" + rec.name + "' takes " + std::to_string(rec.args.size()) + " argument(s) (" +
                signature(rec) + ") but was called with " + std::to_string(values.size()));
  std::vector<uint64_t> bits;
  std::vector<int> passed;  // by tree parameter: the instance passed
  for (size_t n = 0; n < values.size(); ++n) {
    if (rec.args[n].tree_type >= 0) passed.push_back(tree_argument(rec, n, values[n]));
    else bits.push_back(convert_argument(rec, n, values[n]));
  }
  compile(rec);
  // Each slot of the plan: the scratch buffer, a tree's own instance, or
  // the instance passed for a tree parameter.
  const rt::KernelPlan& plan = rec.compiled->plan;
  std::vector<int> slots;
  for (const rt::TreeSlotPlan& slot : plan.slots) {
    if (slot.kind == rt::TreeSlotPlan::Kind::scratch) slots.push_back(scratch->instance());
    else if (slot.param >= 0) slots.push_back(passed.at(static_cast<size_t>(slot.param)));
    else slots.push_back(trees.own_instance(slot.tree_type));
  }
  if (!rec.internal) launches.user_launch();
  std::optional<TraceScope> trace;
  if (!rec.internal) trace.emplace(*this, HostOp::Kind::launch);
  if (HostOp* op = trace ? trace->op() : nullptr) {
    op->kernel = kernels.id_of(rec);
    op->bits = bits;
    op->trees = passed;
  }
  if (rec.quick() && !rec.tier_up_job && rec.quick_launches++ % kTimedLaunchEvery == 1) {
    // One launch of quick code in kTimedLaunchEvery is timed, and stands for
    // them all: two reads of the clock cost about what a launch of a small
    // kernel does (80 ns). Not the first, which pays for what is new (the
    // code's pages, a list generation). The CPU device (the backend with
    // tiers) runs a launch before it returns. Past the threshold the full
    // tier is compiled in the background, and a launch after it is done
    // takes its code: no launch waits for the compile.
    const auto start = std::chrono::steady_clock::now();
    context->launch(*rec.compiled, bits, slots);
    rec.quick_seconds +=
        kTimedLaunchEvery * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rec.quick_seconds >= rec.tier_up_seconds) start_tier_up(rec);
  } else {
    context->launch(*rec.compiled, bits, slots);
  }
  if (rec.tier_up_job && rec.tier_up_job->done.load(std::memory_order_acquire)) finish_tier_up(rec);
  if (config.profile) launches.timed();
}

KernelRecord& ProgramImpl::add_kernel(std::string name, std::vector<ArgSpec> args,
                                      std::function<void(Args)> body, bool internal) {
  if (args.size() > rt::kMaxKernelArgs)
    throw Error("kernel '" + name + "' has " + std::to_string(args.size()) + " arguments; a kernel takes at most " +
                std::to_string(rt::kMaxKernelArgs) + ": pass large data in a field");
  auto rec = std::make_unique<KernelRecord>();
  rec->name = std::move(name);
  rec->args = std::move(args);
  int scalars = 0, tree_params = 0;
  for (ArgSpec& a : rec->args) {
    if (a.tree_type < 0) a.type = resolve(a.type);
    rec->scalar_index.push_back(a.tree_type >= 0 ? -1 : scalars++);
    rec->tree_index.push_back(a.tree_type >= 0 ? tree_params++ : -1);
  }
  rec->body = std::move(body);
  rec->internal = internal;
  return kernels.add(std::move(rec));
}

KernelRecord& KernelTable::add(std::unique_ptr<KernelRecord> rec) {
  names_.insert(rec->name);
  records_.push_back(std::move(rec));
  return *records_.back();
}

KernelRecord* KernelTable::named(std::string_view name) const {
  for (const auto& k : records_)
    if (k->name == name) return k.get();
  return nullptr;
}

int KernelTable::id_of(const KernelRecord& rec) const {
  for (size_t k = 0; k < records_.size(); ++k)
    if (records_[k].get() == &rec) return static_cast<int>(k);
  return -1;
}

KernelRecord& KernelTable::own(Own kind, int key, const std::function<void()>& make) {
  std::vector<int>& made = own_[static_cast<size_t>(kind)];
  if (made.size() <= static_cast<size_t>(key)) made.resize(static_cast<size_t>(key) + 1, -1);
  if (made[static_cast<size_t>(key)] < 0) {
    make();
    made[static_cast<size_t>(key)] = size() - 1;
  }
  return at(made[static_cast<size_t>(key)]);
}

KernelRecord& ProgramImpl::writer_kernel(int field) {
  return kernels.own(KernelTable::Own::writer, field, [&] {
    const ir::FieldDecl& d = fields_.get(field);
    const int tree = tree_of_field(field);
    // For a field of a tree type, one kernel serves every instance: it takes
    // the tree as its last argument.
    const bool typed = is_tree_type(tree);
    std::vector<ArgSpec> args;
    for (int a = 0; a < d.ndim(); ++a) args.push_back(arg(DataType::i32, "i" + std::to_string(a)));
    args.push_back(arg(compute_type(d.dtype), "value"));
    if (typed) args.push_back({DataType::unknown, "tree", tree, weak_from_this()});
    Field f(weak_from_this(), {field}, 1, 1, -1, typed ? 0 : -1);
    int n = d.ndim();
    add_kernel("__write_" + d.name, std::move(args), [f, n](Args a) {
      Indices I;
      for (int k = 0; k < n; ++k) I.push_back(a[k]);
      f(I) = a[n];
    }, true);
  });
}

KernelRecord& ProgramImpl::filler_kernel(int field) {
  return kernels.own(KernelTable::Own::filler, field, [&] {
    const ir::FieldDecl& d = fields_.get(field);
    const int tree = tree_of_field(field);
    const bool typed = is_tree_type(tree);
    std::vector<ArgSpec> args{arg(compute_type(d.dtype), "value")};
    if (typed) args.push_back({DataType::unknown, "tree", tree, weak_from_this()});
    Field f(weak_from_this(), {field}, 1, 1, -1, typed ? 0 : -1);
    std::vector<int64_t> shape = d.shape, offset;
    int64_t total = 1;
    for (size_t a = 0; a < shape.size(); ++a) {
      total *= shape[a];
      offset.push_back(d.offset_of(static_cast<int>(a)));
    }
    // The deepest pointer above the field, and its index space. Writes of
    // every element from many invocations at once activate its cells in
    // whatever order the device runs them, the candidate entries of all but
    // the first writer of a cell left spare: a pool in that order, spread
    // over more entries than it holds, is what every later whole-field copy
    // and struct-for over it walks (lavapipe's sparse copies ran at half
    // the speed). So its cells are activated first, one invocation each, in
    // index order: the pool holds them in the order of the field's elements.
    int blocks = -1;
    for (int n = forest_.snode(forest_.place_of(field)).parent; n >= 0 && blocks < 0; n = forest_.snode(n).parent)
      if (forest_.snode(n).type == ir::SNodeType::pointer) blocks = n;
    std::vector<int64_t> cells_shape;
    int64_t cells = 0;
    if (blocks >= 0) {
      const ir::SNodeDecl& b = forest_.snode(blocks);
      cells = 1;
      for (int axis : b.axes()) {
        cells_shape.push_back(b.shape[static_cast<size_t>(axis)]);
        cells *= cells_shape.back();
      }
    }
    const SNode pointer(this, blocks);
    const int tree_param = typed ? 0 : -1;
    // Element n, row-major; 32-bit arithmetic where the count allows.
    const DataType index_type = total <= INT32_MAX ? DataType::i32 : DataType::i64;
    add_kernel("__fill_" + d.name, std::move(args),
               [f, shape, offset, total, index_type, pointer, cells_shape, cells, tree_param](Args a) {
      // Point n of `sides`, row-major, each axis moved by `from`'s (if any).
      auto point = [&](Expr n, const std::vector<int64_t>& sides, const std::vector<int64_t>* from) {
        Indices I(sides.size());
        for (size_t k = sides.size(); k-- > 0;) {
          const Expr extent = Expr::constant(index_type, sides[k]);
          Expr i = n % extent;
          if (from != nullptr) i = i + Expr::constant(index_type, (*from)[k]);
          I[k] = cast(DataType::i32, i);
          n = n / extent;
        }
        return I;
      };
      if (cells > 0)
        for_range(Expr::constant(index_type, 0), Expr::constant(index_type, cells),
                  [&](Expr n) { activate(SNodeRef(pointer, tree_param), point(n, cells_shape, nullptr)); });
      for_range(Expr::constant(index_type, 0), Expr::constant(index_type, total),
                [&](Expr n) { f(point(n, shape, &offset)) = a[0]; });
    }, true);
  });
}

void ProgramImpl::host_write(int field, int instance, const int64_t* index, uint64_t bits) {
  const ir::FieldDecl& d = fields_.get(field);
  TraceScope trace(*this, HostOp::Kind::write);
  if (HostOp* op = trace.op()) {
    op->fields = {field};
    op->instance = is_tree_type(tree_of_field(field)) ? instance : -1;
    op->index.assign(index, index + d.ndim());
    op->bits = {bits};
  }
  const int place = forest_.place_of(field);
  const int tree = forest_.snode(place).tree;
  if (!forest_.is_sparse_path(forest_.snode(place).parent)) {
    int64_t a = forest_.find_element(field, physical_index(field, index).data(),
                                    [](int64_t) { return 0u; });  // dense: reads nothing
    std::vector<uint32_t> words(2, 0u);
    ir::store_element(words, 0, d.dtype, bits);
    context->write_words(instance, a, storage_words(d.dtype), words.data());
    return;
  }
  // Sparse: a write activates, which only the runtime (a kernel) may do;
  // to a cell active already, on a device whose buffer is host memory, it
  // is a store (a loop writing elements one by one launches nothing).
  if (context->store_if_active(instance, forest_.layout(tree), field, physical_index(field, index).data(), d.dtype,
                               bits))
    return;
  const bool typed = is_tree_type(tree);
  KernelRecord& writer = writer_kernel(field);
  std::vector<ArgValue> values;
  for (int a = 0; a < d.ndim(); ++a) values.emplace_back(static_cast<int32_t>(index[a]));
  ArgValue v(uint64_t{0});
  v.type = compute_type(d.dtype);
  v.bits = bits;
  values.push_back(v);
  const Tree handle = tree_handle(tree, instance);
  if (typed) values.emplace_back(handle);
  launch(writer, values);
}

std::vector<int> ProgramImpl::nearest_sparse(int snode) const {
  std::vector<int> nearest;
  auto find = [&](auto&& self, int n) -> void {
    for (int c : forest_.snode(n).children) {
      if (forest_.snode(c).is_sparse()) nearest.push_back(c);
      else self(self, c);
    }
  };
  find(find, snode);
  return nearest;
}

KernelRecord& ProgramImpl::clear_kernel(int snode) {
  // One kernel per SNode; for a tree type it takes the instance.
  return kernels.own(KernelTable::Own::clear, snode, [&] {
    const ir::SNodeDecl& s = forest_.snode(snode);
    const bool typed = is_tree_type(s.tree);
    const SNodeRef handle(snodes.at(snode), typed ? 0 : -1);
    const bool dynamic = s.type == ir::SNodeType::dynamic;
    const bool under_root = forest_.snode(s.parent).type == ir::SNodeType::root;
    const SNodeRef over = dynamic ? SNodeRef(snodes.at(s.parent), handle.tree_param()) : handle;
    std::vector<ArgSpec> args;
    if (typed) args.push_back({DataType::unknown, "tree", s.tree, weak_from_this()});
    add_kernel("__deactivate_all_" + s.name(), std::move(args), [handle, over, dynamic, under_root](Args) {
      if (dynamic && under_root) {
        deactivate(handle, {});  // the root's one list
      } else {
        for_each(over, [&](Indices I) { deactivate(handle, I); });
      }
    }, true);
  });
}

void ProgramImpl::deactivate_all(int snode, int instance) {
  const ir::SNodeDecl& s = forest_.snode(snode);
  if (s.type == ir::SNodeType::place)
    throw Error("deactivate_all on SNode '" + s.name() + "': it is a place (a field's leaf); deactivate its "
                "parent, or the tree with prog.root().deactivate_all()");
  const bool typed = is_tree_type(s.tree);
  if (typed && instance < 0)
    throw Error("deactivate_all on SNode '" + s.name() + "' of tree type '" + trees.type(s.tree).name +
                "', which holds no cells itself; deactivate an instance: tree.deactivate_all()");
  if (!s.is_sparse()) {
    // Root and dense nodes (Taichi's ti.root.deactivate_all()): every cell
    // of the sparse nodes nearest below; deactivating those frees what lies
    // below them. A tree without sparse nodes has nothing to deactivate.
    if (!typed) materialize_tree(s.tree);
    for (int n : nearest_sparse(snode)) deactivate_all(n, instance);
    return;
  }
  KernelRecord& clear = clear_kernel(snode);
  if (!typed) {
    materialize_tree(s.tree);
    launch(clear, {});
  } else {
    const Tree t = tree_handle(s.tree, instance);
    launch(clear, {ArgValue(t)});
  }
}

}  // namespace detail

// ---- Program::kernel, Kernel, Args ------------------------------------------

Kernel Program::kernel(std::string_view name, std::function<void()> body) {
  return kernel(name, {}, [body = std::move(body)](Args) { body(); });
}

Kernel Program::kernel(std::string_view name, std::vector<ArgSpec> args, std::function<void(Args)> body) {
  const auto lock = impl_->lock();
  if (name.empty()) throw Error("a kernel needs a name");
  if (name.substr(0, 2) == "__") throw Error("kernel names starting with '__' are Grove's own; choose another for '" + std::string(name) + "'");
  if (impl_->kernels.has(name))
    throw Error("a kernel named '" + std::string(name) + "' already exists");
  if (!body) throw Error("kernel '" + std::string(name) + "' has no body");
  for (size_t n = 0; n < args.size(); ++n) {
    if (args[n].tree_type >= 0) {
      // A tree argument: a type of this Program.
      std::shared_ptr<detail::ProgramImpl> owner = args[n].tree_program.lock();
      if (!owner)
        throw Error("kernel '" + std::string(name) + "': argument " + std::to_string(n) +
                    " is a tree of a type whose Program was destroyed");
      impl_->check_same_program(owner.get(), "tree type", [&] { return owner->tree_type(args[n].tree_type).name; },
                                "kernel '" + std::string(name) + "' (argument " + std::to_string(n) + ")");
      impl_->tree_type(args[n].tree_type);
    } else if (args[n].type == DataType::unknown || args[n].type == DataType::u1) {
      throw Error("kernel '" + std::string(name) + "': argument " + std::to_string(n) +
                  " needs a numeric type (i8..u64, f16, f32, f64)");
    }
    if (args[n].name.empty()) args[n].name = "arg" + std::to_string(n);
    for (size_t m = 0; m < n; ++m)
      if (args[m].name == args[n].name)
        throw Error("kernel '" + std::string(name) + "': arguments " + std::to_string(m) + " and " +
                    std::to_string(n) + " are both named '" + args[n].name + "'; give each argument its own name");
  }
  impl_->add_kernel(std::string(name), std::move(args), std::move(body), false);
  return Kernel(impl_, impl_->kernels.size() - 1);
}

// The program a Kernel handle refers to, held and locked for the whole
// call (its body or print sink may destroy the Program's last handle;
// another thread may use the Program), and the kernel's record.
struct Held {
  std::shared_ptr<detail::ProgramImpl> program;
  std::unique_lock<std::recursive_mutex> lock;
  detail::KernelRecord* rec;
};
static Held record(const std::weak_ptr<detail::ProgramImpl>& handle, int id) {
  if (id < 0) throw Error("this Kernel is empty; get one from Program::kernel(...)");
  std::shared_ptr<detail::ProgramImpl> p = handle.lock();
  if (!p)
    throw Error("this Kernel belongs to a Program that was destroyed; a Kernel can be used only while "
                "its Program exists");
  std::unique_lock<std::recursive_mutex> lock = p->lock();
  detail::KernelRecord* rec = &p->kernels.at(id);
  return {std::move(p), std::move(lock), rec};
}

void Kernel::launch(const std::vector<ArgValue>& args) const {
  Held h = record(program_, id_);
  h.program->launch(*h.rec, args);
}

const std::string& Kernel::name() const { return record(program_, id_).rec->name; }

std::string Kernel::ir(std::string_view stage) const {
  Held h = record(program_, id_);
  auto& rec = *h.rec;
  h.program->compile(rec);
  if (stage == "final") return rec.stages.back().second;
  auto found = std::find_if(rec.stages.begin(), rec.stages.end(), [&](const auto& s) { return s.first == stage; });
  if (found != rec.stages.end() && found->second.empty()) {
    // The compile kept the last stage's text only: the passes again, from
    // the recorded IR (the body does not run again), keeping every one.
    detail::ProgramImpl& p = *h.program;
    rec.stages = p.run_passes(rec, ir::clone_kernel(*rec.frontend), *p.backend,
                              p.context->device().max_buffer_bytes() / 4, false, true)
                     .stages;
    found = std::find_if(rec.stages.begin(), rec.stages.end(), [&](const auto& s) { return s.first == stage; });
  }
  if (found != rec.stages.end()) return found->second;
  std::string known;
  for (const auto& [name, text] : rec.stages) known += (known.empty() ? "" : ", ") + name;
  throw Error("kernel '" + rec.name + "' has no IR stage '" + std::string(stage) + "'; stages: " +
              known + ", final");
}

int Kernel::compile_count() const { return record(program_, id_).rec->compile_count; }

namespace {
// Declared argument `index` of the kernel being recorded; raises naming it
// when there is none.
const ArgSpec& declared_arg(detail::KernelContext& ctx, int index, int count) {
  if (index < 0 || index >= count)
    throw Error("kernel '" + ctx.record->name + "' has " + std::to_string(count) + " argument(s); argument " +
                std::to_string(index) + " does not exist");
  return ctx.record->args[static_cast<size_t>(index)];
}

int arg_named(detail::KernelContext& ctx, std::string_view name) {
  for (size_t n = 0; n < ctx.record->args.size(); ++n)
    if (ctx.record->args[n].name == name) return static_cast<int>(n);
  throw Error("kernel '" + ctx.record->name + "' has no argument named '" + std::string(name) + "'");
}
}  // namespace

Expr Args::operator[](int index) const {
  auto& ctx = detail::current();
  const ArgSpec& a = declared_arg(ctx, index, count_);
  if (a.tree_type >= 0)
    throw Error("kernel '" + ctx.record->name + "': argument " + std::to_string(index) + " ('" + a.name +
                "') is a tree; reach its fields with args.tree(\"" + a.name + "\").field(name)");
  return Expr(ctx.builder.arg(a.type, ctx.record->scalar_index[static_cast<size_t>(index)]));
}

Expr Args::operator[](std::string_view name) const {
  return (*this)[arg_named(detail::current(), name)];
}

TreeArg Args::tree(int index) const {
  auto& ctx = detail::current();
  const ArgSpec& a = declared_arg(ctx, index, count_);
  if (a.tree_type < 0)
    throw Error("kernel '" + ctx.record->name + "': argument " + std::to_string(index) + " ('" + a.name + "') is " +
                std::string(type_name(a.type)) + ", not a tree; read it with args[" + std::to_string(index) + "]");
  return TreeArg(ctx.program, a.tree_type, ctx.record->tree_index[static_cast<size_t>(index)]);
}

TreeArg Args::tree(std::string_view name) const { return tree(arg_named(detail::current(), name)); }

Field TreeArg::field(std::string_view name) const {
  const detail::TreeTypeRecord& t = program_->tree_type(type_);
  auto it = t.fields.find(name);
  if (it == t.fields.end()) {
    std::string known;
    for (const auto& [n, f] : t.fields) known += (known.empty() ? "'" : ", '") + n + "'";
    throw Error("tree type '" + t.name + "' has no field named '" + std::string(name) + "' (it has " + known + ")");
  }
  return Field(program_->weak_from_this(), it->second.ids, it->second.n, it->second.m, -1, param_);
}

SNodeRef TreeArg::operator[](const SNode& snode) const {
  const detail::TreeTypeRecord& t = program_->tree_type(type_);
  if (snode.program() != program_ || program_->forest().snode(snode.id()).tree != type_)
    throw Error("SNode '" + snode.name() + "' is not an SNode of tree type '" + t.name +
                "'; index a tree argument with the SNodes declared in its type");
  return SNodeRef(snode, param_);
}

}  // namespace grove
