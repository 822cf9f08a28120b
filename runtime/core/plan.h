// runtime/core/plan.h — what compiling a kernel produces, as a plain value:
// the kernel plan. A runtime launches a plan with nothing from the compiler
// (DESIGN.md, "Compile time and run time"): per task its kind, the SNode it
// visits, what it may modify (for list reuse), how its iteration count is
// found at launch, its local size and its entry points; per kernel its
// arguments, its tree slots, its messages, the device features it needs and
// its code, which is one of the kinds of code the backends make (PlanCode).
// A plan serializes to bytes and back exactly (a versioned format whose
// reader checks every size before it trusts it) and prints as JSON.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "grove/types.h"

namespace grove::rt {

// The kinds of task (docs/ir.md, "Offloaded stage"); the scheduler reads them.
enum class TaskKind : uint8_t { serial, range_for, struct_for, listgen, clear_list, gc, gc_finish };
const char* task_kind_name(TaskKind k);
bool is_parallel(TaskKind k);
// The sparse runtime's own tasks (clear_list, listgen, gc, gc_finish): their
// code depends on their node alone, the same in every kernel over it, so a
// backend makes it once and shares it between kernels.
bool is_runtime_task(TaskKind k);

// An integer computed from constants and kernel arguments on the host at
// launch: a parallel loop's bounds. Empty (root < 0) when the value is only
// known on the device (a list's length, a value read from a tree): the
// task's count entry point (TaskPlan::count_entry_point) then finds the
// count there, or, without one, the backend launches a fixed number of
// invocations, which a grid-stride loop spreads over any count.
struct CountExpr {
  enum class Op : uint8_t { constant, arg, cast, add, sub, mul, div, min, max };
  struct Node {
    Op op = Op::constant;
    DataType type = DataType::i32;  // the type the node computes in (integers only)
    int64_t value = 0;              // constant: the value; arg: the argument number
    int32_t a = -1, b = -1;         // operand nodes (cast: a)
  };
  std::vector<Node> nodes;
  int32_t root = -1;

