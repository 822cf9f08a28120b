// src/program/kernel.cpp — recording kernels from the DSL, compiling them
// through the pass pipeline, and launching them on the backend.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "ir/eval.h"
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
  KernelContext ctx{this, &rec, kernel.get(), ir::Builder(kernel->body()), {}, -1};
  {
    ContextGuard guard(&ctx);
    rec.body(Args(static_cast<int>(rec.args.size())));
  }
  std::set<int> used;
  ir::walk(kernel->body(), [&](ir::Stmt* s) {
    if (s->field() >= 0) used.insert(s->field());
  });
  for (int f : used) materialize_field(f, "kernel '" + rec.name + "'");

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
  ir::run_pipeline(*kernel, options);
  rec.interpreter = std::make_unique<ir::Interpreter>(*kernel);
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
  ir::InterpreterEnv env;
  env.snodes = &forest;
  env.trees = &tree_buffers;
  env.debug = config.debug;
  env.print = print_sink ? print_sink : [](std::string_view s) { std::cout << s << std::flush; };
  rec.interpreter->run(bits, env);
  ++launches;
}

}  // namespace detail

// ---- Program::kernel, Kernel, Args ------------------------------------------

Kernel Program::kernel(std::string_view name, std::function<void()> body) {
  return kernel(name, {}, [body = std::move(body)](Args) { body(); });
}

Kernel Program::kernel(std::string_view name, std::vector<ArgSpec> args, std::function<void(Args)> body) {
  if (name.empty()) throw Error("a kernel needs a name");
  for (const auto& k : impl_->kernels)
    if (k->name == name) throw Error("a kernel named '" + std::string(name) + "' already exists");
  if (!body) throw Error("kernel '" + std::string(name) + "' has no body");
  for (size_t n = 0; n < args.size(); ++n) {
    if (args[n].type == DataType::unknown || args[n].type == DataType::u1)
      throw Error("kernel '" + std::string(name) + "': argument " + std::to_string(n) +
                  " needs a numeric type (i8..u64, f16, f32, f64)");
    if (args[n].name.empty()) args[n].name = "arg" + std::to_string(n);
  }
  auto rec = std::make_unique<detail::KernelRecord>();
  rec->name = std::string(name);
  rec->args = std::move(args);
  rec->body = std::move(body);
  impl_->kernels.push_back(std::move(rec));
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
