// runtime/core/plan.cpp — kernel plans: launch-time counts, bytes, JSON.
#include "runtime/core/plan.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <sstream>

#include "grove/error.h"
#include "runtime/core/bytes.h"
#include "runtime/core/scalar.h"
#include "runtime/core/tree_layout.h"

namespace grove::rt {

const char* task_kind_name(TaskKind k) {
  switch (k) {
    case TaskKind::serial: return "serial";
    case TaskKind::range_for: return "range_for";
    case TaskKind::struct_for: return "struct_for";
    case TaskKind::listgen: return "listgen";
    case TaskKind::clear_list: return "clear_list";
    case TaskKind::gc: return "gc";
    case TaskKind::gc_finish: return "gc_finish";
  }
  return "?";
}

bool is_parallel(TaskKind k) {
  return k == TaskKind::range_for || k == TaskKind::struct_for || k == TaskKind::listgen || k == TaskKind::gc;
}

bool is_runtime_task(TaskKind k) {
  return k == TaskKind::clear_list || k == TaskKind::listgen || k == TaskKind::gc || k == TaskKind::gc_finish;
}

// ---- counts ------------------------------------------------------------------------

std::vector<uint32_t> grid_group_sizes(std::span<const int64_t> counts, uint32_t invocations) {
  constexpr uint32_t kMostAlong[3] = {1024, 128, 64};
  constexpr uint32_t kRowGroup = 64;
  std::vector<uint32_t> sizes(counts.size(), 1);
  uint32_t left = std::max<uint32_t>(1, invocations);
  for (size_t a = counts.size(); a-- > 0;) {
    const size_t dim = counts.size() - 1 - a;
    uint32_t want = dim == 0 ? kRowGroup : left;
    if (counts[a] >= 0) {
      want = 1;
      while (want < counts[a] && want < left) want *= 2;
    }
    sizes[a] = std::max<uint32_t>(1, std::min({want, left, dim < 3 ? kMostAlong[dim] : 1u}));
    left /= sizes[a];
  }
  return sizes;
}

bool counted_on_host(const TaskPlan& task) {
  return task.static_iterations >= 0 || (task.begin.known() && task.end.known());
}

std::optional<int64_t> host_iterations(const TaskPlan& task, std::span<const uint64_t> args) {
  if (task.static_iterations >= 0) return task.static_iterations;
  const std::optional<int64_t> b = task.begin.evaluate(args), e = task.end.evaluate(args);
  if (!b || !e) return std::nullopt;
  return std::max<int64_t>(0, *e - *b);
}

std::vector<int64_t> grid_counts(const TaskPlan& task, std::span<const uint64_t> args, const std::string& what) {
  std::vector<int64_t> counts;
  for (size_t a = 0; a <= task.grid.size(); ++a) {
    const GridAxis own{task.static_iterations, task.begin, task.end, task.local_size};
    const GridAxis& g = a == 0 ? own : task.grid[a - 1];
    int64_t n = g.static_iterations;
    if (n < 0) {
      const std::optional<int64_t> b = g.begin.evaluate(args), e = g.end.evaluate(args);
      if (!b || !e)
        throw Error(what + " spreads over a grid whose extent along axis " + std::to_string(a) +
                    " is not known on the host; its plan is damaged (compile the kernel again)");
      n = std::max<int64_t>(0, *e - *b);
    }
    counts.push_back(n);
  }
  return counts;
}

std::optional<int64_t> CountExpr::evaluate(std::span<const uint64_t> args) const {
  if (root < 0) return std::nullopt;
  // Nodes refer only to earlier nodes (checked when a plan is read), so one
  // pass in order computes them all.
  std::vector<int64_t> v(nodes.size(), 0);
  auto wrap = [](DataType t, int64_t x) { return bits_to_int(t, int_to_bits(t, x)); };
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& e = nodes[n];
    const int64_t a = e.a >= 0 ? v[static_cast<size_t>(e.a)] : 0;
    const int64_t b = e.b >= 0 ? v[static_cast<size_t>(e.b)] : 0;
    int64_t r = 0;
    switch (e.op) {
      case Op::constant: r = e.value; break;
      case Op::arg:
        if (e.value < 0 || static_cast<size_t>(e.value) >= args.size()) return std::nullopt;
        r = bits_to_int(e.type, args[static_cast<size_t>(e.value)]);
        break;
      case Op::cast: r = a; break;
      case Op::add: r = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); break;
      case Op::sub: r = static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); break;
      case Op::mul: r = static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); break;
      case Op::div: r = b == 0 || (b == -1 && a == INT64_MIN) ? 0 : a / b; break;
      case Op::min: r = std::min(a, b); break;
      case Op::max: r = std::max(a, b); break;
    }
    v[n] = wrap(e.type, r);
  }
  return v[static_cast<size_t>(root)];
}

