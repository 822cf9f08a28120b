// runtime/core/context.h — the runtime's state on one device: tree types,
// tree instances (buffers of a type's layout, each with its own lists and
// pool state), the list scheduler, pool-failure checks, and host access that
// walks a layout. Launches take a loaded kernel plan and the instances bound
// to its slots; nothing here knows IR (DESIGN.md, "Compile time and run time").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/core/device.h"
#include "runtime/core/field_walk.h"
#include "runtime/core/plan.h"
#include "runtime/core/profile.h"
#include "runtime/core/tree_layout.h"

namespace grove::rt {

// The list scheduler's memory for one instance (DESIGN.md, "List
// generation"): when each node's activity last may have changed and when
// each list was last generated, on one epoch counter.
struct ListSchedule {
  int64_t epoch = 0;
  std::unordered_map<int, int64_t> modified;   // by node id
  std::unordered_map<int, int64_t> generated;  // by node id; absent = never
  std::unordered_map<int, int64_t> runs;       // listgen runs by node id
  std::unordered_map<int, bool> skip;          // decided at clear_list, applied to its listgen
};

struct Instance {
  int type = -1;            // its tree type; -1 for a plain buffer (scratch)
  std::string name;
  int64_t words = 0;
  ListSchedule schedule;
  bool pools_dirty = false;  // a launch may have left pool failures in its header
  bool recorded = false;     // bound to a launch recorded into an application's command buffer
  bool alive = false;
  int id = -1;               // the instance's id (its slot is where it sits)
};

// Statistics of one node of one instance (grove::SNodeStats in the API).
struct NodeStats {
  int id = 0;
  std::string name;
  SNodeType type = SNodeType::dense;
  int64_t active_cells = 0, capacity = 0;
  int64_t pool_used = 0, pool_capacity = 0, pool_high_water = 0;
  int64_t list_length = 0, listgen_runs = 0;
};

// Bytes of physical memory on the host (the bound for host copies).
uint64_t host_memory_bytes();

class Context {
 public:
  explicit Context(std::unique_ptr<Device> device) : device_(std::move(device)) {}
  Device& device() { return *device_; }
  const Device& device() const { return *device_; }

  // ---- tree types ----
  // Registers the layout of tree type `id` (the compiler's tree id, or an
  // AOT module's).
  void add_type(int id, TreeLayout layout);
  bool has_type(int id) const { return types_.count(id) != 0; }
  const TreeLayout& type(int id) const;

  // ---- instances ----
  // An instance's id is never given to another: a handle kept after
  // destroy_instance names nothing, and is refused. Its slot, the device's
  // buffer id, is reused, so a destroyed instance costs nothing.
  // A zeroed instance of tree type `type` (only its header words are sent);
  // raises grove::Error when the device cannot hold it.
  int create_instance(int type, std::string name);
  // A zeroed buffer of `words` words that is no tree (the scratch buffer).
  int create_buffer(int64_t words, std::string name);
  // Replaces a plain buffer by a zeroed one of `words` words.
  void resize_buffer(int id, int64_t words);
  void destroy_instance(int id);
  const Instance& instance(int id) const;  // a live one
  bool alive(int id) const;
  // The instance's name, or "#<id> (destroyed)".
  std::string name_of(int id) const;
  // The device's buffer id of a live instance.
  int buffer_of(int id) const;
  // Buffers made on the device: the live instances' and free ones.
  size_t buffers() const { return instances_.size(); }
  // How many instances of `type` were ever created (destroyed ones included).
  int instances_made(int type) const;

  // ---- launches ----
  // Launches `kernel` with slot s bound to instance `slot_instances[s]`:
  // decides which list generations to skip (nothing that changed since a
  // list was made could have changed it), marks the instances that may now
  // hold pool failures, and on a synchronous device checks them.
  void launch(LoadedKernel& kernel, std::span<const uint64_t> args, std::span<const int> slot_instances);
  // As launch(), recorded into an application's command buffer (every
  // task: the buffer may run any number of times, at any time).
  void record(LoadedKernel& kernel, std::span<const uint64_t> args, std::span<const int> slot_instances,
              void* command_buffer);
  // Waits for every launch, then raises the pool failures they left.
  void sync();
  // Raises a grove::Error naming each node whose pool filled up or whose
  // list overflowed since the last check, then clears the counters (reads
  // every header first, so a failed read loses no report).
  void check_pools();
  int64_t allocation_failures() const { return allocation_failures_; }

