// src/program/vulkan_backend.cpp — the Vulkan backend: kernels translated by
// src/spirv/codegen.h into one compute pipeline per task, run on
// runtime/vulkan's Device. Launches are queued without waiting; print output
// and a failed assertion come back through the context buffer and are
// reported at the next sync or host read (in debug mode every launch syncs,
// so an error names the launch that caused it, as on the interpreter).
//
// optimize_spirv() is not run on the modules: on lavapipe it changed no run
// time measurably (saxpy over 1M floats 9.7 vs 10.3 ms per launch, a
// struct-for over 20k cells 8.5 vs 6.4 ms, within the noise of a shared
// machine) and more than doubled compile time (33 -> 85 ms for saxpy); the
// driver's own compiler does the same work.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <span>
#include <string>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/eval.h"
#include "ir/interpreter.h"
#include "ir/plan_builder.h"
#include "ir/type_rules.h"
#include "program/backend.h"
#include "program/program_impl.h"
#include "program/vulkan_backend.h"
#include "program/test_hooks.h"
#include "runtime/vulkan/device.h"
#include "spirv/codegen.h"
#include "spirv/validate.h"

namespace grove::detail {

namespace {

namespace ctx = spirv::context;

// Invocations per group of a parallel task: a multiple of every common
// subgroup size (8 on lavapipe, 32 on NVIDIA, 64 on AMD, 16-32 on mobile),
// lowered to the device's limits (Vulkan guarantees 128). 256 rather than
// 128 halves the groups a dense launch dispatches, which lavapipe pays for
// one by one (saxpy over 1M f32, measured in vk_saxpy: 3-7% faster).
constexpr uint32_t kPreferredLocalSize = 256;
// Invocations launched for a parallel loop whose bounds only the device
// knows (listgen, struct-fors, gc): a grid-stride loop covers any count. On
// a CPU device (lavapipe) every idle group still costs a thread's time, and
// fewer invocations were measured 4x faster on a struct-for over 20k cells
// (1 ms instead of 3.6-8.5 ms with 16 times as many).
constexpr uint32_t kDynamicInvocations = 131072;
constexpr uint32_t kDynamicInvocationsCpu = 8192;
// The loop limiter of Mesa's llvmpipe (LP_MAX_TGSI_LOOP_ITERATIONS).
constexpr uint32_t kLavapipeLoopLimit = 65535;
// Host writes are gathered and flushed in one transfer; past this many
// pending words they are flushed at once.
constexpr int64_t kMaxPendingWords = int64_t{1} << 20;
// The print ring (words after the context header): a launch whose prints
// do not fit loses the records past the end (counted, and reported with a
// warning), and the ring grows to what that launch asked for, up to the
// largest ring, for later launches.
constexpr uint32_t kInitialPrintRingWords = 1u << 16;  // 256 KiB
constexpr uint32_t kMaxPrintRingWords = 1u << 26;      // 256 MiB

std::string sanitize(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  return out;
}

// The plan (with each task's SPIR-V) and one pipeline per task.
class VulkanKernel : public CompiledKernel {
 public:
  std::vector<vk::PipelineId> pipelines;
};

class VulkanBackend : public Backend {
 public:
  explicit VulkanBackend(const BackendOptions& options);
  Arch arch() const override { return Arch::Vulkan; }
  std::string device_name() const override;
  bool synchronous() const override { return options_.debug; }
  vk::Device& device() { return *device_; }
  int64_t max_buffer_bytes() const override {
    return static_cast<int64_t>(std::min<uint64_t>(device_->info().max_storage_buffer_range, INT64_MAX));
  }

  void create_buffer(int tree, const std::vector<uint32_t>& initial) override;
  void read_words(int tree, int64_t offset, int64_t count, uint32_t* out) override;
  void write_words(int tree, int64_t offset, int64_t count, const uint32_t* in) override;
  std::unique_ptr<CompiledKernel> compile(const ir::Kernel& kernel, const ir::SNodeForest& forest,
                                          rt::KernelPlan plan) override;
  std::unique_ptr<CompiledKernel> load(rt::KernelPlan plan) override;
  void launch(CompiledKernel& kernel, std::span<const uint64_t> args, const std::vector<bool>& run) override;
  void sync() override;

