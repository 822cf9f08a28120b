// src/spirv/codegen.h — Grove's lowered IR to SPIR-V: one Vulkan compute
// module (SPIR-V 1.3, one GLCompute entry point) per task of a kernel.
//
// Resource layout, the same for every task of every kernel (descriptor set 0):
//
//   binding 0       the program's context buffer (u32 words, layout below)
//   binding 1..N    the tree buffers the task touches, TaskModule::trees[i] at
//                   binding 1 + i; each a runtime array of u32 words (the
//                   scratch buffer is a tree too). A 64-bit atomic, a 64-bit
//                   compare-and-swap or an f32 OpAtomicFAddEXT goes through a
//                   second variable aliasing the same binding (u64 or f32
//                   array), which Vulkan allows for storage buffers.
//   push constants  the launch's arguments: argument n at word
//                   KernelModules::arg_offsets[n], 64-bit values in two words
//                   (low word first), narrower ones in the low bits of one;
//                   then, at word arg_words, the launch's message base.
//
// Arguments are push constants, not words of the context buffer: writing the
// buffer before every launch is a staging transfer that waits for the
// previous one, which would make every launch wait for the one before it.
//
// Context buffer (words; see namespace context below): the first failed
// assertion (a compare-and-swap on the flag word claims it, then its message
// id and up to 8 values of 2 words each are written), and a print ring
// (records reserved with one atomic add: [message id][value words...]; a
// record that does not fit is dropped and counted). The backend formats both
// on the host at sync with ir::format_print / ir::format_value, exactly as the
// interpreter does, and then clears the header.
//
// Parallel tasks (range_for, struct_for, listgen, gc) run with LocalSize
// (local_size, 1, 1) over [begin, end) of their last range_for. The backend
// picks the number of groups: exactly ceil(count / local_size) (at most
// 65535, the least every device takes) when the bounds are known on the
// host — constants (TaskModule::static_iterations) or arithmetic of
// constants and arguments (evaluate TaskModule::loop's bounds); invocation k
// then runs iteration k. Bounds read from a tree (a list's length, in
// listgen and struct-fors) are counted on the device: the module's second
// entry point (TaskModule::count_entry_point), run as one invocation just
// before, writes the group counts of an indirect dispatch, in x and y, and
// invocation (x, y) runs iteration y * (NumWorkgroups.x * local_size) + x.
// A loop that sums in registers or continues (or whose bounds come after
// statements that store) runs as a grid-stride loop instead: invocation g
// takes iterations g, g + G, g + 2G... where G is the number of invocations
// launched (NumWorkgroups.x * local_size), as many as its count needs, or a
// fixed number for a bound that has no count entry point. The backend picks
// local_size: 256, or less where the device's limits are lower. Serial tasks
// (serial, clear_list, gc_finish) have LocalSize 1 and run one group.
//
// Grid loops (ir::Stmt::grid: a for_range over a shape on a GPU) nested in
// the parallel loop, when every count of the nest is known on the host,
// spread over a
// 2-D or 3-D launch: the innermost loop on x, the one around it on y, the
// task's own loop on y or z, each with its own group size (TaskModule::
// grid; LocalSize (x, y, z) of at most local_size invocations, y at most
// 128 and z at most 64, the least every device takes). Invocation (x, y, z)
// runs the point (z, y, x) of the nest, with no division and no loop. An
// axis whose count is not a constant needing at most 65535 groups adds the
// dispatch's base along it, a push-constant word after the message base
// (context::grid_base_word): the backend runs a grid larger than the device
// launches at once as several dispatches. Grid loops the module does not
// spread run in order, as any range_for.
//
// Driver limits handled here: lavapipe (Mesa's llvmpipe) silently leaves any
// loop once one invocation has counted 65535 passes in all (each back-edge,
// and two per loop instance); with
// CodegenOptions::max_loop_iterations set, every loop counts them and the
// launch fails with an error naming the task instead of computing garbage.
// (Long serial loops therefore cannot run on lavapipe; parallel loops spread
// their iterations over enough invocations.)
//
// Semantics follow src/ir/interpreter.cpp bit for bit where SPIR-V allows it.
// What an operation means where the device lacks it is legalize's
// (src/ir/passes/legalize.h; target_ops() below declares nothing native):
// guarded integer division, shift counts, saturating float-to-int casts,
// min/max, round, pow's special cases, f16 storage, the math functions
// (Cephes' f32 algorithms, f64 through them), exact fmod (f64 where the
// device has Int64; else OpFRem), print and assert records arrive here as
// primitives.
// What stays here is how SPIR-V expresses a primitive on real drivers:
// i8/i16/u8/u16 values live in 32-bit words (signed ones sign-extended)
// and are re-wrapped after every operation, so no Int8/Int16 capability is
// needed; float arithmetic is decorated NoContraction so no driver fuses it
// into FMAs, and a task that computes in floats declares
// SignedZeroInfNanPreserve where the device keeps signed zeros, infinities
// and NaN (DeviceFeatures); sign extension to 64 bits is built from two
// words (lavapipe miscompiles OpSConvert followed by a signed compare);
// signed mod is a - (a / b) * b (NVIDIA's OpSRem was wrong for negative
// dividends). sin, cos,
// tan of |x| > 8192, sqrt and pow of a positive base are the driver's
// GLSL.std.450 (lavapipe: sin/cos/tan within 3 ulp, pow within ~40 ulp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grove/types.h"
#include "ir/ir.h"
#include "ir/passes/legalize.h"
#include "ir/snode.h"
#include "runtime/core/context_layout.h"

