// src/program/kernel.cpp — recording kernels from the DSL, compiling them
// through the pass pipeline, and launching them on the backend.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "ir/eval.h"
#include "ir/interpreter.h"
#include "ir/passes/pipeline.h"
#include "ir/plan_builder.h"
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

void ProgramImpl::compile(KernelRecord& rec) {
  if (rec.ir) return;
  refuse_inside_kernel_body(rec, "compiles");
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
  options.offload.scratch_base = 0;
  options.offload.scratch_words = std::min(context->device().max_buffer_bytes() / 4, ir::kMaxTreeWords);
  options.offload_result = &offloaded;
  options.lower.debug = config.debug;
  ir::run_pipeline(*kernel, options);
  ir::PlanOptions plan_options;
  plan_options.scratch_tree = scratch_tree;
  plan_options.scratch_words = offloaded.scratch_words_used;
  rec.compiled = backend->compile(*kernel, forest, ir::plan_kernel(*kernel, offloaded.tasks, plan_options));
  if (dump_dir != nullptr && *dump_dir != '\0')
    std::ofstream(std::filesystem::path(dump_dir) / (sanitize(rec.name) + ".plan.json")) << rt::to_json(rec.compiled->plan);
  ensure_scratch(offloaded.scratch_words_used);
  rec.ir = std::move(kernel);
  rec.stages = std::move(stages);
  ++rec.compile_count;
}

namespace {

// Exact range checks for host values passed as kernel arguments: a value
// converts when C++ defines the conversion and it keeps the value (floats
// to integers truncate toward zero, as in C++; wider floats round); NaN,
// infinity or a value outside the argument type's range raise an error.
std::string describe(DataType t, uint64_t bits) {
  return ir::format_value(t, bits) + " (" + std::string(type_name(t)) + ")";
}

bool integer_fits(__int128 v, DataType to) {
  if (to == DataType::u1) return v == 0 || v == 1;
  const int w = bit_width(to);
  if (is_signed(to)) return v >= -(static_cast<__int128>(1) << (w - 1)) && v < (static_cast<__int128>(1) << (w - 1));
  return v >= 0 && v < (static_cast<__int128>(1) << w);
}

double float_max(DataType t) {
  return t == DataType::f16 ? 65504.0 : t == DataType::f32 ? 3.4028234663852886e38 : 1.7976931348623157e308;
}

}  // namespace

uint64_t ProgramImpl::convert_argument(const KernelRecord& rec, size_t n, const ArgValue& value) const {
  const ArgSpec& spec = rec.args[n];
  const DataType from = value.type, to = spec.type;
  auto fail = [&](const std::string& why) {
    throw Error("kernel '" + rec.name + "': argument " + std::to_string(n) + " ('" + spec.name + "', " +
                std::string(type_name(to)) + ") was given " + describe(from, value.bits) + ", which " + why +
                "; convert it on the host first");
  };
  if (is_integral(from)) {
    const __int128 v = is_signed(from) ? static_cast<__int128>(ir::bits_to_int(from, value.bits))
                                       : static_cast<__int128>(static_cast<uint64_t>(ir::bits_to_int(from, value.bits)));
    if (is_integral(to) && !integer_fits(v, to)) fail("is out of the range of " + std::string(type_name(to)));
    if (is_float(to) && (v > static_cast<__int128>(float_max(to)) || v < -static_cast<__int128>(float_max(to))))
      fail("is out of the range of " + std::string(type_name(to)));
  } else {
    const double d = ir::bits_to_double(from, value.bits);
    if (is_integral(to)) {
      if (std::isnan(d) || std::isinf(d)) fail("has no " + std::string(type_name(to)) + " value");
      const double t = std::trunc(d);
      // Every integer type's bounds are powers of two, exact in a double.
      const double lo = is_signed(to) ? -std::ldexp(1.0, bit_width(to) - 1) : 0.0;
      const double hi = std::ldexp(1.0, is_signed(to) ? bit_width(to) - 1 : bit_width(to));
      if (!(t >= lo && t < hi)) fail("is out of the range of " + std::string(type_name(to)));
    } else if (std::isfinite(d) && std::fabs(d) > float_max(to)) {
      fail("is out of the range of " + std::string(type_name(to)));
    }
  }
  uint64_t bits = ir::eval_cast(from, to, value.bits);
  return to == compute_type(to) ? bits : ir::eval_cast(to, compute_type(to), bits);
}