 private:
  struct PendingWrite {
    int64_t offset;
    std::vector<uint32_t> words;
  };
  struct Tree {
    vk::BufferId buffer;
    int64_t words = 0;
    std::vector<PendingWrite> pending;  // host writes not yet sent, in order
    int64_t pending_words = 0;
  };
  struct MessageRecord {
    std::string kernel;
    rt::MessagePlan message;
  };

  Tree& tree(int id, const char* operation);
  // An address outside a tree's buffer is a bug in Grove, reported before
  // anything is queued.
  static void check_range(const Tree& t, int id, int64_t offset, int64_t count, const char* operation);
  void flush(Tree& t);
  void flush_all();
  uint32_t group_count(const rt::TaskPlan& task, std::span<const uint64_t> args) const;
  // Formats the print ring and the failed assertion (raising it) and clears them.
  void report_context();
  std::string format_values(const rt::MessagePlan& m, const uint32_t* words, size_t available, bool pairs) const;
  void dump(const VulkanKernel& k) const;

  // (Re)creates the context buffer with a print ring of `ring_words`.
  void create_context(uint32_t ring_words);

  BackendOptions options_;
  std::unique_ptr<vk::Device> device_;
  vk::BufferId context_;
  uint32_t ring_words_ = 0;        // the print ring's size
  std::string last_printer_;       // the last kernel launched that prints
  std::vector<Tree> trees_;
  std::vector<MessageRecord> messages_;
  bool context_pending_ = false;
};

VulkanBackend::VulkanBackend(const BackendOptions& options) : options_(options) {
  vk::DeviceOptions d;
  d.select = options.device;
  d.validation = options.validation;
  d.on_validation_message = [](std::string_view message) {
    record_vulkan_validation_message(std::string(message));
    std::cerr << "[grove] Vulkan validation: " << message << "\n";
  };
  VulkanTestProfile p = vulkan_test_profile();
  d.profile.no_int64 = p.no_int64;
  d.profile.no_float64 = p.no_float64;
  d.profile.no_float_atomics = p.no_float_atomics;
  d.profile.max_storage_buffer_range = p.max_storage_buffer_range;
  d.profile.max_workgroup_invocations = p.max_workgroup_invocations;
  try {
    device_ = vk::Device::create(d);
  } catch (const Error& e) {
    throw Error(std::string("cannot start the Vulkan backend: ") + e.what());
  }
  create_context(kInitialPrintRingWords);
}

void VulkanBackend::create_context(uint32_t ring_words) {
  const uint64_t limit = device_->info().max_storage_buffer_range / 4;
  ring_words = static_cast<uint32_t>(std::min<uint64_t>(ring_words, limit - ctx::kHeaderWords));
  vk::BufferId fresh = device_->create_buffer((uint64_t{ctx::kHeaderWords} + ring_words) * 4,
                                              "grove context (asserts, print ring)");
  if (ring_words_ != 0) device_->destroy_buffer(context_);  // freed once the launches using it are done
  context_ = fresh;
  ring_words_ = ring_words;
  uint32_t header[ctx::kHeaderWords] = {};
  header[ctx::kPrintCapacity] = ring_words;
  device_->write_buffer(context_, 0, header, sizeof header);
}

std::string VulkanBackend::device_name() const {
  const vk::DeviceInfo& i = device_->info();
  return i.name + " (Vulkan " + vk::version_string(i.api_version) + ", " + vk::to_string(i.type) + ")";
}

VulkanBackend::Tree& VulkanBackend::tree(int id, const char* operation) {
  if (id < 0 || static_cast<size_t>(id) >= trees_.size() || trees_[static_cast<size_t>(id)].words == 0)
    throw InternalError(std::string("Vulkan backend: ") + operation + " of tree " + std::to_string(id) +
                        ", which has no buffer");
  return trees_[static_cast<size_t>(id)];
}

void VulkanBackend::check_range(const Tree& t, int id, int64_t offset, int64_t count, const char* operation) {
  if (offset < 0 || count < 0 || offset > t.words - count)
    throw InternalError(std::string("Vulkan backend: ") + operation + " of words [" + std::to_string(offset) +
                        ", " + std::to_string(offset) + " + " + std::to_string(count) + ") of tree " +
                        std::to_string(id) + ", which has " + std::to_string(t.words) + " words");
}

void VulkanBackend::create_buffer(int id, const std::vector<uint32_t>& initial) {
  const uint64_t bytes = std::max<uint64_t>(initial.size(), 1) * 4;
  const uint64_t limit = device_->info().max_storage_buffer_range;
  if (bytes > limit)
    throw Error("an SNode tree needs a buffer of " + std::to_string(bytes) + " bytes, more than the " +
                std::to_string(limit) + " bytes one storage buffer may have on " + device_->info().name +
                " (maxStorageBufferRange): lower Config::device_memory or set SNode::capacity(...) on its "
                "pointer and dynamic SNodes");
  if (trees_.size() <= static_cast<size_t>(id)) trees_.resize(static_cast<size_t>(id) + 1);
  Tree& t = trees_[static_cast<size_t>(id)];
  if (t.words != 0) device_->destroy_buffer(t.buffer);
  t = Tree{};
  t.buffer = device_->create_buffer(bytes, "grove tree " + std::to_string(id));
  t.words = static_cast<int64_t>(initial.size());
  // The buffer starts zeroed: send only up to the last nonzero word.
  size_t used = initial.size();
  while (used > 0 && initial[used - 1] == 0) --used;
  if (used > 0) device_->write_buffer(t.buffer, 0, initial.data(), used * 4);
}

void VulkanBackend::flush(Tree& t) {
  if (t.pending.empty()) return;
  std::vector<PendingWrite> pending = std::move(t.pending);
  t.pending.clear();
  t.pending_words = 0;
  if (pending.size() == 1) {
    const PendingWrite& w = pending.front();
    device_->write_buffer(t.buffer, static_cast<uint64_t>(w.offset) * 4, w.words.data(), w.words.size() * 4);
    return;
  }
  // Many small writes (e.g. Field::from_vector writes element by element):
  // one transfer of the span they cover. Gaps between them are read first.
  int64_t lo = INT64_MAX, hi = 0, written = 0;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const PendingWrite& w : pending) {
    int64_t end = w.offset + static_cast<int64_t>(w.words.size());
    lo = std::min(lo, w.offset);
    hi = std::max(hi, end);
    written += static_cast<int64_t>(w.words.size());
    ranges.emplace_back(w.offset, end);
  }
  if (hi - lo > 4 * written + 4096) {
    for (const PendingWrite& w : pending)
      device_->write_buffer(t.buffer, static_cast<uint64_t>(w.offset) * 4, w.words.data(), w.words.size() * 4);
    return;
  }
  std::sort(ranges.begin(), ranges.end());
  bool gaps = false;
  int64_t covered = lo;
  for (auto [b, e] : ranges) {
    if (b > covered) gaps = true;
    covered = std::max(covered, e);
  }
  std::vector<uint32_t> span(static_cast<size_t>(hi - lo), 0u);
  if (gaps) device_->read_buffer(t.buffer, static_cast<uint64_t>(lo) * 4, span.data(), span.size() * 4);
  for (const PendingWrite& w : pending) std::copy(w.words.begin(), w.words.end(), span.begin() + (w.offset - lo));
  device_->write_buffer(t.buffer, static_cast<uint64_t>(lo) * 4, span.data(), span.size() * 4);
}

void VulkanBackend::flush_all() {
  for (Tree& t : trees_) flush(t);
}

void VulkanBackend::read_words(int id, int64_t offset, int64_t count, uint32_t* out) {
  Tree& t = tree(id, "read_words");
  check_range(t, id, offset, count, "read_words");
  flush_all();
  if (count > 0) device_->read_buffer(t.buffer, static_cast<uint64_t>(offset) * 4, out, static_cast<uint64_t>(count) * 4);
  if (context_pending_) report_context();
}

void VulkanBackend::write_words(int id, int64_t offset, int64_t count, const uint32_t* in) {
  Tree& t = tree(id, "write_words");
  check_range(t, id, offset, count, "write_words");
  if (count <= 0) return;
  t.pending.push_back({offset, std::vector<uint32_t>(in, in + count)});
  t.pending_words += count;
  if (t.pending_words > kMaxPendingWords) flush(t);
}

// The features a kernel's code needs of a device: 64-bit values, 64-bit
// atomics, and the optional paths the code generator took on this device.
rt::Features features_of(const ir::Kernel& kernel, const spirv::CodegenOptions& options, const rt::KernelPlan& plan) {
  rt::Features f;
  ir::walk(kernel.body(), [&](ir::Stmt* s) {
    const DataType t = s->kind() == ir::StmtKind::TreeLoad || s->kind() == ir::StmtKind::TreeStore ? s->storage() : s->type();
    f.shader_int64 |= t == DataType::i64 || t == DataType::u64;
    f.shader_float64 |= t == DataType::f64;
    const bool atomic = s->kind() == ir::StmtKind::TreeAtomic || s->kind() == ir::StmtKind::TreeCas;
    f.atomic_int64 |= atomic && bit_width(s->type()) == 64 && is_integral(s->type());
    f.atomic_float32_add |= atomic && s->type() == DataType::f32 && options.features.atomic_float32_add;
  });
  for (const rt::TaskPlan& t : plan.tasks)
    f.subgroup_arithmetic |= t.iterations_per_invocation > 1 && options.features.subgroup_arithmetic;
  return f;
}

std::unique_ptr<CompiledKernel> VulkanBackend::compile(const ir::Kernel& kernel, const ir::SNodeForest& forest,
                                                       rt::KernelPlan plan) {
  const vk::DeviceInfo& info = device_->info();
  spirv::CodegenOptions options = codegen_options_for(info);
  options.message_base = static_cast<uint32_t>(messages_.size());
  options.debug = options_.debug;
  options.validate = spirv::validation_requested();
  spirv::KernelModules modules = spirv::generate_kernel(kernel, forest, options, info.max_push_constants_size);
  // The plan gets what the code generator decided: argument words, each
  // task's code, entry point, local size and bindings, the messages.
  plan.backend = "vulkan";
  plan.arg_words = modules.arg_words;
  for (size_t n = 0; n < plan.args.size(); ++n) {
    plan.args[n].word = modules.arg_offsets.at(n);
    plan.args[n].words = static_cast<uint32_t>(storage_words(compute_type(plan.args[n].type)));
  }
  GROVE_ASSERT(modules.tasks.size() == plan.tasks.size(), "SPIR-V codegen made a module per task");
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    spirv::TaskModule& m = modules.tasks[i];
    rt::TaskPlan& t = plan.tasks[i];
    t.entry_point = m.entry_point;
    t.local_size = m.local_size;
    t.iterations_per_invocation = m.iterations_per_invocation;
    t.static_iterations = m.static_iterations;
    for (int tree : m.trees) t.slots.push_back(ir::slot_of_tree(plan, tree));
    t.code = std::move(m.words);
  }
  for (size_t i = 0; i < modules.messages.size(); ++i) {
    const spirv::Message& m = modules.messages[i];
    plan.messages.push_back({options.message_base + static_cast<uint32_t>(i), m.is_assert, m.format, m.types});
  }
  plan.features = features_of(kernel, options, plan);
  return load(std::move(plan));
}

