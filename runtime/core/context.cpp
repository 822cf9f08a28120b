// runtime/core/context.cpp — tree instances, the list scheduler, pool checks
// and host access (see context.h).
#include "runtime/core/context.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <limits>

#include "grove/error.h"
#include "runtime/core/assert.h"
#include "runtime/core/scalar.h"

namespace grove::rt {

uint64_t host_memory_bytes() {
  // Asked once: sysconf(_SC_PHYS_PAGES) is a system call, and every host copy checks against it.
  static const uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return uint64_t{1} << 34;
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  }();
  return bytes;
}

void Context::add_type(int id, TreeLayout layout) {
  layout.index();
  types_[id] = std::move(layout);
}

const TreeLayout& Context::type(int id) const {
  auto it = types_.find(id);
  GROVE_ASSERT(it != types_.end(), "tree type " + std::to_string(id) + " is not registered");
  return it->second;
}

// ---- instances ----------------------------------------------------------------------

int Context::take_slot(Instance inst) {
  if (next_id_ == std::numeric_limits<int>::max())
    throw Error("2^31 tree instances were made on " + device_->name() + " by this Program or Module; make a new one");
  inst.id = next_id_;
  inst.alive = true;
  int s = 0;
  if (!free_slots_.empty()) {
    s = free_slots_.back();
    instances_[static_cast<size_t>(s)] = std::move(inst);
    free_slots_.pop_back();
  } else {
    s = static_cast<int>(instances_.size());
    instances_.push_back(std::move(inst));
  }
  slot_of_[next_id_++] = s;
  return instances_[static_cast<size_t>(s)].id;
}

int Context::create_instance(int type_id, std::string name) {
  const TreeLayout& layout = type(type_id);
  const int64_t bytes = layout.total_words * 4;
  if (bytes > device_->max_buffer_bytes())
    throw Error("tree '" + name + "' needs " + std::to_string(bytes) + " bytes, more than the " +
                std::to_string(device_->max_buffer_bytes()) + " bytes one buffer may have on " + device_->name());
  // The buffer first, in the slot the instance will take: a device that
  // cannot make it leaves nothing behind.
  const int s = free_slots_.empty() ? static_cast<int>(instances_.size()) : free_slots_.back();
  const std::vector<uint32_t> head = layout.header_words();
  device_->create_buffer(s, layout.total_words, head);
  // What kernels fill front to back: each pool's entries (taken in
  // order), and the arrays of a tree with no sparse node; past their first
  // 2 MiB, so that an instance using little of a large pool keeps small
  // pages, and large ones cost at most what is used again.
  constexpr int64_t kSmallWords = int64_t{1} << 19;
  auto advise = [&](int64_t offset, int64_t words) {
    if (words > kSmallWords) device_->advise_filled_in_order(s, offset + kSmallWords, words - kSmallWords);
  };
  bool sparse = false;
  for (const SNodeLayout& n : layout.nodes) {
    sparse = sparse || n.is_sparse();
    if (n.has_pool()) advise(n.pool_offset, n.capacity * n.pool_entry_words);
  }
  if (!sparse) advise(layout.root_offset, layout.total_words - layout.root_offset);
  Instance inst;
  inst.type = type_id;
  inst.name = std::move(name);
  inst.words = layout.total_words;
  ++made_by_type_[type_id];
  return take_slot(std::move(inst));
}

int Context::create_buffer(int64_t words, std::string name) {
  const int s = free_slots_.empty() ? static_cast<int>(instances_.size()) : free_slots_.back();
  device_->create_buffer(s, words, {});
  Instance inst;
  inst.name = std::move(name);
  inst.words = words;
  return take_slot(std::move(inst));
}

void Context::resize_buffer(int id, int64_t words) {
  Instance& inst = live(id, "resize");
  GROVE_ASSERT(inst.type < 0, "resize of a tree instance");
  device_->create_buffer(slot(id, "resize"), words, {});
  inst.words = words;
}

void Context::destroy_instance(int id) {
  const int s = slot(id, "destroy");
  device_->destroy_buffer(s);
  instances_[static_cast<size_t>(s)] = Instance{};
  std::erase(dirty_, s);
  slot_of_.erase(id);
  free_slots_.push_back(s);
}