  bool known() const { return root >= 0; }
  // The value for `args` (bit patterns of the kernel's arguments, in their
  // compute types), with the IR's integer semantics (wrapping; x / 0 == 0);
  // nullopt when not known on the host.
  std::optional<int64_t> evaluate(std::span<const uint64_t> args) const;
};

// An inner axis of a parallel task spread over a 2-D or 3-D launch grid (a
// grid loop, ir::Stmt::grid): its iteration count, as the task's own loop
// gives its count, and the group size along it.
struct GridAxis {
  int64_t static_iterations = -1;  // the count when constant, else -1
  CountExpr begin, end;            // else evaluated at launch
  uint32_t local_size = 1;
};

struct TaskPlan {
  TaskKind kind = TaskKind::serial;
  std::string label;              // the task's label in the IR, e.g. "listgen S1pointer->S2dense"
  int snode = -1;                 // listgen, clear_list: the list's node; gc: the pool's; struct_for: the node
  int tree_slot = -1;             // the slot of `snode`'s tree instance
  // Nodes (of the instance in a slot) whose activity the task may change.
  struct Modified {
    int slot = -1;
    int snode = -1;
    bool operator==(const Modified&) const = default;
  };
  std::vector<Modified> modifies;
  bool parallel = false;
  uint32_t local_size = 1;
  // Parallel tasks: the loop's iteration count is end - begin (at least 0):
  // a constant when static_iterations >= 0, else begin and end evaluated at
  // launch when known. An invocation takes iterations_per_invocation of them
  // on average (above 1 for a loop that sums in registers).
  int64_t static_iterations = -1;
  CountExpr begin, end;
  uint32_t iterations_per_invocation = 1;
  // The inner axes of a task whose code spreads its loop nest over a 2-D or
  // 3-D grid, innermost last (on the grid's x; the task's own loop is the
  // outermost, with local_size invocations of a group along it); empty for
  // a task of one axis. A launch runs ceil(count / local_size) groups along
  // each axis, as many as the device takes (the code loops past them).
  std::vector<GridAxis> grid;
  std::vector<int> slots;         // tree slots bound after the context buffer, in order
  std::string entry_point;         // its function in the plan's code
  // A second entry point, run as one invocation before the task, that
  // writes the task's group counts for an indirect dispatch (Vulkan: when
  // the count is only known on the device); empty when there is none.
  std::string count_entry_point;
};

// A plan's code: one kind per kind of executor, so that what the bytes mean
// never depends on a backend name read beside them.
//
// Vulkan: a SPIR-V module per task (in KernelPlan::tasks' order) holding
// its entry point and count entry point, and the target they were compiled
// for (runtime/vulkan/target.h; empty: the compiling device's own).
struct SpirvCode {
  std::vector<std::vector<uint32_t>> modules;
  std::string target;
};
// The CPU: the whole kernel as one ELF shared object whose symbols are the
// tasks' entry points, and the machine it was compiled for: the target
// triple and CPU name ("x86_64-pc-linux-gnu, znver4"), and the
// instruction-set features its code may use, in LLVM's spelling
// ("+avx2,+fma,-sse4a,...").
struct ElfCode {
  std::vector<uint8_t> object;
  std::string target, target_features;
  // Compiled for one thread (a Program with Config::cpu_threads = 1): its
  // atomics are plain loads and stores, so a device runs its tasks on the
  // launching thread alone, whatever its own threads.
  bool one_thread = false;
};
// CUDA: the kernel's PTX for `target` ("sm_75"...), and what the driver
// compiled it into for one GPU (a cubin), and for which ("sm_90, driver
// 13000"). A device of that sm and driver loads the binary without
// compiling; any other compiles the PTX, and its loaded plan then carries
// its own binary (the CUDA backend keeps it in its disk cache). AOT modules
// leave the binary out (it holds for one driver only).
struct PtxCode {
  std::string ptx;
  std::string target;
  std::vector<uint8_t> binary;
  std::string binary_target;
};
// The interpreter runs the kernel's IR, which its backend keeps: a plan
// for it carries no code.
struct NoCode {};
using PlanCode = std::variant<NoCode, SpirvCode, ElfCode, PtxCode>;
// The code kind's name ("SPIR-V", "an ELF object", "PTX", "no code"), for
// messages.
const char* code_kind_name(const PlanCode& code);

struct ArgPlan {
  std::string name;
  DataType type = DataType::unknown;  // as declared (f16 arrives as its compute type, f32)
  uint32_t word = 0;                   // first push-constant word
  uint32_t words = 1;                  // 1, or 2 for 64-bit values
};

// A tree slot: what the IR's `@t<slot>` of a tree statement names. The
// Program binds slots to tree instances at launch.
struct TreeSlotPlan {
  enum class Kind : uint8_t { scratch, tree };
  Kind kind = Kind::tree;
  int tree_type = -1;  // Kind::tree: the tree type, a layout of the program (or module)
  int param = -1;      // the kernel's tree parameter bound to it, or -1: the type's implicit instance
};

// Bounds a plan read from bytes must keep (deserialize_plan checks them, so
// that no absurd number reaches an allocation or a 32-bit product): the
// argument words of a kernel (Grove makes at most two per argument, and a
// kernel has at most kMaxKernelArgs).
inline constexpr uint32_t kMaxKernelArgs = 1u << 15;
inline constexpr uint32_t kMaxArgWords = 2 * kMaxKernelArgs;

struct MessagePlan {
  // Its id in the context buffer's records: in a plan as compiled (and as
  // read from bytes, which do not hold it), its index in the plan's
  // messages; in a loaded plan, the id its device gave it
  // (ContextRecords::add, context::kMessageBase).
  uint32_t id = 0;
  bool is_assert = false;
  std::string format;     // "{}" per value
  std::vector<DataType> types;
};

// What a plan's code needs of its device (runtime/core/features.def).
struct Features {
#define GROVE_FEATURE(field, device_name) bool field = false;
#include "runtime/core/features.def"
  // Every feature either has; `f` needs nothing this one lacks.
  Features& operator|=(const Features& f);
  bool covers(const Features& f) const;
};

struct KernelPlan {
  std::string name;
  std::vector<ArgPlan> args;
  uint32_t arg_words = 0;         // push-constant words in all
  std::vector<TreeSlotPlan> slots;
  std::vector<TaskPlan> tasks;
  std::vector<MessagePlan> messages;
  Features features;              // what the code needs of the device
  bool may_allocate = false;      // some task may activate: pool failures are possible
  bool prints = false;            // has a print (launches of it wait, so its output comes in order)
  int64_t scratch_words = 0;      // words of the scratch slot it uses
  PlanCode code;                  // its kind says which backend runs the plan

