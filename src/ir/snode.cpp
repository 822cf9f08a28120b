// src/ir/snode.cpp — SNode tree types, their checks and their word layout.
#include "ir/snode.h"

#include <limits>

#include "grove/error.h"
#include "ir/assert.h"

namespace grove::ir {

const char* snode_type_name(SNodeType t) {
  switch (t) {
    case SNodeType::root: return "root";
    case SNodeType::dense: return "dense";
    case SNodeType::bitmasked: return "bitmasked";
    case SNodeType::pointer: return "pointer";
    case SNodeType::dynamic: return "dynamic";
    case SNodeType::place: return "place";
  }
  return "?";
}

std::string SNodeDecl::name() const {
  return "S" + std::to_string(id) + snode_type_name(type);
}

int SNodeDecl::ndim() const {
  int n = 0;
  for (int a = 0; a < kMaxAxes; ++a)
    if ((path_axes >> a) & 1) n = a + 1;
  return n;
}

int SNodeForest::add_tree() {
  TreeDecl t;
  t.id = num_trees();
  SNodeDecl root;
  root.id = num_snodes();
  root.type = SNodeType::root;
  root.tree = t.id;
  root.extent.fill(1);
  root.shape.fill(1);
  t.root = root.id;
  snodes_.push_back(root);
  trees_.push_back(t);
  return t.id;
}

int SNodeForest::add_child(int parent_id, SNodeType type, const std::vector<int>& axes,
                           const std::vector<int64_t>& extents, int64_t chunk_size) {
  const SNodeDecl& parent = snode(parent_id);
  std::string where = "SNode '" + parent.name() + "'";
  std::string what = std::string(snode_type_name(type));
  if (trees_[static_cast<size_t>(parent.tree)].laid_out)
    throw Error(where + " belongs to a tree that is already in use (a kernel ran or the host "
                "accessed one of its fields); declare new SNodes under prog.root(), which "
                "starts a new tree");
  if (parent.type == SNodeType::place)
    throw Error(where + " is a place (a field's leaf) and cannot have children");
  if (parent.type == SNodeType::dynamic)
    throw Error(where + " is dynamic: a dynamic node must be the parent of its fields' places; "
                "put the '" + what + "' node above the dynamic one");
  if (axes.empty())
    throw Error("a " + what + " node under " + where + " needs at least one axis");
  if (axes.size() != extents.size())
    throw Error("a " + what + " node under " + where + " got " + std::to_string(axes.size()) +
                " axes but " + std::to_string(extents.size()) + " extents; give one extent per axis");
  SNodeDecl s;
  s.id = num_snodes();
  s.type = type;
  s.parent = parent_id;
  s.tree = parent.tree;
  s.depth = parent.depth + 1;
  s.chunk_size = chunk_size;
  s.extent.fill(1);
  for (size_t n = 0; n < axes.size(); ++n) {
    int a = axes[n];
    if (a < 0 || a >= kMaxAxes)
      throw Error("a " + what + " node under " + where + " uses axis " + std::to_string(a) +
                  "; Grove supports at most " + std::to_string(kMaxAxes) + " axes (0.." +
                  std::to_string(kMaxAxes - 1) + ")");
    if ((s.axis_mask >> a) & 1)
      throw Error("a " + what + " node under " + where + " lists axis " + std::to_string(a) +
                  " twice");
    if (extents[n] <= 0)
      throw Error("a " + what + " node under " + where + " has extent " +
                  std::to_string(extents[n]) + " on axis " + std::to_string(a) +
                  "; extents must be at least 1 (a shape of zero holds nothing)");
    s.axis_mask |= 1u << a;
    s.extent[static_cast<size_t>(a)] = extents[n];
  }
  if (type == SNodeType::dynamic) {
    if (axes.size() != 1)
      throw Error("a dynamic node under " + where + " must split exactly one axis");
    for (int p = parent_id; p >= 0; p = snode(p).parent) {
      if ((snode(p).axis_mask >> axes[0]) & 1)
        throw Error("a dynamic node under " + where + " uses axis " + std::to_string(axes[0]) +
                    ", which its ancestor '" + snode(p).name() +
                    "' already splits; give the dynamic node an axis of its own");
    }
    if (chunk_size <= 0 || chunk_size > extents[0])
      throw Error("a dynamic node under " + where + " has chunk_size " +
                  std::to_string(chunk_size) + "; it must be between 1 and the maximum length " +
                  std::to_string(extents[0]));
  }
  constexpr int64_t kMaxCells = int64_t{1} << 40;
  s.num_cells = 1;
  for (int a = 0; a < kMaxAxes; ++a) {
    auto ua = static_cast<size_t>(a);
    s.shape[ua] = parent.shape[ua] * s.extent[ua];
    s.num_cells *= s.extent[ua];
    if (s.shape[ua] > std::numeric_limits<int32_t>::max())
      throw Error("a " + what + " node under " + where + " makes axis " + std::to_string(a) +
                  " span " + std::to_string(s.shape[ua]) +
                  " indices; indices are i32, so an axis may span at most 2^31-1");
  }
  s.total_cells = parent.total_cells * s.num_cells;
  s.path_axes = parent.path_axes | s.axis_mask;
  if (s.num_cells > kMaxCells || s.total_cells > kMaxCells)
    throw Error("a " + what + " node under " + where + " would have " +
                std::to_string(s.total_cells) + " cells; that does not fit in memory");
  snodes_.push_back(s);
  snodes_[static_cast<size_t>(parent_id)].children.push_back(s.id);
  return s.id;
}

int SNodeForest::add_place(int parent_id, int field, DataType dtype, const std::string& field_name) {
  if (field < 0) throw Error("place: invalid field");
  if (static_cast<size_t>(field) < place_of_field_.size() && place_of_field_[static_cast<size_t>(field)] >= 0)
    throw Error("field '" + field_name + "' is already placed in SNode '" +
                snode(snode(place_of_field_[static_cast<size_t>(field)]).parent).name() +
                "'; a field is placed exactly once");
  const SNodeDecl& parent = snode(parent_id);
  if (trees_[static_cast<size_t>(parent.tree)].laid_out)
    throw Error("field '" + field_name + "' cannot be placed under SNode '" + parent.name() +
                "': its tree is already in use; place it under prog.root(), which starts a new tree");
  if (parent.type == SNodeType::place)
    throw Error("field '" + field_name + "' cannot be placed under a place node");
  // Axes used must be 0..ndim-1 so that the field's indices are contiguous.
  int ndim = parent.ndim();
  if (parent.path_axes != (1u << ndim) - 1)
    throw Error("field '" + field_name + "' would be placed under SNode '" + parent.name() +
                "', whose path splits axis " + std::to_string(ndim - 1) +
                " but not every axis below it; a field's axes must be 0..n-1");
  SNodeDecl s;
  s.id = num_snodes();
  s.type = SNodeType::place;
  s.parent = parent_id;
  s.tree = parent.tree;
  s.depth = parent.depth + 1;
  s.field = field;
  s.extent.fill(1);
  s.shape = parent.shape;
  s.path_axes = parent.path_axes;
  s.total_cells = parent.total_cells;
  snodes_.push_back(s);
  snodes_[static_cast<size_t>(parent_id)].children.push_back(s.id);
  if (place_of_field_.size() <= static_cast<size_t>(field)) {
    place_of_field_.resize(static_cast<size_t>(field) + 1, -1);
    place_dtype_.resize(static_cast<size_t>(field) + 1, DataType::unknown);
  }
  place_of_field_[static_cast<size_t>(field)] = s.id;
  place_dtype_[static_cast<size_t>(field)] = dtype;
  return s.id;
}

int SNodeForest::place_of(int field) const {
  if (field < 0 || static_cast<size_t>(field) >= place_of_field_.size()) return -1;
  return place_of_field_[static_cast<size_t>(field)];
}

std::vector<int> SNodeForest::path(int node) const {
  std::vector<int> p;
  for (int n = node; n >= 0; n = snode(n).parent) p.insert(p.begin(), n);
  return p;
}

void SNodeForest::lay_out(int tree_id) {
  TreeDecl& t = trees_.at(static_cast<size_t>(tree_id));
  if (t.laid_out) return;
  // Post-order: a node's size needs its children's sizes. Returns alignment.
  auto visit = [&](auto&& self, int id) -> int64_t {
    SNodeDecl& s = snodes_[static_cast<size_t>(id)];
    if (s.type == SNodeType::place) {
      DataType dt = place_dtype_[static_cast<size_t>(s.field)];
      s.container_words = storage_words(dt);
      return storage_words(dt);
    }
    int64_t align = 1, offset = 0;
    for (int c : s.children) {
      int64_t ca = self(self, c);
      SNodeDecl& child = snodes_[static_cast<size_t>(c)];
      offset = (offset + ca - 1) / ca * ca;
      child.component_offset = offset;
      offset += child.container_words;
      align = std::max(align, ca);
    }
    s.cell_words = (offset + align - 1) / align * align;
    s.container_words = s.num_cells * s.cell_words;
    return align;
  };
  visit(visit, t.root);
  t.total_words = snode(t.root).container_words;
  if (t.total_words > (int64_t{1} << 32))
    throw Error("tree " + std::to_string(tree_id) + " needs " + std::to_string(t.total_words * 4) +
                " bytes; a tree's buffer may hold at most 2^32 words (16 GiB): make its dense "
                "nodes smaller or make them sparse");
  t.laid_out = true;
}

int64_t SNodeForest::dense_address(int field, const int64_t* index) const {
  int place = place_of(field);
  GROVE_ASSERT(place >= 0, "dense_address of an unplaced field");
  const SNodeDecl& leaf = snode(place);
  const SNodeDecl& last = snode(leaf.parent);
  int64_t address = leaf.component_offset;
  for (int n = leaf.parent; n >= 0; n = snode(n).parent) {
    const SNodeDecl& s = snode(n);
    if (s.type == SNodeType::root) break;
    int64_t cell = 0;
    for (int a = 0; a < kMaxAxes; ++a) {
      if (!((s.axis_mask >> a) & 1)) continue;
      auto ua = static_cast<size_t>(a);
      int64_t stride = last.shape[ua] / s.shape[ua];
      int64_t local = (index[a] / stride) % s.extent[ua];
      if (local < 0) local += s.extent[ua];  // out-of-bounds indices wrap, never escape
      cell = cell * s.extent[ua] + local;
    }
    address += s.component_offset + cell * s.cell_words;
  }
  return address;
}

}  // namespace grove::ir
