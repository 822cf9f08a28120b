// src/ir/snode.cpp — SNode tree types, their checks and their word layout.
#include "ir/snode.h"

#include <algorithm>
#include <limits>

#include "grove/error.h"
#include "ir/assert.h"

namespace grove::ir {

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

int SNodeForest::add_scratch_tree(int64_t words) {
  TreeDecl t;
  t.id = num_trees();
  t.laid_out = true;
  t.total_words = words;
  trees_.push_back(t);
  return t.id;
}

void SNodeForest::resize_scratch_tree(int tree_id, int64_t words) {
  TreeDecl& t = trees_.at(static_cast<size_t>(tree_id));
  GROVE_ASSERT(t.root < 0, "resize_scratch_tree of an SNode tree");
  t.total_words = words;
}

namespace {
// a * b, or false when it overflows int64.
bool mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
std::string pow2_or_number(int64_t v) {
  if (v > 0 && (v & (v - 1)) == 0 && v >= (int64_t{1} << 20)) return "2^" + std::to_string(__builtin_ctzll(static_cast<uint64_t>(v)));
  return std::to_string(v);
}
}  // namespace

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
  // Products of extents are checked before they can overflow: the number of
  // cells is bounded by kMaxCells and every axis by i32 indices.
  s.num_cells = 1;
  auto too_many = [&](const std::string& count) {
    return Error("a " + what + " node under " + where + " would have " + count + " cells; an SNode may "
                 "have at most 2^40 cells in its tree (" + std::to_string(kMaxCells) +
                 "): use smaller extents, or split the domain over several fields");
  };
  for (int a = 0; a < kMaxAxes; ++a) {
    auto ua = static_cast<size_t>(a);
    if (!mul(parent.shape[ua], s.extent[ua], &s.shape[ua]) || s.shape[ua] > std::numeric_limits<int32_t>::max())
      throw Error("a " + what + " node under " + where + " makes axis " + std::to_string(a) + " span " +
                  std::to_string(parent.shape[ua]) + " x " + std::to_string(s.extent[ua]) +
                  " indices; indices are i32, so an axis may span at most 2^31-1");
    if (!mul(s.num_cells, s.extent[ua], &s.num_cells) || s.num_cells > kMaxCells)
      throw too_many("more than " + std::to_string(kMaxCells));
  }
  if (!mul(parent.total_cells, s.num_cells, &s.total_cells) || s.total_cells > kMaxCells)
    throw too_many(std::to_string(parent.total_cells) + " x " + std::to_string(s.num_cells));
  s.path_axes = parent.path_axes | s.axis_mask;
  snodes_.push_back(s);
  snodes_[static_cast<size_t>(parent_id)].children.push_back(s.id);
  return s.id;
}

