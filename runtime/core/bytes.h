// runtime/core/bytes.h — little-endian byte writing and checked reading for
// Grove's serialized formats (kernel plans, AOT modules). A reader never
// trusts a size it has not checked against what is left; every failure is a
// grove::Error naming the source, the part being read and the offset.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grove/error.h"

namespace grove::rt {

class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i32(int32_t v) { raw(&v, 4); }
  void i64(int64_t v) { raw(&v, 8); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  void words(std::span<const uint32_t> w) {
    u32(static_cast<uint32_t>(w.size()));
    raw(w.data(), w.size() * 4);
  }
  void bytes(std::span<const uint8_t> b) {
    u64(b.size());
    raw(b.data(), b.size());
  }
  void ints(std::span<const int> v) {
    u32(static_cast<uint32_t>(v.size()));
    for (int x : v) i32(x);
  }
  void i64s(std::span<const int64_t> v) {
    u32(static_cast<uint32_t>(v.size()));
    for (int64_t x : v) i64(x);
  }
  std::vector<uint8_t> take() { return std::move(out_); }
  size_t size() const { return out_.size(); }

 private:
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  std::vector<uint8_t> out_;
};

class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> in, std::string source) : in_(in), source_(std::move(source)) {}

  // What the next values are, for error messages ("task 3's code").
  void part(std::string name) { part_ = std::move(name); }
  size_t offset() const { return at_; }
  size_t left() const { return in_.size() - at_; }

  uint8_t u8() { return get<uint8_t>(); }
  uint32_t u32() { return get<uint32_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  int32_t i32() { return get<int32_t>(); }
  int64_t i64() { return get<int64_t>(); }
  bool boolean() {
    const uint8_t v = u8();
    if (v > 1) fail("a flag is " + std::to_string(v) + ", not 0 or 1");
    return v != 0;
  }
  // A count of items of at least `item_bytes` bytes each, checked against
  // what is left, so that no reader allocates for a count the input cannot hold.
  uint32_t count(size_t item_bytes) {
    const uint32_t n = u32();
    if (item_bytes > 0 && n > left() / item_bytes)
      fail("a count of " + std::to_string(n) + " items does not fit in the " + std::to_string(left()) +
           " bytes left (truncated or corrupt)");
    return n;
  }
  std::string str() {
    const uint32_t n = count(1);
    std::string s(reinterpret_cast<const char*>(in_.data() + at_), n);
    at_ += n;
    return s;
  }
  std::vector<uint32_t> words() {
    const uint32_t n = count(4);
    std::vector<uint32_t> w(n);
    if (n) std::memcpy(w.data(), in_.data() + at_, size_t{n} * 4);
    at_ += size_t{n} * 4;
    return w;
  }
  std::vector<int> ints() {
    std::vector<int> v(count(4));
    for (int& x : v) x = i32();
    return v;
  }
  std::vector<int64_t> i64s() {
    std::vector<int64_t> v(count(8));
    for (int64_t& x : v) x = i64();
    return v;
  }
  std::vector<uint8_t> bytes() {
    const uint64_t n = u64();
    if (n > left()) fail("a blob of " + std::to_string(n) + " bytes does not fit in the " + std::to_string(left()) + " left (truncated)");
    std::vector<uint8_t> b(in_.begin() + static_cast<std::ptrdiff_t>(at_), in_.begin() + static_cast<std::ptrdiff_t>(at_ + n));
    at_ += n;
    return b;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(source_ + ": " + (part_.empty() ? "" : part_ + ": ") + why + " (at byte " + std::to_string(at_) + ")");
  }

 private:
  template <typename T>
  T get() {
    if (left() < sizeof(T)) fail("truncated: " + std::to_string(sizeof(T)) + " more bytes needed, " + std::to_string(left()) + " left");
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }

  std::span<const uint8_t> in_;
  std::string source_;
  std::string part_;
  size_t at_ = 0;
};

}  // namespace grove::rt