std::unique_ptr<CompiledKernel> VulkanBackend::load(rt::KernelPlan plan) {
  if (plan.backend != "vulkan")
    throw Error("kernel '" + plan.name + "': its plan was made for the '" + plan.backend +
                "' backend, not for Vulkan; compile it for Vulkan");
  const vk::DeviceInfo& info = device_->info();
  const rt::Features& f = plan.features;
  std::string missing;
  auto need = [&](bool needed, bool have, const char* what) {
    if (needed && !have) missing += (missing.empty() ? "" : ", ") + std::string(what);
  };
  need(f.shader_int64, info.shader_int64, "shaderInt64");
  need(f.shader_float64, info.shader_float64, "shaderFloat64");
  need(f.atomic_int64, info.atomic_int64, "shaderBufferInt64Atomics");
  need(f.atomic_float32_add, info.atomic_float32_add, "shaderBufferFloat32AtomicAdd");
  need(f.subgroup_arithmetic, info.subgroup_arithmetic, "subgroup arithmetic");
  if (!missing.empty())
    throw Error("kernel '" + plan.name + "' needs " + missing + ", which " + info.name + " lacks");
  if (plan.arg_words * 4 > info.max_push_constants_size)
    throw Error("kernel '" + plan.name + "' takes " + std::to_string(plan.arg_words * 4) + " bytes of arguments; " +
                info.name + " passes at most " + std::to_string(info.max_push_constants_size));
  auto k = std::make_unique<VulkanKernel>();
  k->plan = std::move(plan);
  for (const rt::MessagePlan& m : k->plan.messages) {
    if (messages_.size() <= m.id) messages_.resize(m.id + 1);
    messages_[m.id] = {k->plan.name, m};
  }
  dump(*k);
  for (const rt::TaskPlan& t : k->plan.tasks)
    k->pipelines.push_back(device_->create_pipeline(t.code, t.entry_point, 1 + static_cast<uint32_t>(t.slots.size()),
                                                    k->plan.arg_words * 4, t.entry_point));
  return k;
}

