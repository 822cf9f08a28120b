// runtime/core/field_walk.h — the words of every element of one field, for
// host copies of whole fields (Field::to_vector, from_vector and fill,
// runtime::Tree::to_vector): the addressing of TreeLayout::find_element,
// computed a row at a time instead of walked per element.
//
// A cell number of one node is a sum over the field's indices (each index
// gives the node's digits of its own axis), so each node's part per index
// value is looked up in a table made once. Below the deepest sparse node
// the path is dense, and an element's word is that node's cell plus a sum
// of table entries; the walk through the sparse nodes (reading slots and
// masks) is made once per cell of the deepest one, not per element.
#pragma once

#include <cstdint>
#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "grove/host_copy.h"
#include "runtime/core/tree_layout.h"

namespace grove::rt {

class FieldWalk {
 public:
  FieldWalk(const TreeLayout& layout, int field);

  // Whether no sparse node lies above the field: its words then depend on
  // nothing in the tree, and reading it needs no words of the tree.
  bool dense() const { return sparse_levels_ == 0; }
  int64_t elements() const { return elements_; }
  int64_t words() const { return elements_ * storage_words_; }  // its elements' words
  // Elements per row: the extent of the last index (1 for a field of no index).
  int64_t row_length() const { return row_; }
  // Dense fields: the first word of any element and one past the last
  // element's last word.
  int64_t first_word() const { return lo_; }
  int64_t end_word() const { return hi_; }
  // The step between the words of consecutive elements of every run, or
  // -1 when runs give each element's offset (Run::offsets).
  int64_t step() const { return last_step_; }
  // Whether the fields of `walks` (two or more) are the components of one
  // vector or matrix field stored side by side in each cell, in order:
  // component c of an element at word(k) + c * its storage words, and the
  // next element right after the last component. A host copy then moves
  // whole runs of elements, every component at once (the `width` of
  // copy_elements_out and store_elements).
  static bool interleaved(std::span<const FieldWalk> walks);

  // Elements [first, first + count) of one row (row-major over the
  // field's indices) in one cell of the deepest sparse node, or in cells
  // whose words follow each other's: element first + k is at word address
  // + k * step, or address + offsets[k] when `offsets` is not null;
  // address -1 when the cells are inactive.
  struct Run {
    int64_t first = 0, count = 0;
    int64_t address = -1, step = 0;
    const int64_t* offsets = nullptr;
    int64_t word(int64_t k) const { return address + (offsets ? offsets[k] : k * step); }
  };
  // Calls run(r) for every run of elements in order. `words` is the tree's
  // buffer from word `words_from` on; only sparse fields read it (their
  // slots and masks). (A template: a call per run costs no indirection.)
  template <typename RunFn>
  void for_each_run(std::span<const uint32_t> words, int64_t words_from, RunFn&& run) const;

 private:
  struct Digits {  // one index's digit at one node: (u / stride) % extent, times multiplier
    int64_t stride = 1, extent = 1, multiplier = 0;  // multiplier 0: the node does not split its axis
    // Where stride and extent are powers of two (most layouts): a shift and a mask.
    int shift = -1;
    int64_t mask = 0;
    int64_t of(int64_t u) const {
      if (multiplier == 0) return 0;
      if (shift >= 0) return ((u >> shift) & mask) * multiplier;
      return (u / stride) % extent * multiplier;
    }
  };
  struct Level {
    SNodeLayout node;            // a copy: a walk needs no layout once made
    std::vector<Digits> digits;  // per index
  };
  // The word of the deepest sparse node's cell for the element at `index`
  // (one value per field index), or -1.
  int64_t sparse_cell(const int64_t* index, std::span<const uint32_t> words, int64_t words_from) const;
  // What the dense levels below the deepest sparse one add to an element's
  // word for value u of index d.
  int64_t dense_part(size_t d, int64_t u) const;