  // ---- host access (ordered after every launch) ----
  uint32_t read_word(int instance, int64_t address);
  void read_words(int instance, int64_t offset, int64_t count, uint32_t* out);
  void write_words(int instance, int64_t offset, int64_t count, const uint32_t* in);
  // A reader backed by a host copy of the whole buffer (walks that touch
  // many words), and one that fetches the pages it touches (a few words of
  // a large buffer).
  WordReader snapshot(int instance, std::vector<uint32_t>& copy);
  using PageCache = std::unordered_map<int64_t, std::vector<uint32_t>>;
  WordReader paged(int instance, PageCache& cache);
  // The words a host copy of the fields of `walks` works on: the device's
  // buffer itself where it is host memory (Device::host_words; valid until
  // the next launch), else a copy in `copy` of the span their elements lie
  // in when every one is dense, else of the whole buffer (the slots and
  // masks above them too). `overwrite`: the copy stores every element, so
  // a span its elements fill is not read. Copies go back with write_words.
  struct HostSpan {
    std::span<uint32_t> words;
    int64_t from = 0;  // the address of words[0]
    bool in_place = false;
  };
  HostSpan host_span(int instance, std::span<const FieldWalk> walks, std::vector<uint32_t>& copy, bool overwrite);
  // A whole-field copy in (or fill): host values into every element of the
  // fields of `walks` (of types `dtypes`: the components of one field) in
  // `instance`, as store_elements takes them (`value_bytes` each, one per
  // element and component, or one for all where !`each`), through one
  // host_span and one write back. On a sparse path (`sparse`), writes
  // activate, which only a kernel may do: where every cell is active
  // already the values are stored as they are (a fill: where the buffer is
  // host memory); else `fill(c)` launches a kernel that writes every
  // element of component c (for a copy: 0, the values stored after it; for
  // a fill: the value itself), activating every cell.
  void store_fields(int instance, std::span<const FieldWalk> walks, std::span<const DataType> dtypes,
                    const void* values, size_t value_bytes, bool each, bool sparse, std::vector<uint32_t>& copy,
                    const std::function<void(size_t component)>& fill);
  // One element's write, where the instance's buffer is host memory
  // (Device::host_words: the CPU, the interpreter, a Vulkan device of
  // unified memory) and the element's cell is active already: the element
  // (`physical`, its field's physical indices; of type `dtype`) is found
  // and `bits` stored in place, no kernel launched; true. False where a
  // kernel must write it: its cell is inactive (a write activates), or
  // finding the cell would read the device word by word.
  bool store_if_active(int instance, const TreeLayout& layout, int field, const int64_t* physical, DataType dtype,
                       uint64_t bits);
  // Whether the instance's buffer is host memory (Device::host_words).
  bool in_host_memory(int instance) { return !device_->host_words(slot(instance, "a query")).empty(); }
  // Every node of the instance's type but its places.
  std::vector<NodeStats> stats(int instance);

  // ---- profiling ----
  // Times every task of every later launch on the device's clock (raises
  // grove::Error when the device has none); off: stops, keeping the tally.
  void set_profiling(bool on);
  bool profiling() const { return device_->profiling(); }
  // The tally of the tasks of finished launches (sync() first for all).
  const Profile& profile();
  void clear_profile();

 private:
  bool schedule(const TaskPlan& task, std::span<const int> slot_instances);
  // The buffer slots of a launch's instances, once every slot is bound to a
  // live instance (`how`: "launched", "recorded").
  std::vector<int> bind(const KernelPlan& plan, std::span<const int> slot_instances, const char* how);
  Instance& live(int id, const char* what);
  int slot(int id, const char* what) const;  // of a live instance
  // A free slot for instance `id` (a new one when none is free).
  int take_slot(Instance inst);
  void mark_pools_dirty(int slot);

  std::unique_ptr<Device> device_;
  std::map<int, TreeLayout> types_;
  // The live instances by slot (a free slot holds one that is not alive),
  // the free slots, and the slot of each live id.
  std::vector<Instance> instances_;
  std::vector<int> free_slots_;
  std::unordered_map<int, int> slot_of_;
  int next_id_ = 0;
  std::vector<int> dirty_;              // the slots whose pools_dirty is set
  std::map<int, int> made_by_type_;     // instances_made
  int64_t allocation_failures_ = 0;
  Profile profile_;
  std::vector<TaskTime> times_;  // take_times()'s buffer
  void take_times();
};

}  // namespace grove::rt