// GROVE_DUMP_DIR: each task's module and its disassembly next to the IR dumps.
void VulkanBackend::dump(const VulkanKernel& k) const {
  const char* dir = std::getenv("GROVE_DUMP_DIR");
  if (dir == nullptr || *dir == '\0') return;
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < k.plan.tasks.size(); ++i) {
    const rt::TaskPlan& task = k.plan.tasks[i];
    std::string base = sanitize(k.plan.name) + ".t" + std::to_string(i) + "_" + rt::task_kind_name(task.kind);
    std::filesystem::path p = std::filesystem::path(dir) / base;
    std::ofstream(p.string() + ".spv", std::ios::binary)
        .write(reinterpret_cast<const char*>(task.code.data()), static_cast<std::streamsize>(task.code.size() * 4));
    std::ofstream(p.string() + ".spvasm") << spirv::disassemble(task.code);
  }
}

uint32_t VulkanBackend::group_count(const rt::TaskPlan& task, std::span<const uint64_t> args) const {
  if (!task.parallel) return 1;
  const uint32_t max_groups = device_->info().max_compute_workgroup_count[0];
  int64_t n = task.static_iterations;
  if (n < 0) {
    const std::optional<int64_t> b = task.begin.evaluate(args), e = task.end.evaluate(args);
    if (b && e) n = std::max<int64_t>(0, *e - *b);
  }
  if (n < 0) {
    const bool cpu = device_->info().type == vk::DeviceType::cpu;
    const uint32_t invocations = cpu ? kDynamicInvocationsCpu : kDynamicInvocations;
    return std::min(max_groups, std::max<uint32_t>(1, invocations / task.local_size));
  }
  const int64_t per_group = int64_t{task.local_size} * task.iterations_per_invocation;
  return static_cast<uint32_t>(std::min<int64_t>((n + per_group - 1) / per_group, max_groups));
}

