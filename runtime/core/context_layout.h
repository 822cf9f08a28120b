// runtime/core/context_layout.h — the words of the context buffer every
// generated kernel gets (a shader's binding 0, a CPU task's buffers[0]):
// the first failed assertion (a compare-and-swap on the flag word claims
// it, then its message id and up to 8 values of 2 words each are written),
// and a print ring (records
// reserved with one atomic add: [message id][value words...], low words
// first, laid out by print_record_layout (context_records.h) so that 64-bit
// values sit at even words; a record that does not fit is dropped and
// counted), and the group counts of the next
// indirect dispatch. Legalize writes the records in IR (a kernel's
// `@context` words, docs/ir.md); the runtime formats them on the host
// (context_records.h) and clears the header.
#pragma once

#include <cstdint>

namespace grove::rt::context {
inline constexpr uint32_t kAssertFlag = 0;       // 0, or 1 once an assertion failed
inline constexpr uint32_t kAssertMessage = 1;    // the failed assertion's message id
inline constexpr uint32_t kAssertValues = 2;     // its values, 2 words each (low first)
inline constexpr uint32_t kMaxAssertValues = 8;  // values kept (more are shown as "?")
inline constexpr uint32_t kPrintHead = 18;       // ring words reserved so far (may pass the end)
inline constexpr uint32_t kPrintDropped = 19;    // print records that did not fit
inline constexpr uint32_t kPrintCapacity = 20;   // words of the ring, which follows the header (set by the host)
// Every kernel numbers its print and assert messages 0, 1, ... and a record
// carries base + number, the base being the first id the device gave the
// kernel's messages when it loaded the plan (ContextRecords::add), so that
// code carries no device's ids (the disk cache, AOT modules) and plans load
// in any order. CPU and CUDA code read the base from this word, which the
// host sets before each launch; Vulkan code reads it from the push-constant
// word after the arguments (push_constant_bytes), as launches recorded
// together share one context buffer.
inline constexpr uint32_t kMessageBase = 21;
// The group counts (x, y, z) of an indirect dispatch: a task whose loop
// count only the device knows runs a one-invocation entry point that writes
// them, then itself through vkCmdDispatchIndirect. One triple serves every
// task, as each launch's dispatches are separated by barriers.
inline constexpr uint32_t kGroupCounts = 24;
// Always 0: code reads it where a driver must not see a constant (a float
// zero that lavapipe would fold away, see spirv::CodegenOptions).
inline constexpr uint32_t kZero = 27;
inline constexpr uint32_t kHeaderWords = 32;

// Vulkan: the push constants of a kernel of `arg_words` argument words, those
// words and then its message base; then, in a kernel with a task spread
// over a grid (TaskPlan::grid), the first iteration along x, y and z that a
// dispatch runs (grid_base_word), so that a grid larger than the device
// launches at once runs as several dispatches, with no loop in the code.
inline constexpr uint32_t kGridBaseWords = 3;
inline constexpr uint64_t push_constant_bytes(uint32_t arg_words, bool grid = false) {
  return (uint64_t{arg_words} + 1 + (grid ? kGridBaseWords : 0)) * 4;
}
inline constexpr uint32_t grid_base_word(uint32_t arg_words, uint32_t axis) { return arg_words + 1 + axis; }
}  // namespace grove::rt::context