int Context::slot(int id, const char* what) const {
  const auto it = slot_of_.find(id);
  GROVE_ASSERT(it != slot_of_.end(), std::string(what) + " of instance " + std::to_string(id) + ", which does not exist");
  return it->second;
}

const Instance& Context::instance(int id) const { return instances_[static_cast<size_t>(slot(id, "a use"))]; }

bool Context::alive(int id) const { return slot_of_.count(id) != 0; }

std::string Context::name_of(int id) const {
  return alive(id) ? instance(id).name : "#" + std::to_string(id) + " (destroyed)";
}

int Context::buffer_of(int id) const { return slot(id, "the buffer"); }

int Context::instances_made(int type) const {
  auto it = made_by_type_.find(type);
  return it == made_by_type_.end() ? 0 : it->second;
}

void Context::mark_pools_dirty(int s) {
  Instance& inst = instances_[static_cast<size_t>(s)];
  if (!inst.pools_dirty) dirty_.push_back(s);
  inst.pools_dirty = true;
}

Instance& Context::live(int id, const char* what) { return instances_[static_cast<size_t>(slot(id, what))]; }

void Device::record(LoadedKernel& kernel, std::span<const uint64_t>, const std::vector<bool>&, std::span<const int>,
                    void*) {
  throw Error("kernel '" + kernel.plan.name + "': " + name() +
              " cannot record launches into a command buffer; only a Vulkan device can");
}

// ---- launches -----------------------------------------------------------------------

bool Context::schedule(const TaskPlan& t, std::span<const int> slots) {
  for (const TaskPlan::Modified& m : t.modifies) {
    ListSchedule& s = instances_[static_cast<size_t>(slots[static_cast<size_t>(m.slot)])].schedule;
    s.modified[m.snode] = ++s.epoch;
  }
  if (t.kind != TaskKind::clear_list && t.kind != TaskKind::listgen) return true;
  const int inst = slots[static_cast<size_t>(t.tree_slot)];
  ListSchedule& s = instances_[static_cast<size_t>(inst)].schedule;
  if (t.kind == TaskKind::clear_list) {
    // A list is up to date when it was generated after the last change of
    // every node above it. The list of S holds S's containers, which are
    // the active cells of S's parent: a change of S's own cells leaves it
    // as it is (and an activation below S marks every sparse node on its
    // path, so the nodes above see it).
    const TreeLayout& layout = type(instances_[static_cast<size_t>(inst)].type);
    auto gen = s.generated.find(t.snode);
    // A command buffer recorded with this instance may run at any time, so
    // no list of it is ever known to be fresh.
    bool fresh = gen != s.generated.end() && !instances_[static_cast<size_t>(inst)].recorded;
    for (int n = layout.node(t.snode).parent; n >= 0 && fresh; n = layout.node(n).parent) {
      auto mod = s.modified.find(n);
      if (mod != s.modified.end() && mod->second >= gen->second) fresh = false;
    }
    s.skip[t.snode] = fresh;
    return !fresh;
  }
  if (s.skip[t.snode]) return false;
  s.generated[t.snode] = ++s.epoch;
  ++s.runs[t.snode];
  return true;
}

std::vector<int> Context::bind(const KernelPlan& plan, std::span<const int> slot_instances, const char* how) {
  GROVE_ASSERT(slot_instances.size() == plan.slots.size(), "kernel '" + plan.name + "' " + how + " with " +
                                                                 std::to_string(slot_instances.size()) + " of its " +
                                                                 std::to_string(plan.slots.size()) + " slots bound");
  std::vector<int> slots(slot_instances.size());
  for (size_t n = 0; n < slot_instances.size(); ++n) slots[n] = slot(slot_instances[n], "a launch");
  return slots;
}

void Context::launch(LoadedKernel& kernel, std::span<const uint64_t> args, std::span<const int> slot_instances) {
  const KernelPlan& plan = kernel.plan;
  const std::vector<int> slots = bind(plan, slot_instances, "launched");
  // The scheduler decides on the host, before anything is queued, which
  // list generations this launch can skip (nothing it reads is on a device).
  std::vector<bool> run(plan.tasks.size());
  for (size_t i = 0; i < run.size(); ++i) run[i] = schedule(plan.tasks[i], slots);
  // Marked before the launch: one that raises (a failed debug-mode check)
  // may still have found a pool full, which the next check must report.
  if (plan.may_allocate)
    for (int s : slots) mark_pools_dirty(s);
  device_->launch(kernel, args, run, slots);
  if (device_->profiling()) take_times();
  if (device_->synchronous()) check_pools();
}