void VulkanBackend::launch(CompiledKernel& compiled, std::span<const uint64_t> args, const std::vector<bool>& run) {
  auto& k = static_cast<VulkanKernel&>(compiled);
  const rt::KernelPlan& plan = k.plan;
  flush_all();
  std::vector<uint32_t> push(plan.arg_words, 0u);
  for (size_t n = 0; n < plan.args.size() && n < args.size(); ++n) {
    const uint32_t at = plan.args[n].word;
    push[at] = static_cast<uint32_t>(args[n]);  // 64-bit values: low word first
    if (plan.args[n].words == 2) push[at + 1] = static_cast<uint32_t>(args[n] >> 32);
  }
  std::vector<vk::Dispatch> dispatches;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    if (i < run.size() && !run[i]) continue;
    const rt::TaskPlan& task = plan.tasks[i];
    vk::Dispatch d;
    d.group_count_x = group_count(task, args);
    if (d.group_count_x == 0) continue;
    d.pipeline = k.pipelines[i];
    d.buffers.push_back(context_);
    for (int slot : task.slots) d.buffers.push_back(tree(plan.slots[static_cast<size_t>(slot)].tree_type, "launch").buffer);
    d.push_constants = push;
    dispatches.push_back(std::move(d));
  }
  if (!dispatches.empty()) device_->launch(dispatches);
  if (!plan.messages.empty()) context_pending_ = true;
  if (plan.prints) last_printer_ = plan.name;
  // Debug mode: an error names the launch that caused it. A kernel that
  // prints: its output appears when the launch returns, in order with the
  // host's own output, and a printing loop cannot overflow the print ring.
  if (options_.debug || plan.prints) sync();
}

void VulkanBackend::sync() {
  flush_all();
  device_->sync();
  if (context_pending_) report_context();
}

std::string VulkanBackend::format_values(const rt::MessagePlan& m, const uint32_t* words, size_t available,
                                         bool pairs) const {
  std::vector<std::string> values;
  size_t at = 0;
  for (size_t n = 0; n < m.types.size(); ++n) {
    DataType t = m.types[n];
    size_t need = pairs ? 2 : static_cast<size_t>(storage_words(t));
    if (at + need > available) {
      values.emplace_back("?");
      continue;
    }
    uint64_t bits = words[at];
    if (storage_words(t) == 2) bits |= static_cast<uint64_t>(words[at + 1]) << 32;
    values.push_back(ir::format_value(t, bits));
    at += need;
  }
  return ir::format_print(m.format, values);
}

