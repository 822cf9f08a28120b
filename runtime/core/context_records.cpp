// runtime/core/context_records.cpp — see context_records.h.
#include "runtime/core/context_records.h"

#include <algorithm>
#include <iostream>

#include "grove/error.h"
#include "runtime/core/assert.h"
#include "runtime/core/scalar.h"

namespace grove::rt {

namespace ctx = context;

uint32_t print_record_layout(std::span<const DataType> types, std::vector<uint32_t>* offsets) {
  uint32_t at = 1;
  for (DataType t : types) {
    const auto words = static_cast<uint32_t>(storage_words(t));
    if (words == 2) at += at & 1;
    if (offsets) offsets->push_back(at);
    at += words;
  }
  return at + (at & 1);
}

void ContextRecords::add(KernelPlan& plan) {
  const auto base = static_cast<uint32_t>(messages_.size());
  for (size_t i = 0; i < plan.messages.size(); ++i) {
    MessagePlan& m = plan.messages[i];
    m.id = base + static_cast<uint32_t>(i);
    messages_.push_back({plan.name, m});
  }
}

bool ContextRecords::launched(const KernelPlan& plan) {
  if (plan.prints) last_printer_ = plan.name;
  return !plan.messages.empty();
}

bool ContextRecords::any(const uint32_t* header) {
  return header[ctx::kPrintHead] != 0 || header[ctx::kPrintDropped] != 0 || header[ctx::kAssertFlag] != 0;
}

void ContextRecords::emit(const std::string& text) const {
  if (print_) {
    print_(text);
  } else {
    std::cout << text << std::flush;
  }
}

std::string ContextRecords::format(const MessagePlan& m, const uint32_t* words, size_t available,
                                   std::span<const uint32_t> offsets) const {
  std::vector<std::string> values;
  for (size_t n = 0; n < m.types.size(); ++n) {
    const DataType t = m.types[n];
    const size_t at = offsets.empty() ? 2 * n : offsets[n];  // an assertion's values: two words each
    if (at + static_cast<size_t>(storage_words(t)) > available) {
      values.emplace_back("?");
      continue;
    }
    uint64_t bits = words[at];
    if (storage_words(t) == 2) bits |= static_cast<uint64_t>(words[at + 1]) << 32;
    values.push_back(format_value(t, bits));
  }
  return format_print(m.format, values);
}

uint32_t ContextRecords::print(const uint32_t* header, std::span<const uint32_t> ring, uint32_t ring_words,
                               uint32_t largest) {
  const uint32_t dropped = header[ctx::kPrintDropped];
  size_t printed = 0;
  size_t pos = 0;
  while (pos < ring.size()) {
    const uint32_t id = ring[pos];
    if (id >= messages_.size() || messages_[id].message.is_assert) break;  // never written
    const MessagePlan& m = messages_[id].message;
    std::vector<uint32_t> offsets;
    const size_t need = print_record_layout(m.types, &offsets);
    if (pos + need > ring.size()) break;
    emit(format(m, ring.data() + pos, need, offsets));
    ++printed;
    pos += need;
  }
  if (dropped == 0) return ring_words;
  // Only launches of kernels that print fill the ring, and each of them
  // waits for its output: the records are the last such launch's.
  const uint32_t head = header[ctx::kPrintHead];
  uint32_t grown = ring_words;
  while (grown < head && grown < kMaxPrintRingWords) grown *= 2;
  grown = std::max(ring_words, std::min(grown, largest));
  auto kib = [](uint64_t words) { return std::to_string(words * 4 / 1024) + " KiB"; };
  emit("[grove] warning: kernel '" + last_printer_ + "' printed " + std::to_string(printed + dropped) +
       " lines in one launch and " + std::to_string(dropped) + " of them were dropped: the print buffer held " +
       kib(ring_words) + (grown > ring_words ? "; it now holds " + kib(grown) + " for later launches" : "") +
       " (a launch can print at most " + kib(grown) + ")\n");
  return grown;
}

void ContextRecords::raise_assertion(const uint32_t* header) const {
  if (header[ctx::kAssertFlag] == 0) return;
  const uint32_t id = header[ctx::kAssertMessage];
  if (id >= messages_.size())
    throw InternalError(who_ + ": a failed assertion with unknown id " + std::to_string(id));
  const Record& r = messages_[id];
  throw KernelError("kernel '" + r.kernel + "': " +
              format(r.message, header + ctx::kAssertValues, 2 * ctx::kMaxAssertValues, {}));
}

}  // namespace grove::rt