void ProgramImpl::launch(KernelRecord& rec, const std::vector<ArgValue>& values) {
  refuse_inside_kernel_body(rec, "launches");
  if (values.size() != rec.args.size()) {
    std::string sig;
    for (size_t n = 0; n < rec.args.size(); ++n)
      sig += (n ? ", " : "") + rec.args[n].name + ": " + std::string(type_name(rec.args[n].type));
    throw Error("kernel '" + rec.name + "' takes " + std::to_string(rec.args.size()) +
                " argument(s) (" + sig + ") but was called with " + std::to_string(values.size()));
  }
  std::vector<uint64_t> bits;
  for (size_t n = 0; n < values.size(); ++n) bits.push_back(convert_argument(rec, n, values[n]));
  compile(rec);
  // Each slot of the plan: the scratch buffer, or a tree's own instance.
  const rt::KernelPlan& plan = rec.compiled->plan;
  std::vector<int> slots;
  for (const rt::TreeSlotPlan& slot : plan.slots)
    slots.push_back(slot.kind == rt::TreeSlotPlan::Kind::scratch ? scratch_instance
                                                                 : own_instance.at(static_cast<size_t>(slot.tree_type)));
  if (!rec.internal) ++launches;
  context->launch(*rec.compiled, bits, slots);
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
    const int instance = own_instance_of_field(field);
    int64_t a = forest.find_element(field, physical_index(field, index).data(),
                                    [](int64_t) { return 0u; });  // dense: reads nothing
    std::vector<uint32_t> words(2, 0u);
    ir::store_element(words, 0, d.dtype, bits);
    context->write_words(instance, a, storage_words(d.dtype), words.data());
    return;
  }
  // Sparse: a write activates, which only the runtime (a kernel) may do.
  if (writer_kernels.size() <= static_cast<size_t>(field)) writer_kernels.resize(static_cast<size_t>(field) + 1, -1);
  int& id = writer_kernels[static_cast<size_t>(field)];
  if (id < 0) {
    std::vector<ArgSpec> args;
    for (int a = 0; a < d.ndim(); ++a) args.push_back(arg(DataType::i32, "i" + std::to_string(a)));
    args.push_back(arg(compute_type(d.dtype), "value"));
    Field f(weak_from_this(), {field}, 1, 1);
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
  if (s.type == ir::SNodeType::place)
    throw Error("deactivate_all on SNode '" + s.name() + "': it is a place (a field's leaf); deactivate its "
                "parent, or the tree with prog.root().deactivate_all()");
  if (!s.is_sparse()) {
    // Root and dense nodes (Taichi's ti.root.deactivate_all()): every cell
    // of the sparse nodes nearest below; deactivating those frees what lies
    // below them. A tree without sparse nodes has nothing to deactivate.
    std::vector<int> nearest;
    auto find = [&](auto&& self, int n) -> void {
      for (int c : forest.snode(n).children) {
        if (forest.snode(c).is_sparse()) nearest.push_back(c);
        else self(self, c);
      }
    };
    find(find, snode);
    materialize_tree(s.tree);
    for (int n : nearest) deactivate_all(n);
    return;
  }
  if (clear_kernels.size() <= static_cast<size_t>(snode)) clear_kernels.resize(static_cast<size_t>(snode) + 1, -1);
  int& id = clear_kernels[static_cast<size_t>(snode)];
  if (id < 0) {
    SNode& handle = snode_handles[static_cast<size_t>(snode)];
    const bool dynamic = s.type == ir::SNodeType::dynamic;
    const bool under_root = forest.snode(s.parent).type == ir::SNodeType::root;
    SNode* over = dynamic ? handle.parent() : &handle;
    add_kernel("__deactivate_all_" + s.name(), {}, [&handle, over, dynamic, under_root](Args) {
      if (dynamic && under_root) {
        deactivate(handle, {});  // the root's one list
      } else {
        for_each(*over, [&](Indices I) { deactivate(handle, I); });
      }
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
    for (size_t m = 0; m < n; ++m)
      if (args[m].name == args[n].name)
        throw Error("kernel '" + std::string(name) + "': arguments " + std::to_string(m) + " and " +
                    std::to_string(n) + " are both named '" + args[n].name + "'; give each argument its own name");
  }
  impl_->add_kernel(std::string(name), std::move(args), std::move(body), false);
  return Kernel(impl_, static_cast<int>(impl_->kernels.size()) - 1);
}

// The program a Kernel handle refers to, and its record.
static std::pair<detail::ProgramImpl*, detail::KernelRecord*> record(
    const std::weak_ptr<detail::ProgramImpl>& handle, int id) {
  if (id < 0) throw Error("this Kernel is empty; get one from Program::kernel(...)");
  std::shared_ptr<detail::ProgramImpl> p = handle.lock();
  if (!p)
    throw Error("this Kernel belongs to a Program that was destroyed; a Kernel can be used only while "
                "its Program exists");
  return {p.get(), p->kernels[static_cast<size_t>(id)].get()};
}

void Kernel::launch(const std::vector<ArgValue>& args) const {
  auto [program, rec] = record(program_, id_);
  program->launch(*rec, args);
}

const std::string& Kernel::name() const { return record(program_, id_).second->name; }

std::string Kernel::ir(std::string_view stage) const {
  auto [program, r] = record(program_, id_);
  auto& rec = *r;
  program->compile(rec);
  if (stage == "final") return rec.stages.back().second;
  std::string known;
  for (const auto& [name, text] : rec.stages) {
    if (name == stage) return text;
    known += (known.empty() ? "" : ", ") + name;
  }
  throw Error("kernel '" + rec.name + "' has no IR stage '" + std::string(stage) + "'; stages: " +
              known + ", final");
}

int Kernel::compile_count() const { return record(program_, id_).second->compile_count; }

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
