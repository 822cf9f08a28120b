// runtime/core/host_device.h — the part of a device whose buffers are host
// memory (the interpreter's and the CPU backend's): vectors of words,
// zeroed past their head, reads and writes checked against their size (an
// address outside is a bug in Grove: it must not corrupt the heap).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/assert.h"
#include "runtime/core/device.h"

namespace grove::rt {

class HostDevice : public rt::Device {
 public:
  // `who` names the device in internal errors ("interpreter", "CPU backend").
  explicit HostDevice(std::string who) : who_(std::move(who)) {}

  void create_buffer(int id, int64_t words, std::span<const uint32_t> head) override {
    if (buffers_.size() <= static_cast<size_t>(id)) buffers_.resize(static_cast<size_t>(id) + 1);
    std::vector<uint32_t>& b = buffers_[static_cast<size_t>(id)];
    b.assign(static_cast<size_t>(words), 0u);
    std::copy(head.begin(), head.end(), b.begin());
  }
  void destroy_buffer(int id) override { std::vector<uint32_t>().swap(buffer(id, 0, 0, "destroy")); }
  void read_words(int id, int64_t offset, int64_t count, uint32_t* out) override {
    const auto& b = buffer(id, offset, count, "read");
    std::copy(b.begin() + offset, b.begin() + offset + count, out);
  }
  void write_words(int id, int64_t offset, int64_t count, const uint32_t* in) override {
    auto& b = buffer(id, offset, count, "write");
    std::copy(in, in + count, b.begin() + offset);
  }

 protected:
  // The buffer `id`, once [offset, offset + count) is checked to lie inside it.
  std::vector<uint32_t>& buffer(int id, int64_t offset, int64_t count, const char* what) {
    if (id < 0 || static_cast<size_t>(id) >= buffers_.size())
      throw InternalError(who_ + ": host " + std::string(what) + " of buffer " + std::to_string(id) +
                          ", which does not exist");
    auto& b = buffers_[static_cast<size_t>(id)];
    if (offset < 0 || count < 0 || offset > static_cast<int64_t>(b.size()) - count)
      throw InternalError(who_ + ": host " + std::string(what) + " of words [" + std::to_string(offset) + ", " +
                          std::to_string(offset) + " + " + std::to_string(count) + ") of buffer " +
                          std::to_string(id) + ", which has " + std::to_string(b.size()) + " words");
    return b;
  }

  std::string who_;
  std::vector<std::vector<uint32_t>> buffers_;
};

}  // namespace grove::rt