// ---- bytes -------------------------------------------------------------------------

namespace {

void write_count(ByteWriter& w, const CountExpr& c) {
  w.u32(static_cast<uint32_t>(c.nodes.size()));
  for (const CountExpr::Node& n : c.nodes) {
    w.u8(static_cast<uint8_t>(n.op));
    w.u8(static_cast<uint8_t>(n.type));
    w.i64(n.value);
    w.i32(n.a);
    w.i32(n.b);
  }
  w.i32(c.root);
}

DataType read_type(ByteReader& r, bool integral_only) {
  const uint8_t t = r.u8();
  if (t == 0 || t > static_cast<uint8_t>(DataType::f64)) r.fail("type " + std::to_string(t) + " does not exist");
  const auto type = static_cast<DataType>(t);
  if (integral_only && !is_integral(type)) r.fail("a count computes in " + std::string(type_name(type)));
  return type;
}

CountExpr read_count(ByteReader& r) {
  CountExpr c;
  const uint32_t n = r.count(1 + 1 + 8 + 4 + 4);
  for (uint32_t k = 0; k < n; ++k) {
    CountExpr::Node e;
    const uint8_t op = r.u8();
    if (op > static_cast<uint8_t>(CountExpr::Op::max)) r.fail("count operation " + std::to_string(op) + " does not exist");
    e.op = static_cast<CountExpr::Op>(op);
    e.type = read_type(r, true);
    e.value = r.i64();
    e.a = r.i32();
    e.b = r.i32();
    const auto earlier = [&](int32_t x) { return x >= -1 && x < static_cast<int32_t>(k); };
    if (!earlier(e.a) || !earlier(e.b)) r.fail("a count node refers to a later node");
    c.nodes.push_back(e);
  }
  c.root = r.i32();
  if (c.root < -1 || c.root >= static_cast<int32_t>(c.nodes.size())) r.fail("a count's root is out of range");
  return c;
}

}  // namespace

void write_messages(ByteWriter& w, std::span<const MessagePlan> messages) {
  w.u32(static_cast<uint32_t>(messages.size()));
  for (const MessagePlan& m : messages) {
    w.boolean(m.is_assert);
    w.str(m.format);
    w.u32(static_cast<uint32_t>(m.types.size()));
    for (DataType t : m.types) w.u8(static_cast<uint8_t>(t));
  }
}

std::vector<MessagePlan> read_messages(ByteReader& r) {
  std::vector<MessagePlan> out;
  for (uint32_t n = r.count(1 + 4 + 4); n > 0; --n) {
    MessagePlan m;
    m.id = static_cast<uint32_t>(out.size());
    m.is_assert = r.boolean();
    m.format = r.str();
    for (uint32_t v = r.count(1); v > 0; --v) m.types.push_back(read_type(r, false));
    out.push_back(std::move(m));
  }
  return out;
}

void write_features(ByteWriter& w, const Features& f) {
#define GROVE_FEATURE(field, device_name) w.boolean(f.field);
#include "runtime/core/features.def"
}

Features read_features(ByteReader& r) {
  Features f;
#define GROVE_FEATURE(field, device_name) f.field = r.boolean();
#include "runtime/core/features.def"
  return f;
}

Features& Features::operator|=(const Features& f) {
#define GROVE_FEATURE(field, device_name) field = field || f.field;
#include "runtime/core/features.def"
  return *this;
}

bool Features::covers(const Features& f) const {
#define GROVE_FEATURE(field, device_name) \
  if (f.field && !field) return false;
#include "runtime/core/features.def"
  return true;
}

