// runtime/vulkan/vulkan_device.cpp — rt::Device on Vulkan (see vulkan_device.h).
#include "runtime/vulkan/vulkan_device.h"
#include "runtime/vulkan/target.h"

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "grove/error.h"
#include "runtime/core/assert.h"
#include "runtime/core/context_layout.h"
#include "runtime/core/tree_layout.h"
#include "runtime/core/context_records.h"

namespace grove::vk {

namespace {

namespace ctx = rt::context;

// group_count() of a task whose count entry point finds its group count on
// the device (an indirect dispatch).
constexpr uint32_t kCountOnDevice = UINT32_MAX;
// Invocations launched for a parallel loop whose bounds only the device
// knows and that has no count entry point (a loop after statements that
// store, say): a grid-stride loop covers any count. On
// a CPU device (lavapipe) every idle group still costs a thread's time, and
// fewer invocations were measured 4x faster on a struct-for over 20k cells
// (1 ms instead of 3.6-8.5 ms with 16 times as many).
constexpr uint32_t kDynamicInvocations = 131072;
constexpr uint32_t kDynamicInvocationsCpu = 8192;
// Host writes are gathered and flushed in one transfer; past this many
// pending words they are flushed at once.
constexpr int64_t kMaxPendingWords = int64_t{1} << 20;

// The plan (with each task's SPIR-V) and one pipeline per task.
class VulkanKernel : public rt::LoadedKernel {
 public:
  std::vector<PipelineId> pipelines;
  // Per task: the pipeline of its count entry point, if it has one.
  std::vector<std::optional<PipelineId>> count_pipelines;
};

class VulkanDevice : public rt::Device {
 public:
  explicit VulkanDevice(const RuntimeOptions& options);
  std::string name() const override;
  bool synchronous() const override { return options_.debug; }
  int64_t max_buffer_bytes() const override {
    return static_cast<int64_t>(std::min<uint64_t>(device_->info().max_storage_buffer_range, INT64_MAX));
  }
  void create_buffer(int id, int64_t words, std::span<const uint32_t> head) override;
  void destroy_buffer(int id) override;
  void read_words(int id, int64_t offset, int64_t count, uint32_t* out) override;
  void write_words(int id, int64_t offset, int64_t count, const uint32_t* in) override;
  std::span<uint32_t> host_words(int id) override;
  std::unique_ptr<rt::LoadedKernel> load(rt::KernelPlan plan) override;
  void launch(rt::LoadedKernel& kernel, std::span<const uint64_t> args, const std::vector<bool>& run,
              std::span<const int> slot_buffers) override;
  void record(rt::LoadedKernel& kernel, std::span<const uint64_t> args, const std::vector<bool>& run,
              std::span<const int> slot_buffers, void* command_buffer) override;
  void sync() override;
  void set_profiling(bool on) override {
    device_->set_timing(on);
    profiling_ = on;
  }
  void take_task_times(std::vector<rt::TaskTime>& out) override;
  vk::Device& device() { return *device_; }
  void* buffer_handle(int id) { return device_->buffer_handle(tree(id, "buffer_handle").buffer); }

 private:
  struct PendingWrite {
    int64_t offset;
    std::vector<uint32_t> words;
  };
  struct Tree {
    BufferId buffer;
    int64_t words = 0;
    std::vector<PendingWrite> pending;  // host writes not yet sent, in order
    int64_t pending_words = 0;
  };

  Tree& tree(int id, const char* operation);
  // An address outside a buffer is a bug in Grove, reported before
  // anything is queued.
  static void check_range(const Tree& t, int id, int64_t offset, int64_t count, const char* operation);
  void flush(Tree& t);
  void flush_all();
  // The dispatches of the tasks of `kernel` that `run` selects.
  std::vector<Dispatch> dispatches(rt::LoadedKernel& kernel, std::span<const uint64_t> args,
                                   const std::vector<bool>& run, std::span<const int> slot_buffers);
  // Workgroups for `task` along its own loop, or kCountOnDevice.
  uint32_t group_count(const rt::TaskPlan& task, std::span<const uint64_t> args) const;
  // Formats the print ring and the failed assertion (raising it) and clears them.
  void report_context();
  // (Re)creates the context buffer with a print ring of `ring_words`.
  void create_context(uint32_t ring_words);
  // The tag that names task `task` of `plan` in the device's timings; with
  // kCountTag, the task's count dispatch (added to the task's time).
  uint32_t timing_tag(const rt::KernelPlan& plan, size_t task);
  static constexpr uint32_t kCountTag = 0x80000000u;

