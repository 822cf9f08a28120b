// runtime/core/context_records.h — the host side of the context buffer's
// records (context_layout.h), shared by every device whose code writes them
// (Vulkan, the LLVM CPU backend): the device's table of print and assert
// messages, and the formatting of what a launch left in the header and the
// print ring.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/context_layout.h"
#include "runtime/core/device.h"
#include "runtime/core/plan.h"

namespace grove::rt {

// The print ring's sizes: a launch whose prints do not fit loses the
// records past the end (counted, and reported with a warning), and the ring
// grows to what that launch asked for, up to the largest ring, for later
// launches.
inline constexpr uint32_t kInitialPrintRingWords = 1u << 16;  // 256 KiB
inline constexpr uint32_t kMaxPrintRingWords = 1u << 26;      // 256 MiB

// Where a print record's values sit: word 0 holds the message id, each
// value follows in its storage words, a 64-bit value at an even word (a
// word of padding before it where needed), and the record's length is
// even, so that 64-bit values are aligned in the ring. Returns the length;
// `offsets` (when given) gets each value's first word.
uint32_t print_record_layout(std::span<const DataType> types, std::vector<uint32_t>* offsets = nullptr);

class ContextRecords {
 public:
  // `who` names the device in internal errors; `print` is where print
  // output goes (stdout when empty).
  ContextRecords(std::string who, PrintSink print) : who_(std::move(who)), print_(std::move(print)) {}

  // Registers the messages of a loaded plan under fresh ids, written into
  // `plan` (MessagePlan::id): its code numbers them 0, 1, ... and adds the
  // base the device passes at each launch, the first of these ids
  // (context::kMessageBase). Plans load in any order.
  void add(KernelPlan& plan);
  // The base a launch of `plan` (loaded by add) passes to its code.
  static uint32_t message_base(const KernelPlan& plan) {
    return plan.messages.empty() ? 0 : plan.messages.front().id;
  }
  // Notes a launch of `plan`; true when it may leave records to report.
  bool launched(const KernelPlan& plan);

  // Whether `header` (context::kHeaderWords words) holds anything to report.
  static bool any(const uint32_t* header);
  // Prints the records in `ring` (the ring's first min(head, ring_words)
  // words), then a warning for those dropped; returns the ring size later
  // launches should have: ring_words, or larger when records were dropped
  // (at most kMaxPrintRingWords and `largest`, what the device can hold).
  uint32_t print(const uint32_t* header, std::span<const uint32_t> ring, uint32_t ring_words,
                 uint32_t largest = kMaxPrintRingWords);
  // Raises the failed assertion `header` records, if any, as grove::Error
  // naming its kernel.
  void raise_assertion(const uint32_t* header) const;

 private:
  struct Record {
    std::string kernel;
    MessagePlan message;
  };
  // The values at `offsets` of `words` (empty: two words each).
  std::string format(const MessagePlan& m, const uint32_t* words, size_t available,
                     std::span<const uint32_t> offsets) const;
  void emit(const std::string& text) const;

  std::string who_;
  PrintSink print_;
  std::vector<Record> messages_;  // by id
  std::string last_printer_;      // the last kernel launched that prints
};

}  // namespace grove::rt