namespace {

// The code kinds' tags in the bytes: PlanCode's alternatives in order.
static_assert(std::variant_size_v<PlanCode> == 4);

void write_code(ByteWriter& w, const PlanCode& code) {
  w.u8(static_cast<uint8_t>(code.index()));
  if (const auto* c = std::get_if<SpirvCode>(&code)) {
    w.u32(static_cast<uint32_t>(c->modules.size()));
    for (const std::vector<uint32_t>& m : c->modules) w.words(m);
    w.str(c->target);
  } else if (const auto* c = std::get_if<ElfCode>(&code)) {
    w.bytes(c->object);
    w.str(c->target);
    w.str(c->target_features);
    w.u8(c->one_thread ? 1 : 0);
  } else if (const auto* c = std::get_if<PtxCode>(&code)) {
    w.str(c->ptx);
    w.str(c->target);
    w.bytes(c->binary);
    w.str(c->binary_target);
  }
}

PlanCode read_code(ByteReader& r, const KernelPlan& p) {
  const uint8_t tag = r.u8();
  if (tag >= std::variant_size_v<PlanCode>) r.fail("code kind " + std::to_string(tag) + " does not exist");
  switch (tag) {
    case 1: {
      SpirvCode c;
      const uint32_t n = r.count(4);
      if (n != p.tasks.size())
        r.fail(std::to_string(n) + " SPIR-V modules for " + std::to_string(p.tasks.size()) + " tasks");
      for (uint32_t k = 0; k < n; ++k) {
        c.modules.push_back(r.words());
        if (c.modules.back().empty()) r.fail("task " + std::to_string(k) + " has no code");
      }
      c.target = r.str();
      return c;
    }
    case 2: {
      ElfCode c;
      c.object = r.bytes();
      c.target = r.str();
      c.target_features = r.str();
      const uint8_t one_thread = r.u8();
      if (one_thread > 1) r.fail("a thread count flag of " + std::to_string(one_thread));
      c.one_thread = one_thread == 1;
      return c;
    }
    case 3: {
      PtxCode c;
      c.ptx = r.str();
      c.target = r.str();
      c.binary = r.bytes();
      c.binary_target = r.str();
      if (c.binary.empty() != c.binary_target.empty()) r.fail("a binary without its target, or a target without a binary");
      return c;
    }
    default:
      return NoCode{};
  }
}

}  // namespace

std::vector<uint8_t> serialize(const KernelPlan& p) {
  ByteWriter w;
  w.u32(kPlanMagic);
  w.u32(kPlanVersion);
  w.str(p.name);
  w.u32(static_cast<uint32_t>(p.args.size()));
  for (const ArgPlan& a : p.args) {
    w.str(a.name);
    w.u8(static_cast<uint8_t>(a.type));
    w.u32(a.word);
    w.u32(a.words);
  }
  w.u32(p.arg_words);
  w.u32(static_cast<uint32_t>(p.slots.size()));
  for (const TreeSlotPlan& s : p.slots) {
    w.u8(static_cast<uint8_t>(s.kind));
    w.i32(s.tree_type);
    w.i32(s.param);
  }
  w.u32(static_cast<uint32_t>(p.tasks.size()));
  for (const TaskPlan& t : p.tasks) {
    w.u8(static_cast<uint8_t>(t.kind));
    w.str(t.label);
    w.i32(t.snode);
    w.i32(t.tree_slot);
    w.u32(static_cast<uint32_t>(t.modifies.size()));
    for (const TaskPlan::Modified& m : t.modifies) {
      w.i32(m.slot);
      w.i32(m.snode);
    }
    w.boolean(t.parallel);
    w.u32(t.local_size);
    w.i64(t.static_iterations);
    write_count(w, t.begin);
    write_count(w, t.end);
    w.u32(t.iterations_per_invocation);
    w.u32(static_cast<uint32_t>(t.grid.size()));
    for (const GridAxis& g : t.grid) {
      w.i64(g.static_iterations);
      write_count(w, g.begin);
      write_count(w, g.end);
      w.u32(g.local_size);
    }
    w.ints(t.slots);
    w.str(t.entry_point);
    w.str(t.count_entry_point);
  }
  write_messages(w, p.messages);
  write_features(w, p.features);
  w.boolean(p.may_allocate);
  w.boolean(p.prints);
  w.i64(p.scratch_words);
  write_code(w, p.code);
  return w.take();
}


std::string_view KernelPlan::backend() const {
  // By PlanCode's alternatives, in order.
  constexpr std::string_view kBackendOfCode[] = {"interp", "vulkan", "cpu", "cuda"};
  static_assert(std::size(kBackendOfCode) == std::variant_size_v<PlanCode>);
  return kBackendOfCode[code.index()];
}

const char* code_kind_name(const PlanCode& code) {
  constexpr const char* kNames[] = {"no code", "SPIR-V", "an ELF object", "PTX"};
  return kNames[code.index()];
}