  // The backend whose devices run the code: "interp" (no code), "vulkan"
  // (SPIR-V), "cpu" (an ELF object), "cuda" (PTX).
  std::string_view backend() const;
  // The code as the kind a device runs; grove::Error naming the kernel and
  // both kinds when it holds another.
  const SpirvCode& spirv() const;
  SpirvCode& spirv();
  const ElfCode& elf() const;
  ElfCode& elf();
  const PtxCode& ptx() const;
  PtxCode& ptx();
};

// The group sizes along the axes of a grid (outermost first; counts -1
// where only a launch knows them), chosen from the innermost out: a power of
// two covering a constant count, else 64 along x and the rest of the group
// along y and z; within `invocations` in all and the least every Vulkan
// device takes along each axis (x: `invocations`, y: 128, z: 64).
std::vector<uint32_t> grid_group_sizes(std::span<const int64_t> counts, uint32_t invocations);

// Whether the host knows a parallel task's iteration count at launch: a
// constant, or bounds made of constants and arguments.
bool counted_on_host(const TaskPlan& task);
// That count: the constant, or max(end - begin, 0) of the bounds evaluated
// for `args`; nullopt when only the device can count (a list's length).
std::optional<int64_t> host_iterations(const TaskPlan& task, std::span<const uint64_t> args);

// The iteration count of each loop of a task spread over a grid, its own
// loop first, then TaskPlan::grid's: constant, or from its bounds
// evaluated for `args`. Raises grove::Error naming `what` (the task) when a
// count is not known on the host, which only a damaged plan says.
std::vector<int64_t> grid_counts(const TaskPlan& task, std::span<const uint64_t> args, const std::string& what);

// Whether a task of `plan` spreads over a 2-D or 3-D grid (TaskPlan::grid).
inline bool spreads_over_grid(const KernelPlan& plan) {
  for (const TaskPlan& t : plan.tasks)
    if (!t.grid.empty()) return true;
  return false;
}

inline constexpr uint32_t kPlanMagic = 0x50565247u;  // "GRVP"
// 4: CUDA plans may carry the driver's binary; 5: signed_zero_inf_nan_preserve; 6: messages numbered from
// the launch's base on Vulkan too (no ids in the bytes; a push-constant word after the arguments); 7: the
// code as a tagged kind (PlanCode), the SPIR-V of the tasks with it; 8: no backend name beside the code's kind;
// 9: code whose print records align 64-bit values (print_record_layout: legalize writes the records);
// 10: tasks spread over 2-D and 3-D grids (TaskPlan::grid); 11: feature denorm_preserve
inline constexpr uint32_t kPlanVersion = 12;

std::vector<uint8_t> serialize(const KernelPlan& plan);
class ByteWriter;
class ByteReader;
// The messages part of the format, for other formats that carry messages
// (the CPU backend's disk cache).
void write_messages(ByteWriter& w, std::span<const MessagePlan> messages);
std::vector<MessagePlan> read_messages(ByteReader& r);
// The features part (one byte per entry of features.def), for plans and
// module infos alike.
void write_features(ByteWriter& w, const Features& f);
Features read_features(ByteReader& r);
// Raises grove::Error naming `source` and saying what is wrong (not a plan,
// another format version, truncated at some part, a size or value out of
// range) before it returns anything.
KernelPlan deserialize_plan(std::span<const uint8_t> bytes, std::string_view source = "kernel plan");
// A readable form for GROVE_DUMP_DIR (code blobs shown by size).
std::string to_json(const KernelPlan& plan);
// Raises grove::Error naming the kernel unless `plan` was made for
// `backend` ("cpu"); `device` names the loading device in the message
// ("the CPU").
void require_backend(const KernelPlan& plan, std::string_view backend, std::string_view device);

}  // namespace grove::rt
