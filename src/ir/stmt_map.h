// src/ir/stmt_map.h — a map from statements to small values, for the passes
// that count or redirect every statement of a kernel in each round (DCE's
// use counts, CSE's replacements): open addressing over one array, so that
// filling it allocates once per size and clearing it keeps the array, where
// std::unordered_map allocated a node per statement per round.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace grove::ir {

class Stmt;

template <typename V>
class StmtMap {
 public:
  // The value of `s`, default-constructed when `s` was absent.
  V& operator[](const Stmt* s) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    size_t h = home(s);
    while (slots_[h].key != nullptr && slots_[h].key != s) h = (h + 1) & (slots_.size() - 1);
    if (slots_[h].key == nullptr) {
      slots_[h] = {s, V{}};
      ++size_;
    }
    return slots_[h].value;
  }
  // The value of `s`, or nullptr.
  const V* find(const Stmt* s) const {
    if (size_ == 0) return nullptr;
    for (size_t h = home(s);; h = (h + 1) & (slots_.size() - 1)) {
      if (slots_[h].key == s) return &slots_[h].value;
      if (slots_[h].key == nullptr) return nullptr;
    }
  }
  bool empty() const { return size_ == 0; }
  // Forgets every entry, keeping the array.
  void clear() {
    if (size_ == 0) return;
    for (Slot& e : slots_) e = Slot{};
    size_ = 0;
  }

 private:
  struct Slot {
    const Stmt* key = nullptr;
    V value{};
  };
  size_t home(const Stmt* s) const {
    // Fibonacci hashing: the top bits of the product.
    return static_cast<size_t>(reinterpret_cast<uintptr_t>(s) * 0x9e3779b97f4a7c15ull >> shift_);
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 256 : old.size() * 2, Slot{});
    shift_ = 64 - std::countr_zero(slots_.size());
    size_ = 0;
    for (const Slot& e : old)
      if (e.key != nullptr) (*this)[e.key] = e.value;
  }

  std::vector<Slot> slots_;  // a power of two, at most half full
  size_t size_ = 0;
  int shift_ = 64;
};

}  // namespace grove::ir
