// runtime/core/host_device.h — the part of a device whose buffers are host
// memory (the interpreter's and the CPU backend's): arrays of words, zeroed
// past their head, reads and writes checked against their size (an address
// outside is a bug in Grove: it must not corrupt the heap).
//
// Buffers come from calloc, not from a vector that writes its zeros: a
// large one is fresh pages from the kernel, zero until touched, so a tree
// whose pools are mostly unused (or a scratch buffer sized for the longest
// lists) costs neither the time to clear it nor resident memory for the
// parts no kernel reaches. What kernels fill front to back (a pool's
// entries past its first 2 MiB, a dense tree's arrays: Context's
// create_instance says which) is advised onto transparent huge pages, a
// first write faulting once per 2 MiB (a 750k-voxel VDB import on the CPU,
// whose kernel activates its blocks: 0.23-0.29 -> 0.28-0.39 of OpenVDB's
// read of the file). A buffer starts on a 64-byte cache line (calloc
// gives 16 bytes), as the tree layout's root region does (kLineWords), so
// that a vector loop over a dense field does not split every 512-bit load
// and store across two lines (the 5-point stencil on one thread:
// 19.6-19.9 ms split, 17.0-18.3 ms not).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/assert.h"
#include "runtime/core/device.h"
#include "runtime/core/tree_layout.h"

namespace grove::rt {

// `count` zeroed words from calloc, starting on a 64-byte line.
class Words {
 public:
  Words() = default;
  explicit Words(size_t count)
      : data_(static_cast<uint32_t*>(std::calloc(std::max<size_t>(count, 1) + kLine - 1, sizeof(uint32_t)))),
        size_(count) {
    if (data_ == nullptr) throw std::bad_alloc();
    const size_t past = reinterpret_cast<uintptr_t>(data_.get()) / sizeof(uint32_t) % kLine;
    words_ = data_.get() + (past == 0 ? 0 : kLine - past);
  }
  // Words [offset, offset + count) backed by the kernel's transparent huge
  // pages where it has them (Linux's MADV_HUGEPAGE, the 2 MiB pages inside
  // the range): a hint, which changes nothing but the pages' size.
  void advise_large_pages(size_t offset, size_t count);
  uint32_t* data() { return words_; }
  const uint32_t* data() const { return words_; }
  size_t size() const { return size_; }
  uint32_t* begin() { return data(); }
  uint32_t* end() { return data() + size_; }
  const uint32_t* begin() const { return data(); }
  const uint32_t* end() const { return data() + size_; }
  operator std::span<uint32_t>() { return {data(), size_}; }

 private:
  static constexpr size_t kLine = static_cast<size_t>(kLineWords);
  struct Free {
    void operator()(uint32_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint32_t[], Free> data_;  // what calloc returned
  uint32_t* words_ = nullptr;                // the first word on a line, inside data_
  size_t size_ = 0;
};

class HostDevice : public rt::Device {
 public:
  // `who` names the device in internal errors ("interpreter", "CPU backend").
  explicit HostDevice(std::string who) : who_(std::move(who)) {}

  // Tasks run on the host before launch() returns: each is timed with the
  // host's steady clock (add_task_time).
  void set_profiling(bool on) override { profiling_ = on; }

  void create_buffer(int id, int64_t words, std::span<const uint32_t> head) override {
    if (buffers_.size() <= static_cast<size_t>(id)) buffers_.resize(static_cast<size_t>(id) + 1);
    Words& b = buffers_[static_cast<size_t>(id)];
    b = Words();  // the old one is freed first
    b = Words(static_cast<size_t>(words));
    std::copy(head.begin(), head.end(), b.begin());
  }
  void destroy_buffer(int id) override { buffer(id, 0, 0, "destroy") = Words(); }
  void advise_filled_in_order(int id, int64_t offset, int64_t count) override {
    buffer(id, offset, count, "advise").advise_large_pages(static_cast<size_t>(offset), static_cast<size_t>(count));
  }
  void read_words(int id, int64_t offset, int64_t count, uint32_t* out) override {
    const auto& b = buffer(id, offset, count, "read");
    std::copy(b.begin() + offset, b.begin() + offset + count, out);
  }
  void write_words(int id, int64_t offset, int64_t count, const uint32_t* in) override {
    auto& b = buffer(id, offset, count, "write");
    std::copy(in, in + count, b.begin() + offset);
  }
  std::span<uint32_t> host_words(int id) override {
    Words& b = buffer(id, 0, 0, "view");
    return {b.begin(), b.size()};
  }

 protected:
  // The buffer `id`, once [offset, offset + count) is checked to lie inside it.
  Words& buffer(int id, int64_t offset, int64_t count, const char* what) {
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
  std::vector<Words> buffers_;
};

}  // namespace grove::rt