  int64_t root_offset_ = 0;
  int parent_ = -1;             // the place's parent SNode
  std::vector<Level> levels_;   // root's children down to the place's parent
  size_t sparse_levels_ = 0;    // levels_[0, sparse_levels_) hold every sparse one
  std::vector<int64_t> shape_;  // per index
  // dense_part for every value of each index but the last.
  std::vector<std::vector<int64_t>> outer_part_;
  // The last index: values in blocks of `span_` (one cell of the deepest
  // sparse node each, or the whole row), and its dense part at offset k
  // in a block: k * last_step_ when one node splits it below the deepest
  // sparse node, else last_part_[k].
  int64_t span_ = 1;
  int64_t last_step_ = -1;
  std::vector<int64_t> last_part_;
  int64_t constant_ = 0;        // component offsets below the deepest sparse level, the place's included
  int64_t elements_ = 1, row_ = 1;
  int64_t lo_ = 0, hi_ = 0;
  int64_t storage_words_ = 1;
};

template <typename RunFn>
void FieldWalk::for_each_run(std::span<const uint32_t> words, int64_t words_from, RunFn&& run) const {
  if (elements_ == 0) return;
  const size_t indices = shape_.size();
  int64_t index[kMaxAxes] = {};
  const size_t last = indices == 0 ? 0 : indices - 1;
  // One sparse node (the common pointer-over-dense-blocks tree): its
  // container is the root's cell, and the indices before the last give
  // the same digits along a row, so a cell costs a digit and a slot read.
  const bool one_sparse = sparse_levels_ == 1;
  const Level* top = one_sparse ? &levels_.front() : nullptr;
  const int64_t top_container = root_offset_ + (one_sparse ? top->node.component_offset : 0);
  auto word = [&](int64_t a) { return words[static_cast<size_t>(a - words_from)]; };
  // A pointer whose slots for the cells of a row follow one another (its
  // digit of the last index a power-of-two split with multiplier 1 that
  // does not wrap within a row): a batch reads its slots as an array.
  const Digits* last_digit = one_sparse && indices > 0 ? &top->digits[last] : nullptr;
  const bool slots_in_row = last_digit != nullptr && top->node.type == SNodeType::pointer &&
                            last_digit->multiplier == 1 && last_digit->shift >= 0 &&
                            last_digit->stride == span_ && row_ <= span_ * (last_digit->mask + 1);
  const int64_t pool_offset = one_sparse ? top->node.pool_offset : 0;
  const int64_t entry_words = one_sparse ? top->node.pool_entry_words : 0;
  for (int64_t first = 0; first < elements_; first += row_) {
    int64_t outer = constant_;
    for (size_t d = 0; d < outer_part_.size(); ++d) outer += outer_part_[d][static_cast<size_t>(index[d])];
    int64_t row_digits = 0;  // one_sparse: the top node's digits of the indices before the last
    if (one_sparse)
      for (size_t d = 0; d < last; ++d) row_digits += top->digits[d].of(index[d]);
    Run r;
    bool open = false;  // r holds runs not yet passed on
    const bool cell_runs = slots_in_row && last_step_ > 0;
    if (cell_runs) {
      // The row's slots in an array and each cell's elements one run.
      // Inactive cells side by side are one run, and so are cells whose
      // entries follow one another (made in order) where a cell's elements
      // fill its entry: a scan of their slots finds where it ends.
      // Otherwise a slot read and a call per cell.
      const uint32_t* slot = words.data() + (top_container + row_digits + last_digit->of(0) - words_from);
      const int64_t base = pool_offset - entry_words + outer;  // cell n's address: base + slot[n] * entry_words
      const int64_t cells = (row_ + span_ - 1) / span_;
      const bool joinable = entry_words == span_ * last_step_;
      for (int64_t n = 0; n < cells;) {
        const uint32_t s = slot[n];
        int64_t m = n + 1;
        if (s == 0)
          while (m < cells && slot[m] == 0) ++m;
        else if (joinable)
          while (m < cells && slot[m] == s + static_cast<uint32_t>(m - n)) ++m;
        run(Run{.first = first + n * span_, .count = std::min(m * span_, row_) - n * span_,
                .address = s == 0 ? int64_t{-1} : base + int64_t{s} * entry_words, .step = last_step_});
        n = m;
      }
      // (A joined run continues no other: `open` stays false.)
    }
    // Otherwise cells a batch at a time, then their runs: the slot reads of
    // a batch do not wait behind the copies of the runs before them. Runs
    // that continue each other in memory (pool entries made in order) are
    // one.
    constexpr int64_t kBatch = 32;
    int64_t cells[kBatch];
    for (int64_t b0 = cell_runs ? row_ : 0; b0 < row_; b0 += kBatch * span_) {
      const int64_t b_end = std::min(row_, b0 + kBatch * span_);
      int64_t n = 0;
      if (slots_in_row) {  // the batch's slots, one word each, in a row
        const int64_t c0 = row_digits + last_digit->of(b0);
        const int64_t count = (b_end - b0 + span_ - 1) / span_;
        const uint32_t* slot = words.data() + (top_container + c0 - words_from);
        for (; n < count; ++n)
          cells[n] = slot[n] == 0 ? -1 : pool_offset + (int64_t{slot[n]} - 1) * entry_words;
      }
      for (int64_t u0 = b0 + n * span_; u0 < b_end; u0 += span_, ++n) {  // a cell of the deepest sparse node: one walk
        int64_t cell = root_offset_;
        if (one_sparse) {
          const int64_t c = row_digits + (indices == 0 ? 0 : top->digits[last].of(u0));
          cell = cell_in_container(top->node, top_container, c, word);
        } else if (sparse_levels_ > 1) {
          index[last] = u0;
          cell = sparse_cell(index, words, words_from);
        }
        cells[n] = cell;
      }
      n = 0;
      for (int64_t u0 = b0; u0 < b_end; u0 += span_, ++n) {
        const int64_t address = cells[n] < 0 ? -1 : cells[n] + outer;
        const int64_t count = std::min(span_, row_ - u0);
        if (open && address >= 0 && r.address >= 0 && last_step_ > 0 && address == r.address + r.count * last_step_) {
          r.count += count;
          continue;
        }
        if (open) run(r);
        r = Run{.first = first + u0, .count = count, .address = address, .step = last_step_,
                .offsets = last_step_ < 0 ? last_part_.data() : nullptr};
        open = true;
      }
    }
    if (open) run(r);
    for (size_t d = last; d-- > 0;) {  // the next row: the indices before the last, row-major
      if (++index[d] < shape_[d]) break;
      index[d] = 0;
    }
  }
}

// Bytes a host value of type `as` takes (u1: a bool).
inline size_t host_value_bytes(DataType as) {
  return as == DataType::u1 ? sizeof(bool) : static_cast<size_t>(bit_width(as) / 8);
}
// Whether host values of type `as` are the words of a field of type
// `dtype` as they are (its own type, 32 or 64 bits): copied, not converted.
inline bool host_values_are_words(DataType as, DataType dtype) {
  return as == dtype && as != DataType::u1 && as != DataType::f16 && bit_width(as) >= 32;
}
// The host value of type `as` at `src` as the bits of `to`'s compute type
// (rt::convert_argument), or 0 with *problem saying why `to` does not hold
// it (rt::argument_problem; empty when it does).
uint64_t host_value_bits(DataType as, const void* src, DataType to, std::string* problem);

// Copies every element of `walk`'s field (of type `dtype`) out of `words`
// (the tree's buffer from word `words_from` on) as host values of type
// `as`: element n goes to value n * stride + component of `out` (stride
// and component interleave a vector field's components); inactive cells
// give 0. `width` > 1: `walk` stands for itself and the next width - 1
// fields of an interleaved group (FieldWalk::interleaved, all of type
// `dtype`), component c of element n going to value n * stride + component
// + c.
void copy_elements_out(const FieldWalk& walk, DataType dtype, std::span<const uint32_t> words, int64_t words_from,
                       DataType as, void* out, size_t stride = 1, size_t component = 0, size_t width = 1);

// The values of a whole-field copy out of `walks` (the components of one
// field, of type `dtype`; interleaved when more than one) as host type
// `as`, where `words` (the tree's buffer from word `words_from` on) holds
// them already as the host lays them out: dense elements of the host's
// own type (32 or 64 bits) in one run, in element order, components side
// by side. Their first word there, else null.
const uint32_t* values_in_place(std::span<const FieldWalk> walks, DataType dtype, DataType as,
                                std::span<const uint32_t> words, int64_t words_from);

// A whole-field copy out of `walks` (the components of one field, of type
// `dtype`; interleaved or not) into what `out` places for `count` host
// values of type `as`: in one copy where the values are in place
// (values_in_place), else element by element. Returns where they went.
void* copy_fields_out(std::span<const FieldWalk> walks, DataType dtype, std::span<const uint32_t> words,
                      int64_t words_from, DataType as, grove::detail::HostDestination out, size_t count);

// Stores values into every element of `walk`'s field (of type `dtype`) in
// `words` (the tree's buffer from word `words_from` on): `value_bytes`
// (4 or 8) bytes each from `values`, the bits of the field's compute type
// (4 bytes: its low word), one value for all or (`each`) one per element,
// element n's at value n * stride + component. Every element must be
// active: a -1 address is an internal error, unless `inactive` is given:
// then the elements of inactive cells are skipped and *inactive is set.
// `width` as in copy_elements_out (component c of element n from value n *
// stride + component + c). Returns the words written, [first, end), or
// (0, 0).
std::pair<int64_t, int64_t> store_elements(const FieldWalk& walk, DataType dtype, std::span<uint32_t> words,
                                           int64_t words_from, const void* values, size_t value_bytes, bool each,
                                           size_t stride = 1, size_t component = 0, size_t width = 1,
                                           bool* inactive = nullptr);

}  // namespace grove::rt