  RuntimeOptions options_;
  std::unique_ptr<vk::Device> device_;
  BufferId context_;
  uint32_t ring_words_ = 0;        // the print ring's size
  std::vector<Tree> trees_;        // by buffer id
  rt::ContextRecords records_;
  bool context_pending_ = false;
  bool recorded_reports_ = false;  // a recorded kernel may print or assert
  // Profiling: what each timing tag names (kernel, task, label; seconds
  // unused), found by kernel name and task.
  std::vector<rt::TaskTime> tagged_;
  std::unordered_map<std::string, uint32_t> tags_;
  // The pipelines of the sparse runtime's tasks (clear_list, listgen, gc,
  // gc_finish), whose code depends on their node alone (src/spirv names
  // them so), by everything that makes one: every kernel over a node would
  // otherwise have the driver compile the same lists' code again. Kept,
  // as every pipeline here, as long as the device.
  std::unordered_map<std::string, PipelineId> shared_pipelines_;
};

uint32_t VulkanDevice::timing_tag(const rt::KernelPlan& plan, size_t task) {
  std::string key = plan.name;
  key += '\n';
  key += std::to_string(task);
  auto [it, added] = tags_.try_emplace(std::move(key), static_cast<uint32_t>(tagged_.size()));
  if (added) tagged_.push_back({plan.name, static_cast<int>(task), plan.tasks[task].label, 0.0});
  return it->second;
}

void VulkanDevice::take_task_times(std::vector<rt::TaskTime>& out) {
  // A count dispatch comes right before its task's own, in one launch.
  double counted = 0;
  for (const DispatchTime& t : device_->take_timings()) {
    if (t.tag & kCountTag) {
      counted += t.seconds;
      continue;
    }
    rt::TaskTime time = tagged_.at(t.tag);
    time.seconds = t.seconds + counted;
    counted = 0;
    out.push_back(std::move(time));
  }
}

VulkanDevice::VulkanDevice(const RuntimeOptions& options)
    : options_(options), records_("Vulkan backend", options.print) {
  try {
    device_ = options.external ? vk::Device::adopt(*options.external, options.device)
                               : vk::Device::create(options.device);
  } catch (const Error& e) {
    throw Error(std::string("cannot start the Vulkan backend: ") + e.what());
  }
  create_context(rt::kInitialPrintRingWords);
}

void VulkanDevice::create_context(uint32_t ring_words) {
  const uint64_t limit = device_->info().max_storage_buffer_range / 4;
  ring_words = static_cast<uint32_t>(std::min<uint64_t>(ring_words, limit - ctx::kHeaderWords));
  BufferId fresh = device_->create_buffer((uint64_t{ctx::kHeaderWords} + ring_words) * 4,
                                              "grove context (asserts, print ring)");
  if (ring_words_ != 0) device_->destroy_buffer(context_);  // freed once the launches using it are done
  context_ = fresh;
  ring_words_ = ring_words;
  uint32_t header[ctx::kHeaderWords] = {};
  header[ctx::kPrintCapacity] = ring_words;
  device_->write_buffer(context_, 0, header, sizeof header);
}

std::string VulkanDevice::name() const {
  const vk::DeviceInfo& i = device_->info();
  return i.name + " (Vulkan " + version_string(i.api_version) + ", " + to_string(i.type) + ")";
}

VulkanDevice::Tree& VulkanDevice::tree(int id, const char* operation) {
  if (id < 0 || static_cast<size_t>(id) >= trees_.size() || trees_[static_cast<size_t>(id)].words == 0)
    throw InternalError(std::string("Vulkan device: ") + operation + " of tree " + std::to_string(id) +
                        ", which has no buffer");
  return trees_[static_cast<size_t>(id)];
}

void VulkanDevice::check_range(const Tree& t, int id, int64_t offset, int64_t count, const char* operation) {
  if (offset < 0 || count < 0 || offset > t.words - count)
    throw InternalError(std::string("Vulkan device: ") + operation + " of words [" + std::to_string(offset) +
                        ", " + std::to_string(offset) + " + " + std::to_string(count) + ") of tree " +
                        std::to_string(id) + ", which has " + std::to_string(t.words) + " words");
}

void VulkanDevice::create_buffer(int id, int64_t words, std::span<const uint32_t> head) {
  if (words > rt::kMaxTreeWords)
    throw Error("a buffer of " + std::to_string(words) + " words; one holds at most 2^32 words");
  const uint64_t bytes = static_cast<uint64_t>(std::max<int64_t>(words, 1)) * 4;
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
  // The device zero-fills a new buffer (vkCmdFillBuffer): only the head
  // travels from the host, however large the tree.
  t.buffer = device_->create_buffer(bytes, "grove buffer " + std::to_string(id));
  t.words = words;
  if (!head.empty()) device_->write_buffer(t.buffer, 0, head.data(), head.size() * 4);
}

void VulkanDevice::destroy_buffer(int id) {
  Tree& t = tree(id, "destroy_buffer");
  device_->destroy_buffer(t.buffer);  // freed once the launches using it are done
  t = Tree{};
}

void VulkanDevice::flush(Tree& t) {
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

void VulkanDevice::flush_all() {
  for (Tree& t : trees_) flush(t);
}

void VulkanDevice::read_words(int id, int64_t offset, int64_t count, uint32_t* out) {
  Tree& t = tree(id, "read_words");
  check_range(t, id, offset, count, "read_words");
  flush_all();
  if (count > 0) device_->read_buffer(t.buffer, static_cast<uint64_t>(offset) * 4, out, static_cast<uint64_t>(count) * 4);
  if (context_pending_ || recorded_reports_) report_context();
}

// On unified memory (vk::DeviceInfo::unified_memory) host copies of whole
// fields work on the buffer's own mapping, once the work queued before has
// finished; elsewhere they go through read_words and write_words.
std::span<uint32_t> VulkanDevice::host_words(int id) {
  Tree& t = tree(id, "host_words");
  flush_all();
  const std::span<std::byte> bytes = device_->host_memory(t.buffer);
  if (bytes.empty()) return {};
  if (context_pending_ || recorded_reports_) report_context();
  return {reinterpret_cast<uint32_t*>(bytes.data()), static_cast<size_t>(t.words)};
}

void VulkanDevice::write_words(int id, int64_t offset, int64_t count, const uint32_t* in) {
  Tree& t = tree(id, "write_words");
  check_range(t, id, offset, count, "write_words");
  if (count <= 0) return;
  t.pending.push_back({offset, std::vector<uint32_t>(in, in + count)});
  t.pending_words += count;
  if (t.pending_words > kMaxPendingWords) flush(t);
}

// The features a kernel's code needs of a device: 64-bit values, 64-bit
// atomics, and the optional paths the code generator took on this device.
std::unique_ptr<rt::LoadedKernel> VulkanDevice::load(rt::KernelPlan plan) {
  rt::require_backend(plan, "vulkan", "Vulkan");
  const vk::DeviceInfo& info = device_->info();
  const rt::Features& f = plan.features;
  std::string missing;
  auto need = [&](bool needed, bool have, const char* what) {
    if (needed && !have) missing += (missing.empty() ? "" : ", ") + std::string(what);
  };
  const rt::Features have = device_features(info);
#define GROVE_FEATURE(field, device_name) need(f.field, have.field, device_name);
#include "runtime/core/features.def"
  if (!missing.empty())
    throw Error("kernel '" + plan.name + "' needs " + missing + ", which " + info.name + " lacks");
  if (rt::context::push_constant_bytes(plan.arg_words, rt::spreads_over_grid(plan)) > info.max_push_constants_size)
    throw Error("kernel '" + plan.name + "' takes " + std::to_string(uint64_t{plan.arg_words} * 4) +
                " bytes of arguments (and 4 for its message base" +
                std::string(rt::spreads_over_grid(plan) ? ", 12 for its grid's bases" : "") + "); " + info.name +
                " passes at most " +
                std::to_string(info.max_push_constants_size));
  // The target it was made for (plans of Grove before targets had none):
  // what else the code assumes of the device, past the features it uses and
  // the argument bytes it takes, which are checked above.
  const rt::SpirvCode& code = plan.spirv();
  if (code.modules.size() != plan.tasks.size())
    throw Error("kernel '" + plan.name + "': its plan has " + std::to_string(code.modules.size()) +
                " SPIR-V modules for " + std::to_string(plan.tasks.size()) + " tasks");
  if (!code.target.empty()) {
    Target target = parse_target(code.target, "kernel '" + plan.name + "': its Vulkan target");
    target.features = {};
    target.push_constants = 0;
    if (const std::string wrong = mismatch(info, target); !wrong.empty())
      throw Error("kernel '" + plan.name + "' was made for the Vulkan target '" + code.target + "'; " + info.name +
                  " " + wrong);
  }
  auto k = std::make_unique<VulkanKernel>();
  k->plan = std::move(plan);
  records_.add(k->plan);
  const auto push_bytes =
      static_cast<uint32_t>(rt::context::push_constant_bytes(k->plan.arg_words, rt::spreads_over_grid(k->plan)));
  const std::vector<std::vector<uint32_t>>& modules = k->plan.spirv().modules;
  // Every task's pipeline (and count pipeline) compiled at once, on the
  // host's cores, but for the sparse runtime's tasks made before.
  std::vector<PipelineRequest> requests;
  std::vector<std::string> shared_keys;  // per entry point: its key, or "" for a kernel's own
  std::vector<std::optional<PipelineId>> made_before;  // per entry point: the shared pipeline, if made
  for (size_t i = 0; i < k->plan.tasks.size(); ++i) {
    const rt::TaskPlan& t = k->plan.tasks[i];
    const uint32_t buffers = 1 + static_cast<uint32_t>(t.slots.size());
    const bool shared = rt::is_runtime_task(t.kind);
    for (const std::string* entry : {&t.entry_point, &t.count_entry_point}) {
      if (entry->empty()) continue;
      std::string key;
      if (shared) {
        key = *entry + '\n' + std::to_string(buffers) + '\n' + std::to_string(push_bytes) + '\n';
        key.append(reinterpret_cast<const char*>(modules[i].data()), modules[i].size() * sizeof(uint32_t));
      }
      auto found = key.empty() ? shared_pipelines_.end() : shared_pipelines_.find(key);
      made_before.push_back(found == shared_pipelines_.end() ? std::nullopt : std::optional(found->second));
      if (!made_before.back()) requests.push_back({modules[i], *entry, buffers, push_bytes, *entry});
      shared_keys.push_back(std::move(key));
    }
  }
  const std::vector<PipelineId> made = device_->create_pipelines(requests);
  std::vector<PipelineId> ids;
  for (size_t r = 0, next = 0; r < made_before.size(); ++r) {
    ids.push_back(made_before[r] ? *made_before[r] : made[next++]);
    if (!made_before[r] && !shared_keys[r].empty()) shared_pipelines_.emplace(std::move(shared_keys[r]), ids.back());
  }
  size_t next = 0;
  for (const rt::TaskPlan& t : k->plan.tasks) {
    k->pipelines.push_back(ids[next++]);
    k->count_pipelines.emplace_back();
    if (!t.count_entry_point.empty()) k->count_pipelines.back() = ids[next++];
  }
  return k;
}

uint32_t VulkanDevice::group_count(const rt::TaskPlan& task, std::span<const uint64_t> args) const {
  if (!task.parallel) return 1;
  const uint32_t max_groups = device_->info().max_compute_workgroup_count[0];
  const int64_t n = rt::host_iterations(task, args).value_or(-1);
  if (n < 0 && !task.count_entry_point.empty()) return kCountOnDevice;
  if (n < 0) {
    const bool cpu = device_->info().type == DeviceType::cpu;
    const uint32_t invocations = cpu ? kDynamicInvocationsCpu : kDynamicInvocations;
    return std::min(max_groups, std::max<uint32_t>(1, invocations / task.local_size));
  }
  const int64_t per_group = int64_t{task.local_size} * task.iterations_per_invocation;
  return static_cast<uint32_t>(std::min<int64_t>((n + per_group - 1) / per_group, max_groups));
}

std::vector<Dispatch> VulkanDevice::dispatches(rt::LoadedKernel& compiled, std::span<const uint64_t> args,
                                               const std::vector<bool>& run, std::span<const int> slot_buffers) {
  auto& k = static_cast<VulkanKernel&>(compiled);
  const rt::KernelPlan& plan = k.plan;
  std::vector<uint32_t> push(rt::context::push_constant_bytes(plan.arg_words, rt::spreads_over_grid(plan)) / 4, 0u);
  for (size_t n = 0; n < plan.args.size() && n < args.size(); ++n) {
    const uint32_t at = plan.args[n].word;
    push[at] = static_cast<uint32_t>(args[n]);  // 64-bit values: low word first
    if (plan.args[n].words == 2) push[at + 1] = static_cast<uint32_t>(args[n] >> 32);
  }
  push[plan.arg_words] = rt::ContextRecords::message_base(plan);
  std::vector<Dispatch> out;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    if (i < run.size() && !run[i]) continue;
    const rt::TaskPlan& task = plan.tasks[i];
    Dispatch d;
    d.buffers.push_back(context_);
    for (int slot : task.slots) d.buffers.push_back(tree(slot_buffers[static_cast<size_t>(slot)], "launch").buffer);
    d.push_constants = push;
    if (profiling_) d.tag = timing_tag(plan, i);
    if (!task.grid.empty()) {
      // A dispatch per block of the grid that the device launches at once
      // (one but for a grid past 65535 groups along an axis, on devices
      // that take no more), each passing its first iteration along each
      // axis (the code adds it where the count may need it).
      const std::vector<int64_t> counts = rt::grid_counts(
          task, args, "task " + std::to_string(i) + " ('" + task.label + "') of kernel '" + plan.name + "'");
      const auto& most = device_->info().max_compute_workgroup_count;
      std::array<int64_t, 3> groups{1, 1, 1};  // x first: the task's own loop is the outermost axis
      std::array<uint32_t, 3> size{1, 1, 1};
      for (size_t a = 0; a < counts.size(); ++a) {
        const size_t dim = counts.size() - 1 - a;
        size[dim] = a == 0 ? task.local_size : task.grid[a - 1].local_size;
        groups[dim] = (counts[a] + size[dim] - 1) / size[dim];
      }
      d.pipeline = k.pipelines[i];
      for (int64_t z = 0; z < groups[2]; z += most[2])
        for (int64_t y = 0; y < groups[1]; y += most[1])
          for (int64_t x = 0; x < groups[0]; x += most[0]) {
            Dispatch part = d;
            part.group_count_x = static_cast<uint32_t>(std::min<int64_t>(most[0], groups[0] - x));
            part.group_count_y = static_cast<uint32_t>(std::min<int64_t>(most[1], groups[1] - y));
            part.group_count_z = static_cast<uint32_t>(std::min<int64_t>(most[2], groups[2] - z));
            const int64_t first[3] = {x, y, z};
            for (uint32_t axis = 0; axis < 3; ++axis)
              part.push_constants[ctx::grid_base_word(plan.arg_words, axis)] =
                  static_cast<uint32_t>(first[axis] * size[axis]);
            out.push_back(std::move(part));
          }
      continue;
    }
    const uint32_t groups = group_count(task, args);
    if (groups == kCountOnDevice) {
      // The count entry point writes the group counts this dispatch reads.
      Dispatch count = d;
      count.pipeline = *k.count_pipelines[i];
      count.group_count_x = 1;
      count.tag |= kCountTag;
      out.push_back(std::move(count));
      d.indirect_buffer = context_;
      d.indirect_offset = uint64_t{ctx::kGroupCounts} * 4;
    } else {
      if (groups == 0) continue;
      d.group_count_x = groups;
    }
    d.pipeline = k.pipelines[i];
    out.push_back(std::move(d));
  }
  return out;
}

void VulkanDevice::launch(rt::LoadedKernel& compiled, std::span<const uint64_t> args, const std::vector<bool>& run,
                          std::span<const int> slot_buffers) {
  const rt::KernelPlan& plan = compiled.plan;
  flush_all();
  const std::vector<Dispatch> ds = dispatches(compiled, args, run, slot_buffers);
  if (!ds.empty()) device_->launch(ds);
  if (records_.launched(plan)) context_pending_ = true;
  // Debug mode: an error names the launch that caused it. A kernel that
  // prints: its output appears when the launch returns, in order with the
  // host's own output, and a printing loop cannot overflow the print ring.
  if (options_.debug || plan.prints) sync();
}

void VulkanDevice::record(rt::LoadedKernel& compiled, std::span<const uint64_t> args, const std::vector<bool>& run,
                          std::span<const int> slot_buffers, void* command_buffer) {
  // Host writes go first, in Grove's own submission, which the
  // application's command buffer follows on the queue.
  flush_all();
  device_->record(command_buffer, dispatches(compiled, args, run, slot_buffers));
  // What the recorded kernel prints or asserts is read at every later sync
  // and host read, once the application has run it.
  if (records_.launched(compiled.plan)) recorded_reports_ = true;
}

void VulkanDevice::sync() {
  flush_all();
  device_->sync();
  if (context_pending_ || recorded_reports_) report_context();
}

void VulkanDevice::report_context() {
  context_pending_ = false;
  uint32_t header[ctx::kHeaderWords];
  device_->read_buffer(context_, 0, header, sizeof header);
  if (!rt::ContextRecords::any(header)) return;
  uint32_t cleared[ctx::kHeaderWords] = {};
  cleared[ctx::kPrintCapacity] = ring_words_;
  device_->write_buffer(context_, 0, cleared, sizeof cleared);
  std::vector<uint32_t> ring(std::min(header[ctx::kPrintHead], ring_words_));
  if (!ring.empty()) device_->read_buffer(context_, ctx::kHeaderWords * 4, ring.data(), ring.size() * 4);
  const uint64_t largest = device_->info().max_storage_buffer_range / 4 - ctx::kHeaderWords;
  const uint32_t wanted =
      records_.print(header, ring, ring_words_, static_cast<uint32_t>(std::min<uint64_t>(largest, UINT32_MAX)));
  if (wanted > ring_words_) create_context(wanted);
  records_.raise_assertion(header);
}

}  // namespace

rt::Features device_features(const DeviceInfo& info) {
  rt::Features f;
  f.shader_int64 = info.shader_int64;
  f.shader_float64 = info.shader_float64;
  f.atomic_int64 = info.atomic_int64;
  f.atomic_float32_add = info.atomic_float32_add;
  f.subgroup_arithmetic = info.subgroup_arithmetic;
  f.signed_zero_inf_nan_preserve = info.signed_zero_inf_nan_preserve;
  f.denorm_preserve = info.denorm_preserve;
  return f;
}

std::unique_ptr<rt::Device> make_vulkan_device(const RuntimeOptions& options) {
  return std::make_unique<VulkanDevice>(options);
}

Device* vulkan_device_of(rt::Device& device) {
  auto* v = dynamic_cast<VulkanDevice*>(&device);
  return v != nullptr ? &v->device() : nullptr;
}

void* vulkan_buffer_of(rt::Device& device, int id) {
  auto* v = dynamic_cast<VulkanDevice*>(&device);
  if (v == nullptr) throw Error(device.name() + " is not a Vulkan device: its trees have no VkBuffer");
  return v->buffer_handle(id);
}

}  // namespace grove::vk