void Context::record(LoadedKernel& kernel, std::span<const uint64_t> args, std::span<const int> slot_instances,
                     void* command_buffer) {
  const KernelPlan& plan = kernel.plan;
  const std::vector<int> slots = bind(plan, slot_instances, "recorded");
  // Every task is recorded: when the command buffer runs, and how often,
  // only the application knows. Marked first, so that the scheduler skips
  // nothing for these instances from here on (schedule()); their pools are
  // checked at each sync.
  for (int s : slots) {
    Instance& i = instances_[static_cast<size_t>(s)];
    i.recorded = true;
    if (plan.may_allocate) mark_pools_dirty(s);
  }
  for (const TaskPlan& t : plan.tasks) schedule(t, slots);
  device_->record(kernel, args, std::vector<bool>(plan.tasks.size(), true), slots, command_buffer);
}

void Context::sync() {
  device_->sync();
  if (device_->profiling()) take_times();
  check_pools();
}

void Context::set_profiling(bool on) { device_->set_profiling(on); }

void Context::take_times() {
  times_.clear();
  device_->take_task_times(times_);
  for (const TaskTime& t : times_) profile_.add(t);
}

const Profile& Context::profile() {
  take_times();
  return profile_;
}

void Context::clear_profile() {
  take_times();
  profile_.clear();
}

void Context::check_pools() {
  // Every read first: the flags are cleared only once nothing more can
  // throw before the counters are reset, so that no failure goes unreported.
  struct Report {
    int instance;
    int pool;
    uint32_t alloc, append;
  };
  std::vector<Report> reports;
  std::vector<int> checked;
  for (int id : dirty_) {
    const auto i = static_cast<size_t>(id);
    Instance& inst = instances_[i];
    if (!inst.alive || !inst.pools_dirty || inst.type < 0) continue;
    checked.push_back(id);
    const TreeLayout& layout = type(inst.type);
    if (layout.pools.empty()) continue;
    // The pools' states lie side by side in the header, in pool order: one
    // read (one round trip to a device) for all of them.
    const int64_t first = layout.node(layout.pools.front()).state_offset;
    const int64_t words = static_cast<int64_t>(layout.pools.size()) * kPoolStateWords;
    std::vector<uint32_t> states(static_cast<size_t>(words));
    device_->read_words(static_cast<int>(i), first, words, states.data());
    for (int p : layout.pools) {
      const uint32_t* state = states.data() + (layout.node(p).state_offset - first);
      if (state[kAllocFailures] != 0 || state[kAppendFailures] != 0)
        reports.push_back({static_cast<int>(i), p, state[kAllocFailures], state[kAppendFailures]});
    }
  }
  std::string problems;
  for (const Report& r : reports) {
    const Instance& inst = instances_[static_cast<size_t>(r.instance)];
    const SNodeLayout& s = type(inst.type).node(r.pool);
    const bool several = std::count_if(instances_.begin(), instances_.end(),
                                       [&](const Instance& other) { return other.alive && other.type == inst.type; }) > 1;
    const std::string where = "SNode '" + s.name() + "'" + (several ? " of tree '" + inst.name + "'" : "");
    if (r.alloc != 0) {
      problems += (problems.empty() ? "" : "; ") + where + " ran out of pool memory (" + std::to_string(r.alloc) +
                  " allocation(s) failed, capacity " + std::to_string(s.capacity) +
                  (s.type == SNodeType::dynamic ? " chunks" : " cells") +
                  "): raise it with SNode::capacity(...) or Config::device_memory";
    }
    if (r.append != 0) {
      problems += (problems.empty() ? "" : "; ") + where + ": " + std::to_string(r.append) +
                  " append(s) past the maximum length " + std::to_string(s.num_cells) + " were dropped";
    }
    allocation_failures_ += r.alloc + r.append;
    static_assert(kAppendFailures == kAllocFailures + 1);
    const uint32_t zero[2] = {0, 0};
    device_->write_words(r.instance, s.state_offset + kAllocFailures, 2, zero);
  }
  for (int i : checked) {
    Instance& inst = instances_[static_cast<size_t>(i)];
    inst.pools_dirty = inst.recorded;  // a recorded command buffer may run again
  }
  // The list keeps the instances still dirty (recorded ones), and loses
  // the destroyed.
  std::erase_if(dirty_, [&](int id) {
    Instance& inst = instances_[static_cast<size_t>(id)];
    if (!inst.alive) inst.pools_dirty = false;
    return !inst.pools_dirty;
  });
  if (!problems.empty()) throw KernelError(problems + " (everything stored before is intact)");
}