namespace {

template <typename C>
C& code_as(const KernelPlan& p, const PlanCode& code, const char* want) {
  if (auto* c = std::get_if<C>(const_cast<PlanCode*>(&code))) return *c;
  throw Error("kernel '" + p.name + "': its plan holds " + code_kind_name(code) + ", where " + want +
              " was expected; compile it for this device");
}

}  // namespace

const SpirvCode& KernelPlan::spirv() const { return code_as<SpirvCode>(*this, code, "SPIR-V"); }
SpirvCode& KernelPlan::spirv() { return code_as<SpirvCode>(*this, code, "SPIR-V"); }
const ElfCode& KernelPlan::elf() const { return code_as<ElfCode>(*this, code, "an ELF object"); }
ElfCode& KernelPlan::elf() { return code_as<ElfCode>(*this, code, "an ELF object"); }
const PtxCode& KernelPlan::ptx() const { return code_as<PtxCode>(*this, code, "PTX"); }
PtxCode& KernelPlan::ptx() { return code_as<PtxCode>(*this, code, "PTX"); }

KernelPlan deserialize_plan(std::span<const uint8_t> bytes, std::string_view source) {
  ByteReader r(bytes, std::string(source));
  r.part("header");
  if (r.u32() != kPlanMagic) r.fail("not a Grove kernel plan (wrong magic number)");
  const uint32_t version = r.u32();
  if (version != kPlanVersion)
    r.fail("kernel plan format version " + std::to_string(version) + "; this Grove reads version " +
           std::to_string(kPlanVersion) + " (compile the kernel again with this Grove)");
  KernelPlan p;
  p.name = r.str();
  r.part("arguments");
  for (uint32_t n = r.count(4 + 1 + 4 + 4); n > 0; --n) {
    ArgPlan a;
    a.name = r.str();
    a.type = read_type(r, false);
    a.word = r.u32();
    a.words = r.u32();
    if (a.words != 1 && a.words != 2) r.fail("an argument of " + std::to_string(a.words) + " words");
    p.args.push_back(std::move(a));
  }
  p.arg_words = r.u32();
  if (p.arg_words > kMaxArgWords)
    r.fail(std::to_string(p.arg_words) + " argument words; a kernel takes at most " + std::to_string(kMaxArgWords));
  for (const ArgPlan& a : p.args)
    if (uint64_t{a.word} + a.words > p.arg_words) r.fail("argument '" + a.name + "' lies past the argument words");
  r.part("tree slots");
  for (uint32_t n = r.count(1 + 4 + 4); n > 0; --n) {
    TreeSlotPlan s;
    const uint8_t kind = r.u8();
    if (kind > static_cast<uint8_t>(TreeSlotPlan::Kind::tree)) r.fail("slot kind " + std::to_string(kind) + " does not exist");
    s.kind = static_cast<TreeSlotPlan::Kind>(kind);
    s.tree_type = r.i32();
    s.param = r.i32();
    p.slots.push_back(s);
  }
  const auto slot_ok = [&](int s) { return s >= -1 && s < static_cast<int>(p.slots.size()); };
  for (uint32_t n = r.count(1), k = 0; k < n; ++k) {
    r.part("task " + std::to_string(k));
    TaskPlan t;
    const uint8_t kind = r.u8();
    if (kind > static_cast<uint8_t>(TaskKind::gc_finish)) r.fail("task kind " + std::to_string(kind) + " does not exist");
    t.kind = static_cast<TaskKind>(kind);
    t.label = r.str();
    t.snode = r.i32();
    t.tree_slot = r.i32();
    if (!slot_ok(t.tree_slot)) r.fail("its tree slot " + std::to_string(t.tree_slot) + " does not exist");
    // A task over an SNode names it and the tree slot it lives in; list
    // tasks (which the list scheduler reads) always have one.
    const bool needs_snode = t.kind == TaskKind::listgen || t.kind == TaskKind::clear_list;
    if ((t.snode >= 0) != (t.tree_slot >= 0) || (needs_snode && t.snode < 0))
      r.fail("a " + std::string(task_kind_name(t.kind)) + " task with SNode " + std::to_string(t.snode) +
             " and tree slot " + std::to_string(t.tree_slot) + " (a task over an SNode names both" +
             (needs_snode ? ", and this kind is always over one)" : ")"));
    if (t.tree_slot >= 0 && p.slots[static_cast<size_t>(t.tree_slot)].kind != TreeSlotPlan::Kind::tree)
      r.fail("its SNode is in tree slot " + std::to_string(t.tree_slot) + ", which is not a tree's");
    for (uint32_t m = r.count(8); m > 0; --m) {
      TaskPlan::Modified mod;
      mod.slot = r.i32();
      mod.snode = r.i32();
      if (mod.slot < 0 || !slot_ok(mod.slot)) r.fail("it modifies a node of slot " + std::to_string(mod.slot) + ", which does not exist");
      t.modifies.push_back(mod);
    }
    t.parallel = r.boolean();
    if (t.parallel != is_parallel(t.kind)) r.fail("a " + std::string(task_kind_name(t.kind)) + " task marked otherwise");
    t.local_size = r.u32();
    if (t.local_size == 0 || t.local_size > 1024) r.fail("local size " + std::to_string(t.local_size));
    t.static_iterations = r.i64();
    t.begin = read_count(r);
    t.end = read_count(r);
    t.iterations_per_invocation = r.u32();
    if (t.iterations_per_invocation == 0) r.fail("0 iterations per invocation");
    const uint32_t axes = r.count(8);
    if (axes > 2 || (axes > 0 && !t.parallel)) r.fail(std::to_string(axes) + " grid axes on a task of " + std::string(task_kind_name(t.kind)));
    uint64_t invocations = t.local_size;
    for (uint32_t a = 0; a < axes; ++a) {
      GridAxis g;
      g.static_iterations = r.i64();
      g.begin = read_count(r);
      g.end = read_count(r);
      g.local_size = r.u32();
      invocations *= g.local_size;
      if (g.local_size == 0 || invocations > 1024) r.fail("a grid of groups of " + std::to_string(invocations) + " invocations");
      t.grid.push_back(std::move(g));
    }
    t.slots = r.ints();
    for (int s : t.slots)
      if (s < 0 || !slot_ok(s)) r.fail("it binds tree slot " + std::to_string(s) + ", which does not exist");
    t.entry_point = r.str();
    t.count_entry_point = r.str();
    p.tasks.push_back(std::move(t));
  }
  r.part("messages");
  p.messages = read_messages(r);
  r.part("features");
  p.features = read_features(r);
  p.may_allocate = r.boolean();
  p.prints = r.boolean();
  p.scratch_words = r.i64();
  if (p.scratch_words < 0 || p.scratch_words > kMaxTreeWords)
    r.fail(std::to_string(p.scratch_words) + " scratch words; a buffer holds 0 to 2^32 words");
  r.part("code");
  p.code = read_code(r, p);
  if (r.left() != 0) r.fail(std::to_string(r.left()) + " bytes after the end of the plan");
  return p;
}

