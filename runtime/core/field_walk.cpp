// runtime/core/field_walk.cpp — see field_walk.h.
#include "runtime/core/field_walk.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "runtime/core/assert.h"
#include "runtime/core/scalar.h"

namespace grove::rt {

// On the lambdas a walk calls per run: called from two places in
// for_each_run, they would be calls, and with blocks of 256 bytes a call
// per block was about a fifth of a sparse copy's time on lavapipe.
#define GROVE_INLINE __attribute__((always_inline))

FieldWalk::FieldWalk(const TreeLayout& layout, int field) : root_offset_(layout.root_offset) {
  const FieldLayout* f = layout.field(field);
  GROVE_ASSERT(f != nullptr, "FieldWalk of a field that is not in this tree");
  const SNodeLayout& place = layout.node(f->place);
  parent_ = place.parent;
  const SNodeLayout& target = layout.node(place.parent);
  const std::vector<int> axes = place.axes();
  const std::vector<int> path = layout.path(place.parent);
  shape_ = f->shape;
  const size_t indices = shape_.size();
  storage_words_ = storage_words(f->dtype);
  for (int64_t e : shape_) elements_ *= e;
  row_ = indices == 0 ? 1 : shape_.back();

  // Each node's digit of each index, as TreeLayout::local_cell computes it.
  for (size_t n = 1; n < path.size(); ++n) {
    const SNodeLayout& s = layout.node(path[n]);
    Level l;
    l.node = s;
    l.digits.resize(indices);
    for (size_t d = 0; d < indices; ++d) {
      const auto a = static_cast<size_t>(axes[d]);
      if (((s.axis_mask >> a) & 1) == 0) continue;  // no digit of this index here
      Digits& g = l.digits[d];
      g.multiplier = 1;  // cells are row-major over the node's axes
      for (size_t b = a + 1; b < static_cast<size_t>(kMaxAxes); ++b)
        if ((s.axis_mask >> b) & 1) g.multiplier *= s.extent[b];
      g.stride = target.shape[a] / s.shape[a];
      g.extent = s.extent[a];
      if (std::has_single_bit(static_cast<uint64_t>(g.stride)) && std::has_single_bit(static_cast<uint64_t>(g.extent))) {
        g.shift = std::countr_zero(static_cast<uint64_t>(g.stride));
        g.mask = g.extent - 1;
      }
    }
    if (s.is_sparse()) sparse_levels_ = levels_.size() + 1;
    levels_.push_back(std::move(l));
  }

  constant_ = place.component_offset;
  for (size_t i = sparse_levels_; i < levels_.size(); ++i) constant_ += levels_[i].node.component_offset;
  outer_part_.resize(indices == 0 ? 0 : indices - 1);
  for (size_t d = 0; d < outer_part_.size(); ++d) {
    outer_part_[d].resize(static_cast<size_t>(shape_[d]));
    for (int64_t u = 0; u < shape_[d]; ++u) outer_part_[d][static_cast<size_t>(u)] = dense_part(d, u);
  }
  if (indices == 0) last_step_ = 0;  // one element
  if (indices > 0) {
    // The last index's values in one cell of the deepest sparse node: the
    // digits at that node and above are the same, those below run through.
    const size_t last = indices - 1;
    const auto a = static_cast<size_t>(axes.back());
    span_ = std::min(row_, sparse_levels_ == 0 ? row_ : target.shape[a] / layout.node(path[sparse_levels_]).shape[a]);
    std::vector<const Level*> splitting;
    for (size_t i = sparse_levels_; i < levels_.size(); ++i)
      if (levels_[i].digits[last].multiplier != 0) splitting.push_back(&levels_[i]);
    if (splitting.empty()) {
      last_step_ = 0;
    } else if (splitting.size() == 1 && splitting[0]->digits[last].stride == 1) {
      last_step_ = splitting[0]->digits[last].multiplier * splitting[0]->node.cell_words;  // k < its extent
    } else {
      last_part_.resize(static_cast<size_t>(span_));
      for (int64_t k = 0; k < span_; ++k) last_part_[static_cast<size_t>(k)] = dense_part(last, k);
    }
  }
  if (dense() && elements_ > 0) {
    lo_ = hi_ = root_offset_ + constant_;
    for (const std::vector<int64_t>& part : outer_part_) {
      lo_ += *std::min_element(part.begin(), part.end());
      hi_ += *std::max_element(part.begin(), part.end());
    }
    if (last_step_ >= 0) {
      hi_ += (span_ - 1) * last_step_;
    } else {
      lo_ += *std::min_element(last_part_.begin(), last_part_.end());
      hi_ += *std::max_element(last_part_.begin(), last_part_.end());
    }
    hi_ += storage_words_;
  }
}

bool FieldWalk::interleaved(std::span<const FieldWalk> walks) {
  if (walks.size() < 2) return false;
  const FieldWalk& a = walks[0];
  const auto n = static_cast<int64_t>(walks.size());
  if (a.shape_.empty() || a.last_step_ != n * a.storage_words_) return false;
  for (int64_t c = 1; c < n; ++c) {
    const FieldWalk& b = walks[static_cast<size_t>(c)];
    // One parent: the same levels, digits and tables; only the place's
    // offset in the cell differs.
    if (b.parent_ != a.parent_ || b.root_offset_ != a.root_offset_ || b.shape_ != a.shape_ ||
        b.storage_words_ != a.storage_words_ || b.constant_ != a.constant_ + c * a.storage_words_)
      return false;
  }
  return true;
}

int64_t FieldWalk::dense_part(size_t d, int64_t u) const {
  int64_t part = 0;
  for (size_t i = sparse_levels_; i < levels_.size(); ++i) part += levels_[i].digits[d].of(u) * levels_[i].node.cell_words;
  return part;
}

int64_t FieldWalk::sparse_cell(const int64_t* index, std::span<const uint32_t> words, int64_t words_from) const {
  auto w = [&](int64_t a) { return words[static_cast<size_t>(a - words_from)]; };
  int64_t addr = root_offset_;
  for (size_t i = 0; i < sparse_levels_; ++i) {
    const Level& s = levels_[i];
    int64_t c = 0;
    for (size_t d = 0; d < s.digits.size(); ++d) c += s.digits[d].of(index[d]);
    addr = cell_in_container(s.node, addr + s.node.component_offset, c, w);
    if (addr < 0) return -1;
  }
  return addr;
}

const uint32_t* values_in_place(std::span<const FieldWalk> walks, DataType dtype, DataType as,
                                std::span<const uint32_t> words, int64_t words_from) {
  if (walks.empty() || (walks.size() > 1 && !FieldWalk::interleaved(walks))) return nullptr;
  const FieldWalk& w = walks.front();
  if (!w.dense() || !host_values_are_words(as, dtype)) return nullptr;
  const int64_t element = static_cast<int64_t>(walks.size()) * storage_words(dtype);  // words of all components
  if (w.step() != element) return nullptr;
  // The runs must follow one another from the first word on.
  int64_t next = w.first_word();
  bool chained = true;
  w.for_each_run(words, words_from, [&](const FieldWalk::Run& r) {
    chained = chained && r.address == next;
    next = r.address + r.count * element;
  });
  if (!chained || next - w.first_word() != w.elements() * element) return nullptr;
  if (w.first_word() < words_from || next - words_from > static_cast<int64_t>(words.size())) return nullptr;
  return words.data() + (w.first_word() - words_from);
}

namespace {

// `count` words of `bits` from `to`, 16 at a time (a loop of single words
// is what -O2 makes of std::fill_n: a word a cycle, 25 µs for 256 KiB).
void fill_words(uint32_t* to, int64_t count, uint32_t bits) {
  uint32_t pattern[16];
  std::fill_n(pattern, 16, bits);
  int64_t k = 0;
  for (; k + 16 <= count; k += 16) std::memcpy(to + k, pattern, sizeof pattern);
  for (; k < count; ++k) to[k] = bits;
}

// Whether copy_elements_out of `walk` (`width` interleaved components,
// all of them, of type `dtype`) as host type `as` copies whole runs: the
// host's values are the words, and an element's components lie side by
// side as the host's do.
bool copies_whole_runs(const FieldWalk& walk, DataType dtype, DataType as, size_t width, size_t stride) {
  return host_values_are_words(as, dtype) && stride == width &&
         walk.step() == static_cast<int64_t>(width) * storage_words(dtype);
}

// The values of such a walk (copies_whole_runs), appended to `out` run by
// run in element order, adjacent runs of adjacent words in one append.
void append_runs(const FieldWalk& walk, std::span<const uint32_t> words, int64_t words_from,
                 size_t width, grove::detail::HostDestination out, size_t count) {
  const auto values_per_element = static_cast<int64_t>(width);
  int64_t next = 0;                 // the next element the walk must give
  int64_t pending_from = -1;        // the first word of the values not yet appended (-1: zeros)
  int64_t pending = 0;              // elements not yet appended
  auto flush = [&] {
    if (pending == 0) return;
    const void* values = pending_from < 0 ? nullptr : words.data() + (pending_from - words_from);
    out.append(out.target, values, static_cast<size_t>(pending * values_per_element), count);
    pending = 0;
  };
  walk.for_each_run(words, words_from, [&](const FieldWalk::Run& r) GROVE_INLINE {
    GROVE_ASSERT(r.first == next, "a whole-field copy's runs come in element order");
    next = r.first + r.count;
    const bool zeros = r.address < 0;
    const bool joins = pending > 0 && (zeros ? pending_from < 0
                                             : pending_from >= 0 &&
                                                   pending_from + pending * walk.step() == r.address);
    if (!joins) {
      flush();
      pending_from = zeros ? -1 : r.address;
    }
    pending += r.count;
  });
  flush();
  GROVE_ASSERT(static_cast<size_t>(next * values_per_element) == count, "a whole-field copy gives every value");
}

}  // namespace

void* copy_fields_out(std::span<const FieldWalk> walks, DataType dtype, std::span<const uint32_t> words,
                      int64_t words_from, DataType as, grove::detail::HostDestination out, size_t count) {
  if (const uint32_t* values = values_in_place(walks, dtype, as, words, words_from))
    return out.place(out.target, values, count);  // one copy, nothing zeroed first
  // A vector or matrix field's components side by side: all at once.
  const size_t width = FieldWalk::interleaved(walks) ? walks.size() : 1;
  // A destination that must grow takes run after run (nothing zeroed
  // first); one that holds the room already is written in place.
  void* const room = out.room != nullptr ? out.room(out.target, count) : nullptr;
  if (out.append != nullptr && room == nullptr && width == walks.size() &&
      copies_whole_runs(walks[0], dtype, as, width, width)) {
    out.place(out.target, nullptr, 0);  // empty, then run after run
    append_runs(walks[0], words, words_from, width, out, count);
    return out.place(out.target, nullptr, count);  // (holds them all: changes nothing)
  }
  void* to = room != nullptr ? room : out.place(out.target, nullptr, count);
  for (size_t c = 0; c < walks.size(); c += width)
    copy_elements_out(walks[c], dtype, words, words_from, as, to, walks.size(), c, width);
  return to;
}

uint64_t host_value_bits(DataType as, const void* src, DataType to, std::string* problem) {
  uint64_t bits = 0;
  std::memcpy(&bits, src, host_value_bytes(as));
  if (as == DataType::u1) bits &= 1;
  *problem = argument_problem(as, bits, to);
  return problem->empty() ? convert_argument(as, bits, to) : 0;
}

void copy_elements_out(const FieldWalk& walk, DataType dtype, std::span<const uint32_t> words, int64_t words_from,
                       DataType as, void* out, size_t stride, size_t component, size_t width) {
  auto* bytes = static_cast<unsigned char*>(out);
  const size_t size = host_value_bytes(as);
  const DataType from = compute_type(dtype);
  const int64_t element_words = storage_words(dtype);
  // The host's type is the field's own, in whole words: the words are the value.
  const bool same = host_values_are_words(as, dtype);
  auto w = [&](int64_t a) { return words.data() + (a - words_from); };  // word a of the tree
  const size_t to_step = stride * size;
  if (copies_whole_runs(walk, dtype, as, width, stride)) {
    // Every component of a run side by side, as the host's values are: one
    // copy of each whole run (zeros for an inactive cell's). The walk joins
    // the runs that continue one another; stride is width, so an element's
    // values are `element` bytes.
    const size_t element = width * size;
    unsigned char* const out0 = bytes + component * size;
    const uint32_t* const w0 = words.data() - words_from;
    walk.for_each_run(words, words_from, [&](const FieldWalk::Run& r) GROVE_INLINE {
      unsigned char* first = out0 + static_cast<size_t>(r.first) * element;
      const size_t run_bytes = static_cast<size_t>(r.count) * element;
      if (r.address < 0) std::memset(first, 0, run_bytes);
      else std::memcpy(first, w0 + r.address, run_bytes);
    });
    return;
  }
  walk.for_each_run(words, words_from, [&](const FieldWalk::Run& r) {
    unsigned char* first = bytes + (static_cast<size_t>(r.first) * stride + component) * size;
    for (size_t c = 0; c < width; ++c) {
      unsigned char* to = first + c * size;
      const int64_t part = static_cast<int64_t>(c) * element_words;  // the component's word in an element
      if (r.address < 0) {
        for (int64_t k = 0; k < r.count; ++k) std::memset(to + static_cast<size_t>(k) * to_step, 0, size);
      } else if (same && size == 4 && !r.offsets) {
        auto* o = reinterpret_cast<uint32_t*>(to);
        const uint32_t* in = w(r.address + part);
        for (int64_t k = 0; k < r.count; ++k) o[static_cast<size_t>(k) * stride] = in[k * r.step];
      } else if (same) {
        for (int64_t k = 0; k < r.count; ++k)
          std::memcpy(to + static_cast<size_t>(k) * to_step, w(r.word(k) + part), size);
      } else {
        for (int64_t k = 0; k < r.count; ++k) {
          const uint64_t v = cast_bits(from, as, load_element(words, r.word(k) + part - words_from, dtype));
          unsigned char* at = to + static_cast<size_t>(k) * to_step;
          if (as == DataType::u1) {
            const bool b = v != 0;
            std::memcpy(at, &b, sizeof b);
          } else {
            std::memcpy(at, &v, size);
          }
        }
      }
    }
  });
}

std::pair<int64_t, int64_t> store_elements(const FieldWalk& walk, DataType dtype, std::span<uint32_t> words,
                                           int64_t words_from, const void* values, size_t value_bytes, bool each,
                                           size_t stride, size_t component, size_t width, bool* inactive) {
  int64_t lo = INT64_MAX, hi = 0;
  const int64_t size = storage_words(dtype);
  const auto last_part = static_cast<int64_t>(width - 1) * size;  // the last component's word in an element
  auto w = [&](int64_t a) { return words.data() + (a - words_from); };  // word a of the tree
  const size_t v_step = (each ? stride : 0) * value_bytes;
  // False (with `inactive`: noted) for a run of an inactive cell.
  auto active = [&](const FieldWalk::Run& r) {
    if (r.address < 0 && inactive != nullptr) {
      *inactive = true;
      return false;
    }
    GROVE_ASSERT(r.address >= 0, "store_elements: an element whose cell is not active");
    return true;
  };
  if (dtype != DataType::f16 && each && static_cast<size_t>(size) * 4 == value_bytes && stride == width &&
      walk.step() == static_cast<int64_t>(width) * size) {
    // Every component of a run side by side, as the host's values are, and
    // in the field's own bits: one copy of each whole run (the walk joins
    // those that continue one another; an element's values are `element`
    // bytes).
    const size_t element = width * value_bytes;
    const auto* const values0 = static_cast<const unsigned char*>(values) + component * value_bytes;
    walk.for_each_run(words, words_from, [&](const FieldWalk::Run& r) GROVE_INLINE {
      if (!active(r)) return;
      std::memcpy(w(r.address), values0 + static_cast<size_t>(r.first) * element, static_cast<size_t>(r.count) * element);
      lo = std::min(lo, r.address);
      hi = std::max(hi, r.word(r.count - 1) + last_part);
    });
    hi += size;
    return hi > lo ? std::pair{lo, hi} : std::pair<int64_t, int64_t>{0, 0};
  }
  walk.for_each_run(words, words_from, [&](const FieldWalk::Run& r) {
    if (!active(r)) return;
    const auto* first = static_cast<const unsigned char*>(values) +
                        (each ? static_cast<size_t>(r.first) * stride + component : 0) * value_bytes;
    // Words stored as they are (f16 is converted; offsets are in any order).
    const bool direct = dtype != DataType::f16 && !r.offsets;
    if (direct && !each && size == 1 && r.step == static_cast<int64_t>(width)) {
      uint32_t bits = 0;  // the value's low word (little-endian, whatever value_bytes is)
      std::memcpy(&bits, first, 4);
      fill_words(w(r.address), r.count * static_cast<int64_t>(width), bits);
    } else {
      for (size_t c = 0; c < width; ++c) {
        const unsigned char* v = first + (each ? c : 0) * value_bytes;
        const int64_t part = static_cast<int64_t>(c) * size;
        auto value = [&](int64_t k) {
          uint64_t x = 0;
          if (value_bytes == 4) std::memcpy(&x, v + static_cast<size_t>(k) * v_step, 4);
          else std::memcpy(&x, v + static_cast<size_t>(k) * v_step, 8);
          return x;
        };
        if (direct && size == 1) {  // a word each, its low bits: store_element's
          uint32_t* to = w(r.address + part);
          if (value_bytes == 4 && each) {
            for (int64_t k = 0; k < r.count; ++k) std::memcpy(to + k * r.step, v + static_cast<size_t>(k) * v_step, 4);
          } else {
            for (int64_t k = 0; k < r.count; ++k) to[k * r.step] = static_cast<uint32_t>(value(k));
          }
        } else {
          for (int64_t k = 0; k < r.count; ++k) store_element(words, r.word(k) + part - words_from, dtype, value(k));
        }
      }
    }
    if (r.offsets) {  // in any order
      for (int64_t k = 0; k < r.count; ++k) {
        lo = std::min(lo, r.word(k));
        hi = std::max(hi, r.word(k) + last_part);
      }
    } else {  // rising with k (step >= 0)
      lo = std::min(lo, r.word(0));
      hi = std::max(hi, r.word(r.count - 1) + last_part);
    }
  });
  hi += size;
  return hi > lo ? std::pair{lo, hi} : std::pair<int64_t, int64_t>{0, 0};  // (nothing stored: hi is `size`)
}

}  // namespace grove::rt