// ---- host access --------------------------------------------------------------------

uint32_t Context::read_word(int inst, int64_t address) {
  uint32_t w = 0;
  read_words(inst, address, 1, &w);
  return w;
}

namespace {

// Host access stays inside the buffer whatever the words it follows say
// (a layout from a module file, slots written by kernels).
int64_t checked(int64_t words, const std::string& name, int64_t offset, int64_t count) {
  if (offset < 0 || count < 0 || offset > words - count)
    throw Error("host access to words " + std::to_string(offset) + " to " + std::to_string(offset + count) + " of '" +
                name + "', which has " + std::to_string(words) + " words (its contents are corrupt)");
  return offset;
}

int64_t checked(const Instance& inst, int64_t offset, int64_t count) {
  return checked(inst.words, inst.name, offset, count);
}

}  // namespace

void Context::read_words(int inst, int64_t offset, int64_t count, uint32_t* out) {
  const int s = slot(inst, "a read");
  device_->read_words(s, checked(instances_[static_cast<size_t>(s)], offset, count), count, out);
}

void Context::write_words(int inst, int64_t offset, int64_t count, const uint32_t* in) {
  const int s = slot(inst, "a write");
  device_->write_words(s, checked(instances_[static_cast<size_t>(s)], offset, count), count, in);
}

WordReader Context::snapshot(int inst, std::vector<uint32_t>& copy) {
  copy.resize(static_cast<size_t>(live(inst, "a read").words));
  device_->read_words(slot(inst, "a read"), 0, static_cast<int64_t>(copy.size()), copy.data());
  return [&copy, name = instance(inst).name](int64_t a) {
    return copy[static_cast<size_t>(checked(static_cast<int64_t>(copy.size()), name, a, 1))];
  };
}

Context::HostSpan Context::host_span(int inst, std::span<const FieldWalk> walks, std::vector<uint32_t>& copy,
                                    bool overwrite) {
  if (std::span<uint32_t> own = device_->host_words(slot(inst, "a read")); !own.empty()) return {own, 0, true};
  bool dense = true;
  int64_t lo = INT64_MAX, hi = 0, words = 0;
  for (const FieldWalk& w : walks) {
    dense = dense && w.dense();
    words += w.words();
    if (w.elements() > 0) {
      lo = std::min(lo, w.first_word());
      hi = std::max(hi, w.end_word());
    }
  }
  if (!dense) {
    snapshot(inst, copy);
    return {copy, 0, false};
  }
  if (hi <= lo) {
    copy.clear();
    return {copy, 0, false};
  }
  copy.resize(static_cast<size_t>(hi - lo));
  // Distinct words each: elements as many as the span's words fill it.
  if (!overwrite || words != hi - lo) read_words(inst, lo, hi - lo, copy.data());
  return {copy, lo, false};
}