int SNodeForest::add_place(int parent_id, int field, DataType dtype, const std::string& field_name,
                           const std::vector<int64_t>& offset) {
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
  if (placed_.size() <= static_cast<size_t>(field)) placed_.resize(static_cast<size_t>(field) + 1);
  placed_[static_cast<size_t>(field)] = {field_name, offset};
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

void SNodeForest::set_capacity(int node, int64_t capacity) {
  SNodeDecl& s = snodes_.at(static_cast<size_t>(node));
  if (!s.has_pool())
    throw Error("SNode '" + s.name() + "' is " + snode_type_name(s.type) +
                "; only pointer and dynamic nodes have a pool capacity");
  if (trees_[static_cast<size_t>(s.tree)].laid_out)
    throw Error("SNode '" + s.name() + "': its tree is already in use; set capacities before the "
                "first kernel runs");
  if (capacity <= 0 || capacity > kMaxPoolCapacity)
    throw Error("SNode '" + s.name() + "': capacity " + pow2_or_number(capacity) + " must be between 1 and " +
                std::to_string(kMaxPoolCapacity) + " (a slot holds entry + 1 in a 32-bit word)");
  s.requested_capacity = capacity;
}

namespace {
int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
// Siblings after a container of at least kBigContainerWords (64 KiB) start
// kStaggerWords (4 KiB) later than packing would put them.
constexpr int64_t kBigContainerWords = int64_t{1} << 14;
constexpr int64_t kStaggerWords = 1024;
// The root region starts on a 64-byte cache line (rt::kLineWords; host
// buffers start on one: rt::Words), so a dense field's rows of whole lines
// take no vector access split across two lines. Pools stay where packing
// puts them (two-word alignment): starting them on a line made struct-fors
// over small blocks slower with the same loop code (the cpu_occupancy rows;
// docs/benchmark-history.md).

// Word counts are bounded by kMaxTreeWords; any product or sum past it (an
// explicit capacity of 2^40, a dense level of 2^40 cells) raises an error
// naming the SNode instead of wrapping.
Error too_big(const SNodeDecl& s, const std::string& what) {
  return Error("SNode '" + s.name() + "' needs " + what + " words; a tree's buffer holds at most 2^32 "
               "words (16 GiB): make its dense nodes smaller, make them sparse, or give its pointer "
               "and dynamic nodes smaller capacities");
}
int64_t product(const SNodeDecl& s, int64_t a, int64_t b) {
  int64_t r = 0;
  if (!mul(a, b, &r) || r > kMaxTreeWords) throw too_big(s, std::to_string(a) + " x " + std::to_string(b));
  return r;
}
int64_t sum(const SNodeDecl& s, int64_t a, int64_t b) {
  int64_t r = 0;
  if (!add(a, b, &r) || r > kMaxTreeWords) throw too_big(s, "more than " + std::to_string(kMaxTreeWords));
  return r;
}

// The forest's nodes by id, as the steps of lay_out see them.
struct Nodes {
  std::vector<SNodeDecl>& snodes;
  const std::vector<DataType>& place_dtype;
  SNodeDecl& operator()(int id) const { return snodes[static_cast<size_t>(id)]; }
};

// 1. Sizes, children first. Returns the alignment (in words) the node's
// container needs inside its parent's cell.
int64_t size_node(const Nodes& node, int id) {
  SNodeDecl& s = node(id);
  if (s.type == SNodeType::place) {
    s.container_words = storage_words(node.place_dtype[static_cast<size_t>(s.field)]);
    return s.container_words;
  }
  int64_t align = 1, offset = 0;
  bool after_big = false;
  for (int c : s.children) {
    int64_t ca = size_node(node, c);
    SNodeDecl& child = node(c);
    // A container after a big sibling starts kStaggerWords later: big
    // arrays side by side would otherwise start a power of two apart
    // (2^28 f32 fields 1 GiB apart), and a loop streaming through several
    // of them at once would hit the same cache sets and DRAM banks with
    // every stream (STREAM's triad ran at 0.69 of the same loop over
    // separately allocated arrays). Exactly 4 KiB, as separate page-sized
    // allocations would be: a store to one array then aliases (in the
    // address bits below 4 KiB that a load's forwarding check compares
    // first) only the same index of the next array, which a loop loads
    // before it stores. 4 KiB + 64 bytes made the stencil's stores to b
    // alias its next loads of a: 18.0 ms against 17.5 (median of five).
    if (after_big) offset = sum(s, offset, kStaggerWords);
    after_big = child.container_words >= kBigContainerWords;
    offset = align_up(offset, ca);
    child.component_offset = offset;
    offset = sum(s, offset, child.container_words);
    align = std::max(align, ca);
  }
  s.cell_words = std::max<int64_t>(align_up(offset, align), 1);
  switch (s.type) {
    case SNodeType::root:
    case SNodeType::dense:
      s.container_words = product(s, s.num_cells, s.cell_words);
      return align;
    case SNodeType::bitmasked:
      s.mask_words = align_up((s.num_cells + 31) / 32, align);
      s.container_words = sum(s, s.mask_words, product(s, s.num_cells, s.cell_words));
      return align;
    case SNodeType::pointer:
      s.pool_entry_words = align_up(s.cell_words, align);
      s.container_words = s.num_cells;  // one slot per cell
      return 1;
    case SNodeType::dynamic:
      s.num_chunks = (s.num_cells + s.chunk_size - 1) / s.chunk_size;
      s.pool_entry_words = align_up(product(s, s.chunk_size, s.cell_words), align);
      s.container_words = 1 + s.num_chunks;  // length, then chunk slots
      return 1;
    case SNodeType::place:
      break;
  }
  return align;
}

// 2. Pool capacities and the most cells each node can hold at once.
void size_pools(const Nodes& node, const TreeDecl& t, int64_t budget_bytes) {
  int64_t unset = 0;
  for (int p : t.pools)
    if (node(p).requested_capacity == 0) ++unset;
  int64_t share = unset > 0 ? std::max<int64_t>(budget_bytes / unset, 4096) : 0;
  for (int id : t.nodes) {
    SNodeDecl& s = node(id);
    int64_t parent_cells = s.parent < 0 ? 1 : node(s.parent).max_cells;
    switch (s.type) {
      case SNodeType::root:
        s.max_cells = 1;
        break;
      case SNodeType::dense:
      case SNodeType::bitmasked:
        s.max_cells = parent_cells * s.num_cells;  // <= total_cells <= kMaxCells
        break;
      case SNodeType::pointer:
      case SNodeType::dynamic: {
        int64_t per_container = s.type == SNodeType::pointer ? s.num_cells : s.num_chunks;
        int64_t possible = parent_cells * per_container;  // <= total_cells
        int64_t cap = s.requested_capacity;
        // Headroom past the most entries that can be in use at once: on a
        // parallel device, threads that lose an activation race leave their
        // candidate entry in a spare slot until the next gc (or until a
        // full pool reuses it).
        int64_t headroom = std::max<int64_t>(possible / 2, 1024);
        if (cap == 0)
          cap = std::clamp<int64_t>(share / ((s.pool_entry_words + s.pool_bookkeeping_words()) * 4), 1,
                                    std::min(possible + headroom, kMaxPoolCapacity));
        s.capacity = cap;
        s.max_cells = s.type == SNodeType::pointer
                          ? std::min(possible, cap)
                          : std::min(parent_cells * s.num_cells, product(s, cap, s.chunk_size));
        break;
      }
      case SNodeType::place:
        s.max_cells = parent_cells;
        break;
    }
  }
}

// 3. Offsets: header (with one state block per pool), root region, pools,
// lists. Returns the tree's words.
int64_t place_regions(const Nodes& node, TreeDecl& t) {
  int64_t cur = kHeaderWords;
  for (int p : t.pools) {
    node(p).state_offset = cur;
    cur += kPoolStateWords;
  }
  cur = align_up(cur, rt::kLineWords);
  t.root_offset = cur;
  cur = sum(node(t.root), cur, node(t.root).container_words);
  for (int p : t.pools) {
    SNodeDecl& s = node(p);
    cur = align_up(cur, 2);
    s.pool_offset = cur;
    cur = sum(s, cur, product(s, s.capacity, s.pool_entry_words));
    s.order_offset = cur;
    cur = sum(s, cur, s.capacity);
    s.spare_offset = cur;
    cur = sum(s, cur, (s.capacity + 31) / 32);  // a bit per entry
    s.queue_offset = cur;
    cur = sum(s, cur, s.capacity);
    if (s.type == SNodeType::pointer) {
      s.in_use_offset = cur;
      cur = sum(s, cur, (s.capacity + 31) / 32);
      s.coords_offset = cur;
      cur = sum(s, cur, product(s, s.capacity, s.entry_coord_words()));
    }
  }
  for (int id : t.nodes) {
    SNodeDecl& s = node(id);
    if (!s.has_list()) continue;
    s.list_capacity = node(s.parent).max_cells;
    // [container][its coordinates]; below a pointer the container alone
    // (the pool keeps its entries' coordinates: SparseRuntime::list_entry_bases).
    s.list_entry_words = node(s.parent).type == SNodeType::pointer ? 1 : 1 + std::max(1, s.ndim());
    s.list_offset = cur;
    cur = sum(s, cur, sum(s, 1, product(s, s.list_capacity, s.list_entry_words)));
  }
  return cur;
}

}  // namespace

void SNodeForest::lay_out(int tree_id, int64_t budget_bytes) {
  TreeDecl& t = trees_.at(static_cast<size_t>(tree_id));
  if (t.laid_out) return;
  const Nodes node{snodes_, place_dtype_};
  t.nodes.clear();
  t.pools.clear();
  auto preorder = [&](auto&& self, int id) -> void {
    t.nodes.push_back(id);
    if (node(id).has_pool()) t.pools.push_back(id);
    for (int c : node(id).children) self(self, c);
  };
  preorder(preorder, t.root);
  size_node(node, t.root);
  size_pools(node, t, budget_bytes);
  t.total_words = place_regions(node, t);
  t.laid_out = true;

  // The runtime's copy: the tree's nodes and fields, nothing of the IR.
  rt::TreeLayout l;
  l.root = t.root;
  l.root_offset = t.root_offset;
  l.total_words = t.total_words;
  l.pools = t.pools;
  for (int id : t.nodes) {
    l.nodes.push_back(node(id));
    const SNodeDecl& s = node(id);
    if (s.type != SNodeType::place) continue;
    rt::FieldLayout f;
    f.id = s.field;
    f.name = placed_[static_cast<size_t>(s.field)].name;
    f.dtype = place_dtype_[static_cast<size_t>(s.field)];
    f.place = id;
    for (int a : s.axes()) f.shape.push_back(s.shape[static_cast<size_t>(a)]);
    f.offset = placed_[static_cast<size_t>(s.field)].offset;
    l.fields.push_back(std::move(f));
  }
  l.index();
  if (layouts_.size() <= static_cast<size_t>(tree_id)) layouts_.resize(static_cast<size_t>(tree_id) + 1);
  layouts_[static_cast<size_t>(tree_id)] = std::move(l);
}

std::vector<uint32_t> SNodeForest::initial_buffer(int tree_id) const {
  const rt::TreeLayout& l = layout(tree_id);
  std::vector<uint32_t> w = l.header_words();
  w.resize(static_cast<size_t>(l.total_words), 0u);
  return w;
}

const rt::TreeLayout& SNodeForest::layout(int tree_id) const {
  GROVE_ASSERT(tree(tree_id).laid_out && tree(tree_id).root >= 0 &&
                   static_cast<size_t>(tree_id) < layouts_.size(),
               "the layout of a tree that is not laid out");
  return layouts_[static_cast<size_t>(tree_id)];
}

int64_t SNodeForest::local_cell(int n, int leaf, const int64_t* index) const {
  return layout(snode(n).tree).local_cell(n, leaf, index);
}

int64_t SNodeForest::find_cell(int n, const int64_t* index, const WordReader& w) const {
  return layout(snode(n).tree).find_cell(n, index, w);
}

int64_t SNodeForest::find_element(int field, const int64_t* index, const WordReader& w) const {
  const int place = place_of(field);
  GROVE_ASSERT(place >= 0, "find_element of an unplaced field");
  return layout(snode(place).tree).find_element(field, index, w);
}

int64_t SNodeForest::count_active(int n, const WordReader& w) const {
  return layout(snode(n).tree).count_active(n, w);
}

bool SNodeForest::is_sparse_path(int n) const {
  for (; n >= 0; n = snode(n).parent)
    if (snode(n).is_sparse()) return true;
  return false;
}

}  // namespace grove::ir
