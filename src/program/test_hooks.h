// src/program/test_hooks.h — hooks for Grove's own tests into the backends;
// not part of the public API (include/grove), and not for applications.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grove/types.h"

namespace grove {
class Field;
class Program;
class SNode;
namespace ir {
class Kernel;
}
namespace vk {
class Device;
}
}  // namespace grove

namespace grove::detail {

// Caps that make the Vulkan device look smaller (vk::DeviceProfile), for
// testing the fallbacks of a mobile-like device on a desktop one.
struct VulkanTestProfile {
  bool no_int64 = false;          // no shaderInt64, no 64-bit atomics
  bool no_float64 = false;        // no shaderFloat64
  bool no_float_atomics = false;  // no OpAtomicFAddEXT: f32 atomics become compare-and-swap loops
  bool no_float_controls = false;  // no SignedZeroInfNanPreserve (a driver may fold x * 0.0)
  bool no_unified_memory = false;  // staging copies for host access, as on a discrete GPU
  uint64_t max_storage_buffer_range = 0;  // bytes; 0 = the device's own limit
  uint32_t max_workgroup_invocations = 0;  // invocations per group; 0 = the device's own limit
  // Kernels laid out as for a GPU even on a device that is a CPU: shapes as
  // 2-D and 3-D launches, a cell per struct-for iteration.
  bool gpu_layout = false;
};

// Programs created after this call open their Vulkan device with `profile`
// (process-wide; set it back to {} when done).
void set_vulkan_test_profile(const VulkanTestProfile& profile);
VulkanTestProfile vulkan_test_profile();

// Every message the Vulkan validation layer reported in this process, oldest
// first (the Vulkan backend records them; tests fail on new ones).
std::vector<std::string> vulkan_validation_messages();
void record_vulkan_validation_message(std::string message);

// The Vulkan device `program` runs on (nullptr on other backends), so that a
// benchmark can race dispatches recorded by hand against Grove's on the same
// driver instance. Defined with the Vulkan backend.
vk::Device* vulkan_device(const Program& program);

// How many kernels the CUDA device of `program` loaded by compiling their
// PTX rather than from a binary made for it (-1 on other backends).
// Defined with the CUDA backend.
int64_t cuda_ptx_compiles(const Program& program);

// Whether the tree buffer holding `field` is host memory on the device of
// `program` (the interpreter, the CPU, Vulkan on unified memory): host
// accesses then work on it in place (rt::Context::store_if_active).
bool field_in_host_memory(Program& program, const Field& field);
// The slots of a pointer SNode directly under its tree's root, in cell
// order: 0 for an inactive cell, else its pool entry + 1.
std::vector<uint32_t> root_pointer_slots(Program& program, const SNode& pointer);
// The pool entries of a pointer or dynamic SNode in its tree's own
// instance, where that lives in host memory (else empty): the words
// themselves.
std::span<const uint32_t> pool_words(Program& program, const SNode& node);

// The serialized plan of kernel `name` of `program` (compiling it first).
std::vector<uint8_t> kernel_plan_bytes(Program& program, std::string_view name);
// Replaces the compiled form of kernel `name` by one the backend loads from
// `bytes` alone (the plan's own code, nothing from the IR), as an AOT module
// would; raises grove::Error for a plan the reader or the backend refuses.
void load_kernel_plan(Program& program, std::string_view name, std::span<const uint8_t> bytes);
// Whether kernel `name` of `program` runs its backend's quick tier of code
// (Backend::compile_first), to be replaced by the full tier's; false before
// its first launch.
bool kernel_runs_quick_code(Program& program, std::string_view name);
// Whether kernel `name`'s full tier is being compiled in the background
// (its quick code still runs).
bool kernel_tiers_up(Program& program, std::string_view name);
// Waits for every background compile of `program`'s kernels, whose code
// then replaces their quick code, as their next launch would take it.
void wait_for_tier_ups(Program& program);

// Calls `observer` with every kernel any Program compiles from now on,
// lowered, just before its backend gets it, and whether the Program is in
// debug mode (process-wide; {} removes it). The CUDA tests use it to
// translate every kernel of the API suite to PTX for ptxas.
using LoweredKernelObserver = std::function<void(const ir::Kernel& kernel, bool debug)>;
void set_lowered_kernel_observer(LoweredKernelObserver observer);
// Runs the observer, if any (ProgramImpl::compile).
void observe_lowered_kernel(const ir::Kernel& kernel, bool debug);

// ---- a Program's host operations, for the AOT round trip ----------------
// What a Program's user did that reaches the device, in order, with what
// the Program answered: tests/api/aot_round_trip.cpp replays it on an AOT
// module of the Program's kernels in grove_runtime and compares.
struct HostOp {
  enum class Kind { launch, write, read, copy_out, deactivate, instantiate, sync };
  Kind kind = Kind::sync;
  int kernel = -1;               // launch: the kernel's id in its Program (not Grove's own kernels)
  std::vector<uint64_t> bits;    // launch: the number arguments, converted; write: the value (compute type)
  std::vector<int> trees;        // launch: the instance passed per tree parameter
  std::vector<int> fields;       // write, read: the field; copy_out: its components
  int instance = -1;             // write, read, copy_out, instantiate: the instance; -1: the tree's own
  std::vector<int64_t> index;    // write, read: the user's index, offsets included
  DataType as = DataType::unknown;  // read, copy_out: the host type asked for
  std::vector<uint8_t> bytes;    // read, copy_out: what the Program gave back
  int snode = -1;                // deactivate: the SNode (instance: as above)
  int type = -1;                 // instantiate: the tree type
  std::string name;              // instantiate: the instance's name
  bool raised = false;           // the Program raised here; the trace ends with it
};

// Programs made after this call record their host operations; when one is
// destroyed, `observer` gets it (still alive) and the operations
// (process-wide; {} stops it). Exceptions it raises are swallowed.
using ProgramEndObserver = std::function<void(Program& program, const std::vector<HostOp>& trace)>;
void set_program_end_observer(ProgramEndObserver observer);
bool program_end_observed();
// Program::~Program: hands a traced Program to the observer.
void end_traced_program(Program& program);

}  // namespace grove::detail