namespace grove::spirv {

// Word offsets in the context buffer (runtime/core/context_layout.h).
namespace context = rt::context;

// What the target device can do (vk::DeviceInfo, after its profile).
struct DeviceFeatures {
  bool shader_int64 = false;        // i64/u64 values (Int64)
  bool shader_float64 = false;      // f64 values (Float64)
  bool atomic_int64 = false;        // 64-bit atomics and compare-and-swap (Int64Atomics)
  bool atomic_float32_add = false;  // OpAtomicFAddEXT on f32 (else a compare-and-swap loop)
  // Subgroup reduce, elect and broadcast in compute (basic, arithmetic and
  // ballot operations): an atomic add whose result is unused, on one
  // address for the whole subgroup, becomes one atomic per subgroup, and
  // subgroup_first and subgroup_elect (the sparse runtime's activations of
  // one slot by a subgroup) are the device's own.
  bool subgroup_arithmetic = false;
  // SignedZeroInfNanPreserve (float controls) for f32 and f64: without it a
  // driver may fold x * 0.0 to 0 and lose -0.0, infinities and NaN.
  bool signed_zero_inf_nan_preserve = false;
  // DenormPreserve for f32: without it a driver may flush denormals to zero.
  bool denorm_preserve = false;
};

struct CodegenOptions {
  DeviceFeatures features;
  uint32_t local_size = 128;  // invocations per group of a parallel task
  // Spread grid loops over 2-D and 3-D launches (see above); else they run
  // in order.
  bool grid = true;
  // Debug mode: every task first checks the context's assert flag and does
  // nothing once an assertion failed (the interpreter stops at the first).
  bool debug = false;
  // Run the SPIRV-Tools validator on every module (an InternalError with the
  // disassembly on failure).
  bool validate = false;
  // > 0: the driver silently leaves a loop once an invocation has taken this
  // many loop back-edges in all (lavapipe/llvmpipe: 65535, one counter shared
  // by every loop of the shader). The code then counts back-edges and, at the
  // limit, fails the launch with an error (an assert record) instead of
  // computing wrong results.
  uint32_t max_loop_iterations = 0;
  // > 0: the most words of SPIR-V one task may have. lavapipe's compile time
  // grows much faster than the code (a task of 5,000 instructions took
  // 0.8 s to reach its first launch, 10,000 took 3.8 s, 20,000 took 24 s,
  // 50,000 did not finish in 120 s), so a longer task is refused before its
  // pipeline is made, naming the kernel and the task, instead of looking hung.
  uint32_t max_task_words = 0;
  // The driver folds float arithmetic on values it can compute (x * 0.0 to
  // 0.0, 0.0 / 0.0 to 0) even under SignedZeroInfNanPreserve (lavapipe of
  // Mesa 22.3): a literal float zero operand is then read from the context
  // buffer's zero word (context::kZero), which no compiler can see through,
  // and an integer converted to a float is first or'ed with that word, so
  // that a zero the driver derives (a - a, x % 1) stays unknown to it.
  bool opaque_float_zero = false;
  // What the features describe, in errors about a feature the kernel needs.
  std::string target_name = "this Vulkan device";
};

// A print or assert: its format ("{}" per value) and the values' types.
// A print or assert message (its id: its number in the kernel).
using Message = rt::MessagePlan;

// A tree buffer a task binds: the tree (its type) and the kernel's tree
// parameter it comes through (-1: the tree's own instance).
using TreeKey = std::pair<int, int>;
inline TreeKey key_of(const ir::Stmt* s) { return {s->tree(), s->tree_param()}; }

struct TaskModule {
  std::string entry_point;  // "<kernel>.t<index>.<kind>"
  ir::TaskKind kind = ir::TaskKind::serial;
  std::string label;        // the task's label in the IR
  std::vector<uint32_t> words;
  std::vector<TreeKey> trees;  // the buffers at bindings 1, 2, ...
  uint32_t local_size = 1;
  bool parallel = false;
  // Parallel tasks: the iteration count of the range_for run as the
  // grid-stride loop when both its bounds are constants (else -1).
  int64_t static_iterations = -1;
  // Iterations each invocation should take on average: above 1 for a task
  // whose loop accumulates a reduction in registers (the backend launches
  // count / (local_size * iterations_per_invocation) invocations).
  uint32_t iterations_per_invocation = 1;
  // Parallel tasks whose count only the device knows (a bound read from a
  // tree: a list's length): a second entry point in the same module, run as
  // one invocation before the task, that writes the task's group counts to
  // the context buffer (context::kGroupCounts) for an indirect dispatch.
  // Empty when the count is known on the host, or when the statements before
  // the loop do more than compute (the backend then launches a fixed grid).
  std::string count_entry_point;
  // The module declares SignedZeroInfNanPreserve (it computes in floats and
  // DeviceFeatures::signed_zero_inf_nan_preserve is set).
  bool signed_zero_inf_nan_preserve = false;
  // The module declares DenormPreserve for f32 (it computes in f32 and
  // DeviceFeatures::denorm_preserve is set).
  bool denorm_preserve = false;
  // The module uses subgroup operations (sums, elect, broadcast): its plan
  // needs the subgroup feature.
  bool subgroup_operations = false;
  // A parallel task whose grid loops (ir::Stmt::grid) the module spreads
  // over a 2-D or 3-D launch: those axes, innermost last (see above);
  // local_size is then the group size along the task's own loop.
  std::vector<rt::GridAxis> grid;
};

struct KernelModules {
  std::vector<TaskModule> tasks;      // one per task, in order
  std::vector<uint32_t> arg_offsets;  // push-constant word of each argument
  uint32_t arg_words = 0;             // push-constant words in all
  // Message i is written as id base + i, base being the push-constant word
  // after the arguments, which the device sets at each launch (the one
  // numbering of every backend: runtime/core/context_records.h): the
  // kernel's messages (legalize's records), then the code generator's own
  // (a loop that reached lavapipe's limit).
  std::vector<Message> messages;
};

// What SPIR-V's core instructions compute as docs/ir.md defines them on
// every Vulkan device: the arithmetic primitives only. The rest
// (ir/passes/legalize.h) arrives written in primitives.
const ir::TargetOps& target_ops(bool int64);  // int64: the device's shaderInt64

// Translates a kernel at ir::Stage::legal (a lowered one is legalized first). User errors (a feature the device
// lacks, too many argument words for the push constants) raise grove::Error
// naming the kernel; `max_push_constant_bytes` is the device's limit.
KernelModules generate_kernel(const ir::Kernel& kernel, const ir::SNodeForest& forest,
                              const CodegenOptions& options, uint32_t max_push_constant_bytes = 128);

// Whether modules should be validated: always in debug builds (no NDEBUG),
// and whenever the environment sets GROVE_VALIDATE_SPIRV=1.
bool validation_requested();

}  // namespace grove::spirv