void Context::store_fields(int inst, std::span<const FieldWalk> walks, std::span<const DataType> dtypes,
                           const void* values, size_t value_bytes, bool each, bool sparse, std::vector<uint32_t>& copy,
                           const std::function<void(size_t component)>& fill) {
  const size_t n = walks.size();
  const size_t width = FieldWalk::interleaved(walks) ? n : 1;  // components side by side: all at once
  // Stores the values and sends the words back where they are a copy; with
  // `inactive`, skips the elements of inactive cells and says whether there
  // were any (and then sends nothing).
  auto store = [&](bool overwrite, bool* inactive) {
    const HostSpan words = host_span(inst, walks, copy, overwrite);
    int64_t lo = INT64_MAX, hi = 0;
    for (size_t c = 0; c < n; c += width) {
      const auto [first, end] = store_elements(walks[c], dtypes[c], words.words, words.from, values, value_bytes,
                                               each, n, c, width, inactive);
      if (end > first) {
        lo = std::min(lo, first);
        hi = std::max(hi, end);
      }
    }
    if ((inactive != nullptr && *inactive) || words.in_place || hi <= lo) return;
    write_words(inst, lo, hi - lo, words.words.data() + (lo - words.from));
  };
  if (!sparse) {
    store(true, nullptr);
    return;
  }
  // Where every cell is active already the values are stored as they are:
  // always for a copy (its values come from the host anyway); for a fill
  // only where the buffer is host memory (elsewhere its kernel writes the
  // value on the device, where a store would bring the buffer over and back).
  if (each || in_host_memory(inst)) {
    bool inactive = false;
    store(false, &inactive);
    if (!inactive) return;
  }
  for (size_t c = 0; c < n; ++c) fill(c);
  check_pools();
  if (each) store(true, nullptr);  // after the launches
}

bool Context::store_if_active(int inst, const TreeLayout& layout, int field, const int64_t* physical, DataType dtype,
                              uint64_t bits) {
  const std::span<uint32_t> own = device_->host_words(slot(inst, "a write"));
  if (own.empty()) return false;
  const auto total = static_cast<int64_t>(own.size());
  const std::string& name = instance(inst).name;
  const int64_t a = layout.find_element(
      field, physical, [&](int64_t w) { return own[static_cast<size_t>(checked(total, name, w, 1))]; });
  if (a < 0) return false;
  store_element(own, checked(total, name, a, storage_words(dtype)), dtype, bits);
  return true;
}

WordReader Context::paged(int inst, PageCache& cache) {
  static constexpr int64_t kPage = 1 << 14;
  const int64_t total = live(inst, "a read").words;
  return [this, s = slot(inst, "a read"), total, name = instance(inst).name, &cache](int64_t a) {
    const int64_t page = checked(total, name, a, 1) / kPage;
    auto it = cache.find(page);
    if (it == cache.end()) {
      const int64_t begin = page * kPage, count = std::min(kPage, total - begin);
      std::vector<uint32_t> words(static_cast<size_t>(count));
      device_->read_words(s, begin, count, words.data());
      it = cache.emplace(page, std::move(words)).first;
    }
    return it->second[static_cast<size_t>(a % kPage)];
  };
}

std::vector<NodeStats> Context::stats(int inst_id) {
  const Instance& inst = live(inst_id, "stats");
  const TreeLayout& layout = type(inst.type);
  PageCache cache;
  const WordReader w = paged(inst_id, cache);
  std::vector<NodeStats> out;
  for (const SNodeLayout& s : layout.nodes) {
    if (s.type == SNodeType::place) continue;
    NodeStats ns;
    ns.id = s.id;
    ns.name = s.name();
    ns.type = s.type;
    ns.active_cells = layout.count_active(s.id, w);
    ns.capacity = s.max_cells;
    if (s.has_pool()) {
      auto word = [&](int64_t which) { return int64_t{w(s.state_offset + which)}; };
      ns.pool_capacity = s.capacity;
      // Tickets took the allocation order's first min(tickets, capacity)
      // positions; of those entries, the ones in the spare bitmap or in
      // the gc queue are not in use (see PoolState).
      const int64_t tickets = word(kTickets);
      int64_t waiting = 0;
      for (int64_t k = 0; k < (s.capacity + 31) / 32; ++k) waiting += std::popcount(w(s.spare_offset + k));
      ns.pool_used = std::min(tickets, s.capacity) - waiting - word(kQueueCount);
      ns.pool_high_water = std::max(word(kHighWater), ns.pool_used);
    }
    if (s.has_list()) {
      ns.list_length = std::min<int64_t>(w(s.list_offset), s.list_capacity);
      auto runs = inst.schedule.runs.find(s.id);
      ns.listgen_runs = runs == inst.schedule.runs.end() ? 0 : runs->second;
    }
    out.push_back(std::move(ns));
  }
  return out;
}

}  // namespace grove::rt