void VulkanBackend::report_context() {
  context_pending_ = false;
  uint32_t header[ctx::kHeaderWords];
  device_->read_buffer(context_, 0, header, sizeof header);
  const uint32_t head = header[ctx::kPrintHead];
  const uint32_t dropped = header[ctx::kPrintDropped];
  const bool failed = header[ctx::kAssertFlag] != 0;
  if (head == 0 && dropped == 0 && !failed) return;
  uint32_t cleared[ctx::kHeaderWords] = {};
  cleared[ctx::kPrintCapacity] = ring_words_;
  device_->write_buffer(context_, 0, cleared, sizeof cleared);
  auto print = [&](const std::string& text) {
    if (options_.print) {
      options_.print(text);
    } else {
      std::cout << text << std::flush;
    }
  };
  size_t printed = 0;
  if (head > 0) {
    std::vector<uint32_t> ring(std::min(head, ring_words_));
    device_->read_buffer(context_, ctx::kHeaderWords * 4, ring.data(), ring.size() * 4);
    size_t pos = 0;
    while (pos < ring.size()) {
      uint32_t id = ring[pos];
      if (id >= messages_.size() || messages_[id].message.is_assert) break;  // never written
      const rt::MessagePlan& m = messages_[id].message;
      size_t need = 1;
      for (DataType t : m.types) need += static_cast<size_t>(storage_words(t));
      if (pos + need > ring.size()) break;
      print(format_values(m, ring.data() + pos + 1, need - 1, false));
      ++printed;
      pos += need;
    }
  }
  if (dropped > 0) {
    // Only launches of kernels that print fill the ring, and each of them
    // waits for its output: the records are the last such launch's.
    const uint32_t had = ring_words_;
    if (head > had && had < kMaxPrintRingWords) {
      uint32_t grown = had;
      while (grown < head && grown < kMaxPrintRingWords) grown *= 2;
      create_context(grown);
    }
    auto kib = [](uint64_t words) { return std::to_string(words * 4 / 1024) + " KiB"; };
    std::string warning = "[grove] warning: kernel '" + last_printer_ + "' printed " +
                          std::to_string(printed + dropped) + " lines in one launch and " + std::to_string(dropped) +
                          " of them were dropped: the print buffer held " + kib(had) +
                          (ring_words_ > had ? "; it now holds " + kib(ring_words_) + " for later launches"
                                             : "") +
                          " (a launch can print at most " + kib(ring_words_) + ")\n";
    print(warning);  // where the lines would have gone, after the ones that fit
  }
  if (failed) {
    uint32_t id = header[ctx::kAssertMessage];
    if (id >= messages_.size()) throw InternalError("Vulkan backend: a failed assertion with unknown id " + std::to_string(id));
    const MessageRecord& r = messages_[id];
    throw Error("kernel '" + r.kernel + "': " +
                format_values(r.message, header + ctx::kAssertValues, 2 * ctx::kMaxAssertValues, true));
  }
}

}  // namespace

std::unique_ptr<Backend> make_vulkan_backend(const BackendOptions& options) {
  return std::make_unique<VulkanBackend>(options);
}

vk::Device* vulkan_device(const Program& program) {
  auto* backend = dynamic_cast<VulkanBackend*>(program.impl()->backend.get());
  return backend != nullptr ? &backend->device() : nullptr;
}

spirv::CodegenOptions codegen_options_for(const vk::DeviceInfo& info) {
  spirv::CodegenOptions options;
  options.features.shader_int64 = info.shader_int64;
  options.features.shader_float64 = info.shader_float64;
  options.features.atomic_int64 = info.atomic_int64;
  options.features.atomic_float32_add = info.atomic_float32_add;
  options.features.subgroup_arithmetic = info.subgroup_arithmetic;
  options.local_size = std::min({kPreferredLocalSize, info.max_compute_workgroup_invocations,
                                 info.max_compute_workgroup_size_x});
  // Mesa's llvmpipe (lavapipe) leaves any loop once an invocation has taken
  // 65535 back-edges in all (gallivm's loop limiter): count and report.
  if (info.name.find("llvmpipe") != std::string::npos) options.max_loop_iterations = kLavapipeLoopLimit;
  return options;
}

}  // namespace grove::detail