// ---- JSON --------------------------------------------------------------------------

namespace {

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

constexpr const char* kCountOps[] = {"const", "arg", "cast", "add", "sub", "mul", "div", "min", "max"};

std::string count_json(const CountExpr& c);

std::string grid_json(const std::vector<GridAxis>& grid) {
  std::string out = "[";
  for (size_t i = 0; i < grid.size(); ++i) {
    const GridAxis& g = grid[i];
    out += (i ? ", " : "") + std::string("{\"static_iterations\": ") + std::to_string(g.static_iterations) +
           ", \"begin\": " + count_json(g.begin) + ", \"end\": " + count_json(g.end) +
           ", \"local_size\": " + std::to_string(g.local_size) + "}";
  }
  return out + "]";
}

std::string count_json(const CountExpr& c) {
  if (!c.known()) return "null";
  auto node = [&](auto&& self, int32_t i) -> std::string {
    const CountExpr::Node& n = c.nodes[static_cast<size_t>(i)];
    switch (n.op) {
      case CountExpr::Op::constant: return std::to_string(n.value);
      case CountExpr::Op::arg: return "arg" + std::to_string(n.value);
      case CountExpr::Op::cast: return std::string(type_name(n.type)) + "(" + self(self, n.a) + ")";
      default:
        return std::string(kCountOps[static_cast<size_t>(n.op)]) + "(" + self(self, n.a) + ", " + self(self, n.b) + ")";
    }
  };
  return quoted(node(node, c.root));
}

std::string modified_json(const std::vector<TaskPlan::Modified>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::string("{\"slot\": ") + std::to_string(v[i].slot) + ", \"snode\": " + std::to_string(v[i].snode) + "}";
  return s + "]";
}

std::string ints_json(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

void require_backend(const KernelPlan& plan, std::string_view backend, std::string_view device) {
  if (plan.backend() == backend) return;
  throw Error("kernel '" + plan.name + "': its plan was made for the '" + std::string(plan.backend()) + "' backend, not for " +
              std::string(device) + "; compile it for " + std::string(device));
}

std::string to_json(const KernelPlan& p) {
  std::ostringstream o;
  o << std::boolalpha << "{\n  \"name\": " << quoted(p.name) << ",\n  \"backend\": " << quoted(p.backend()) << ",\n  \"args\": [";
  for (size_t i = 0; i < p.args.size(); ++i)
    o << (i ? ", " : "") << "{\"name\": " << quoted(p.args[i].name) << ", \"type\": " << quoted(type_name(p.args[i].type))
      << ", \"word\": " << p.args[i].word << ", \"words\": " << p.args[i].words << "}";
  o << "],\n  \"arg_words\": " << p.arg_words << ",\n  \"slots\": [";
  for (size_t i = 0; i < p.slots.size(); ++i) {
    const TreeSlotPlan& s = p.slots[i];
    o << (i ? ", " : "") << "{\"slot\": " << i << ", \"kind\": "
      << (s.kind == TreeSlotPlan::Kind::scratch ? "\"scratch\"" : "\"tree\"") << ", \"tree_type\": " << s.tree_type
      << ", \"param\": " << s.param << "}";
  }
  o << "],\n  \"tasks\": [";
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const TaskPlan& t = p.tasks[i];
    o << (i ? "," : "") << "\n    {\"kind\": " << quoted(task_kind_name(t.kind)) << ", \"label\": " << quoted(t.label)
      << ", \"snode\": " << t.snode << ", \"tree_slot\": " << t.tree_slot << ", \"modifies\": " << modified_json(t.modifies)
      << ", \"parallel\": " << (t.parallel ? "true" : "false") << ", \"local_size\": " << t.local_size
      << ", \"static_iterations\": " << t.static_iterations << ", \"begin\": " << count_json(t.begin)
      << ", \"end\": " << count_json(t.end) << ", \"iterations_per_invocation\": " << t.iterations_per_invocation
      << ", \"grid\": " << grid_json(t.grid) << ", \"slots\": " << ints_json(t.slots) << ", \"entry_point\": " << quoted(t.entry_point)
      << ", \"count_entry_point\": " << quoted(t.count_entry_point) << "}";
  }
  o << "\n  ],\n  \"messages\": [";
  for (size_t i = 0; i < p.messages.size(); ++i) {
    const MessagePlan& m = p.messages[i];
    o << (i ? ", " : "") << "{\"id\": " << m.id << ", \"assert\": " << (m.is_assert ? "true" : "false")
      << ", \"format\": " << quoted(m.format) << ", \"types\": [";
    for (size_t t = 0; t < m.types.size(); ++t) o << (t ? ", " : "") << quoted(type_name(m.types[t]));
    o << "]}";
  }
  const Features& f = p.features;
  o << "],\n  \"features\": {";
  const char* separator = "";
#define GROVE_FEATURE(field, device_name) \
  o << separator << "\"" #field "\": " << f.field; \
  separator = ", ";
#include "runtime/core/features.def"
  o << "},\n  \"may_allocate\": "
    << (p.may_allocate ? "true" : "false") << ",\n  \"prints\": " << (p.prints ? "true" : "false")
    << ",\n  \"scratch_words\": " << p.scratch_words << ",\n  \"code\": {\"kind\": " << quoted(code_kind_name(p.code));
  if (const auto* c = std::get_if<SpirvCode>(&p.code)) {
    o << ", \"module_words\": [";
    for (size_t i = 0; i < c->modules.size(); ++i) o << (i ? ", " : "") << c->modules[i].size();
    o << "], \"target\": " << quoted(c->target);
  } else if (const auto* c = std::get_if<ElfCode>(&p.code)) {
    o << ", \"object_bytes\": " << c->object.size() << ", \"target\": " << quoted(c->target)
      << ", \"target_features\": " << quoted(c->target_features)
      << ", \"one_thread\": " << (c->one_thread ? "true" : "false");
  } else if (const auto* c = std::get_if<PtxCode>(&p.code)) {
    o << ", \"ptx_bytes\": " << c->ptx.size() << ", \"target\": " << quoted(c->target)
      << ", \"binary_bytes\": " << c->binary.size() << ", \"binary_target\": " << quoted(c->binary_target);
  }
  o << "}\n}\n";
  return o.str();
}

}  // namespace grove::rt
