// runtime/core/tree_layout.cpp — tree layouts and the host's walks over a tree's words.
#include "runtime/core/tree_layout.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <iterator>

#include "grove/error.h"
#include "runtime/core/assert.h"

namespace grove::rt {

namespace {

struct KindInfo {
  const char* name;
  bool sparse, pool, list;
};
constexpr KindInfo kKinds[] = {
#define GROVE_SNODE_KIND(name, sparse, pool, list) {#name, sparse, pool, list},
#include "grove/snode_kinds.def"
#undef GROVE_SNODE_KIND
};
static_assert(std::size(kKinds) == kSNodeTypes);

const KindInfo* info(SNodeType t) {
  const auto k = static_cast<size_t>(t);
  return k < std::size(kKinds) ? &kKinds[k] : nullptr;
}

}  // namespace

const char* snode_type_name(SNodeType t) { return info(t) ? info(t)->name : "?"; }

std::string SNodeLayout::name() const {
  return "S" + std::to_string(id) + snode_type_name(type);
}

int SNodeLayout::ndim() const {
  int n = 0;
  for (int a = 0; a < kMaxAxes; ++a)
    if ((path_axes >> a) & 1) n = a + 1;
  return n;
}

std::vector<int> SNodeLayout::axes() const {
  std::vector<int> out;
  for (int a = 0; a < kMaxAxes; ++a)
    if ((path_axes >> a) & 1) out.push_back(a);
  return out;
}

int SNodeLayout::num_indices() const { return __builtin_popcount(path_axes); }

bool SNodeLayout::is_sparse() const { return info(type) && info(type)->sparse; }
bool SNodeLayout::has_pool() const { return info(type) && info(type)->pool; }
bool SNodeLayout::has_list() const { return info(type) && info(type)->list; }
int64_t SNodeLayout::entry_coord_words() const {
  if (type != SNodeType::pointer) return 0;
  return coords_packed() ? 1 : coord_axes();
}
int SNodeLayout::coord_axes() const { return std::max(1, ndim()); }
int SNodeLayout::coord_bits(int axis) const {
  const int64_t cells = shape[static_cast<size_t>(axis)];
  return cells > 1 ? 64 - __builtin_clzll(static_cast<uint64_t>(cells - 1)) : 0;
}
int SNodeLayout::coord_shift(int axis) const {
  int shift = 0;
  for (int a = 0; a < axis; ++a) shift += coord_bits(a);
  return shift;
}
bool SNodeLayout::coords_packed() const { return coord_shift(coord_axes()) <= 32; }
int64_t SNodeLayout::pool_bookkeeping_words() const {
  return 3 + (type == SNodeType::pointer ? entry_coord_words() + 1 : 0);
}

void TreeLayout::index() {
  slot_.clear();
  for (size_t n = 0; n < nodes.size(); ++n) {
    const int id = nodes[n].id;
    GROVE_ASSERT(id >= 0, "a tree layout node without an id");
    if (slot_.size() <= static_cast<size_t>(id)) slot_.resize(static_cast<size_t>(id) + 1, -1);
    slot_[static_cast<size_t>(id)] = static_cast<int>(n);
  }
}

bool TreeLayout::has_node(int id) const {
  return id >= 0 && static_cast<size_t>(id) < slot_.size() && slot_[static_cast<size_t>(id)] >= 0;
}

const SNodeLayout& TreeLayout::node(int id) const {
  GROVE_ASSERT(has_node(id), "SNode " + std::to_string(id) + " is not in this tree");
  return nodes[static_cast<size_t>(slot_[static_cast<size_t>(id)])];
}

const FieldLayout* TreeLayout::field(int id) const {
  for (const FieldLayout& f : fields)
    if (f.id == id) return &f;
  return nullptr;
}

const FieldLayout* TreeLayout::field(std::string_view name) const {
  for (const FieldLayout& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<int> TreeLayout::path(int n) const {
  std::vector<int> p;
  for (; n >= 0; n = node(n).parent) p.insert(p.begin(), n);
  return p;
}

std::vector<uint32_t> TreeLayout::header_words() const {
  std::vector<uint32_t> w(static_cast<size_t>(std::min<int64_t>(root_offset, total_words)), 0u);
  GROVE_ASSERT(w.size() >= static_cast<size_t>(kHeaderWords), "a tree layout without its header");
  w[kMagic] = kTreeMagic;
  w[kLayoutVersion] = kLayoutVersionValue;
  w[kTotalWords] = static_cast<uint32_t>(total_words);
  return w;
}

int64_t TreeLayout::local_cell(int n, int leaf, const int64_t* index) const {
  const SNodeLayout& s = node(n);
  const SNodeLayout& last = node(leaf);
  int64_t cell = 0;
  for (int a = 0; a < kMaxAxes; ++a) {
    if (!((s.axis_mask >> a) & 1)) continue;
    auto ua = static_cast<size_t>(a);
    int64_t stride = last.shape[ua] / s.shape[ua];
    int64_t local = (index[a] / stride) % s.extent[ua];
    if (local < 0) local += s.extent[ua];  // out-of-bounds indices wrap, never escape
    cell = cell * s.extent[ua] + local;
  }
  return cell;
}

int64_t TreeLayout::find_cell(int target, const int64_t* index, const WordReader& w) const {
  std::vector<int> p = path(target);
  int64_t addr = root_offset;
  for (size_t n = 1; n < p.size(); ++n) {
    const SNodeLayout& s = node(p[n]);
    int64_t c = local_cell(p[n], target, index);
    addr = cell_in_container(s, addr + s.component_offset, c, w);
    if (addr < 0) return -1;
  }
  return addr;
}

int64_t TreeLayout::find_element(int field_id, const int64_t* index, const WordReader& w) const {
  const FieldLayout* f = field(field_id);
  GROVE_ASSERT(f != nullptr, "find_element of a field that is not in this tree");
  const int place = f->place;
  int64_t cell = find_cell(node(place).parent, index, w);
  return cell < 0 ? -1 : cell + node(place).component_offset;
}

std::vector<uint32_t> TreeLayout::field_path(int field_id) const {
  const FieldLayout* f = field(field_id);
  GROVE_ASSERT(f != nullptr, "field_path of a field that is not in this tree");
  if (f->shape.size() > static_cast<size_t>(kPathMaxIndices))
    throw Error("field '" + f->name + "' has " + std::to_string(f->shape.size()) + " indices; shader lookups "
                "(shaders/grove_tree.glsl) take at most " + std::to_string(kPathMaxIndices));
  auto word = [&](int64_t v, const char* what) {
    if (v < 0 || v > int64_t{UINT32_MAX})
      throw Error("field '" + f->name + "': its " + what + " (" + std::to_string(v) +
                  ") does not fit the 32-bit words of a shader lookup");
    return static_cast<uint32_t>(v);
  };
  const int target = node(f->place).parent;
  const std::vector<int> p = path(target);
  const std::vector<int> axes = node(f->place).axes();
  std::vector<uint32_t> w(kPathHeaderWords + (p.size() - 1) * kLevelWords, 0u);
  w[kPathLevels] = static_cast<uint32_t>(p.size() - 1);
  w[kPathIndices] = static_cast<uint32_t>(f->shape.size());
  w[kPathRootWord] = word(root_offset, "root cell's word");
  w[kPathPlaceWord] = word(node(f->place).component_offset, "place's word");
  w[kPathStorageWords] = static_cast<uint32_t>(storage_words(f->dtype));
  for (size_t d = 0; d < f->shape.size(); ++d) {
    if (f->shape[d] > INT32_MAX || f->offset_of(d) < INT32_MIN || f->offset_of(d) > INT32_MAX - f->shape[d])
      throw Error("field '" + f->name + "': index " + std::to_string(d) + " does not fit a shader's int");
    w[kPathShape + d] = static_cast<uint32_t>(f->shape[d]);
    w[kPathOffset + d] = static_cast<uint32_t>(static_cast<int32_t>(f->offset_of(d)));
  }
  const SNodeLayout& leaf = node(target);
  for (size_t n = 1; n < p.size(); ++n) {
    const SNodeLayout& s = node(p[n]);
    uint32_t* l = w.data() + kPathHeaderWords + (n - 1) * kLevelWords;
    static_assert(static_cast<int>(SNodeType::dense) == 1 && static_cast<int>(SNodeType::dynamic) == 4);
    l[kLevelKind] = static_cast<uint32_t>(s.type);
    l[kLevelComponent] = word(s.component_offset, "component offset");
    l[kLevelCellWords] = word(s.cell_words, "cell size");
    l[kLevelMaskWords] = word(s.mask_words, "mask words");
    l[kLevelPool] = s.has_pool() ? word(s.pool_offset, "pool offset") : 0u;
    l[kLevelEntryWords] = s.has_pool() ? word(s.pool_entry_words, "pool entry size") : 0u;
    l[kLevelChunk] = s.type == SNodeType::dynamic ? word(s.chunk_size, "chunk size") : 0u;
    l[kLevelCells] = word(s.num_cells, "cells per container");
    for (size_t d = 0; d < axes.size(); ++d) {
      const auto a = static_cast<size_t>(axes[d]);
      const bool split = (s.axis_mask >> a) & 1u;
      l[kLevelStride + d] = split ? word(leaf.shape[a] / s.shape[a], "stride") : 1u;
      l[kLevelExtent + d] = split ? word(s.extent[a], "extent") : 1u;
    }
  }
  return w;
}

int64_t TreeLayout::count_active(int target, const WordReader& w) const {
  std::vector<int> p = path(target);
  // Visits every active cell of p[depth] inside the container at `container`.
  auto visit = [&](auto&& self, size_t depth, int64_t container) -> int64_t {
    const SNodeLayout& s = node(p[depth]);
    bool last = depth + 1 == p.size();
    int64_t count = 0;
    for (int64_t c = 0; c < s.num_cells; ++c) {
      int64_t cell = -1;
      switch (s.type) {
        case SNodeType::root:
        case SNodeType::dense:
          if (last) return s.num_cells;
          cell = container + c * s.cell_words;
          break;
        case SNodeType::bitmasked:
          if (((w(container + c / 32) >> (c % 32)) & 1u) == 0) continue;
          cell = container + s.mask_words + c * s.cell_words;
          break;
        case SNodeType::pointer: {
          uint32_t v = w(container + c);
          if (v == 0) continue;
          cell = s.pool_offset + (int64_t{v} - 1) * s.pool_entry_words;
          break;
        }
        case SNodeType::dynamic: {
          int64_t length = std::min<int64_t>(w(container), s.num_cells);
          if (last) return length;
          cell = -1;  // a dynamic node's children are places
          break;
        }
        case SNodeType::place:
          return 0;
      }
      if (last) {
        ++count;
      } else if (cell >= 0) {
        count += self(self, depth + 1, cell + node(p[depth + 1]).component_offset);
      }
    }
    return count;
  };
  if (p.size() == 1) return 1;
  return visit(visit, 1, root_offset + node(p[1]).component_offset);
}

}  // namespace grove::rt
