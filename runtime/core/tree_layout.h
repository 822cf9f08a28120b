// runtime/core/tree_layout.h — a tree type's memory layout as a plain value:
// every SNode's word offsets and pools, every field's place, and the walks
// the host makes over a tree's words (DESIGN.md, "Memory contract";
// docs/memory.md). The compiler computes it (ir::SNodeForest::lay_out); the
// runtime only reads it, so it knows nothing of the IR.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "grove/types.h"

namespace grove::rt {

inline constexpr int kMaxAxes = 8;
// Most cells one SNode may have in a tree (and so most elements of a field).
inline constexpr int64_t kMaxCells = int64_t{1} << 40;
// Most words of one tree's buffer: word offsets are u32.
inline constexpr int64_t kMaxTreeWords = int64_t{1} << 32;
// Most entries of one pool: a slot holds entry + 1 in a u32 word.
inline constexpr int64_t kMaxPoolCapacity = (int64_t{1} << 32) - 2;

// The kinds of include/grove/snode_kinds.def, numbered as grove::SNodeKind.
enum class SNodeType : uint8_t {
#define GROVE_SNODE_KIND(name, sparse, pool, list) name,
#include "grove/snode_kinds.def"
#undef GROVE_SNODE_KIND
};
inline constexpr int kSNodeTypes = 0
#define GROVE_SNODE_KIND(name, sparse, pool, list) +1
#include "grove/snode_kinds.def"
#undef GROVE_SNODE_KIND
    ;
const char* snode_type_name(SNodeType t);

using AxisArray = std::array<int64_t, kMaxAxes>;

struct SNodeLayout {
  int id = -1;
  SNodeType type = SNodeType::root;
  int parent = -1;  // -1 for a root
  int tree = -1;
  std::vector<int> children;
  int field = -1;                 // place: the field it holds
  int64_t chunk_size = 0;         // dynamic
  AxisArray extent{};             // this node's split per physical axis (1 when not split)
  uint32_t axis_mask = 0;         // axes this node splits
  uint32_t path_axes = 0;         // axes split by this node or an ancestor
  // Derived when added:
  AxisArray shape{};              // index space of this node's cells: product of extents root..here
  int64_t num_cells = 1;          // cells per container (product of extent)
  int64_t total_cells = 1;        // cells in the whole tree (product of num_cells root..here)
  int depth = 0;                  // root 0
  int64_t requested_capacity = 0;  // pointer/dynamic: pool cells (chunks) asked for; 0 = from the budget
  // Derived when the tree is laid out (words):
  int64_t cell_words = 0;         // one cell = its children's containers side by side
  int64_t container_words = 0;    // one container of this node (place: the value)
  int64_t component_offset = 0;   // where this node's container starts in its parent's cell
  int64_t mask_words = 0;         // bitmasked: the bit words at the start of a container
  int64_t num_chunks = 0;         // dynamic: chunk slots per container
  int64_t max_cells = 0;          // most cells of this node that can exist at once
  // Pools (pointer: cells; dynamic: chunks of chunk_size cells), DESIGN.md "Memory contract".
  int64_t capacity = 0;           // pool entries
  int64_t pool_entry_words = 0;   // words per pool entry
  int64_t pool_offset = -1;       // entries
  int64_t order_offset = -1;      // allocation order: capacity words (see PoolState)
  int64_t spare_offset = -1;      // candidates left by CAS losers, a bitmap over entries: (capacity + 31) / 32 words
  int64_t queue_offset = -1;      // deactivated, waiting for gc: capacity words
  // Pointer pools (docs/memory.md, "Lists and struct-fors"): one bit per
  // entry, set by the entry's publisher and cleared by the gc that frees it
  // (listgen reads them), and per entry the coordinates of the cell it was
  // published in, entry_coord_words() each (the loops over a list of the
  // pool's entries read them: the list holds only the containers).
  int64_t in_use_offset = -1;     // ceil(capacity / 32) words
  int64_t coords_offset = -1;     // capacity * entry_coord_words() words
  // Allocator state: kPoolStateWords words in the tree header, the pools'
  // blocks side by side in TreeDecl::pools order.
  int64_t state_offset = -1;
  // List of active containers filled by listgen (not for root and place).
  int64_t list_offset = -1;       // [length][entries]
  int64_t list_capacity = 0;      // entries
  int64_t list_entry_words = 0;   // [container address][parent cell index per axis]

  bool is_sparse() const;         // pointer, bitmasked or dynamic
  bool has_pool() const;          // pointer or dynamic
  bool has_list() const;          // not root, not place
  // Pointer: the coordinates kept per pool entry: one word where every
  // axis's fits in it side by side (coords_packed), else a word per axis,
  // coord_axes() of them; else 0.
  int64_t entry_coord_words() const;
  // Pointer: the axes whose coordinates an entry keeps, max(1, ndim()).
  int coord_axes() const;
  // Axis a's coordinate (below shape[a]) takes coord_bits(a) bits, at bit
  // coord_shift(a) of the entry's one word where coords_packed().
  int coord_bits(int axis) const;
  int coord_shift(int axis) const;
  bool coords_packed() const;
  // Words of bookkeeping per pool entry: its position in the allocation
  // order, its spare slot, its gc queue slot and, for a pointer, its
  // coordinates and (rounded up to a word) its in-use bit.
  int64_t pool_bookkeeping_words() const;

  std::string name() const;       // "S3dense", "S5place_x"
  // Physical axes: index vectors inside the runtime (and list entries) hold
  // one value per axis 0..ndim()-1; axes the path does not split hold 0.
  int ndim() const;               // highest axis split on the path to here, plus one
  // Taichi's rule for the indices users write: one per axis the path splits,
  // ordered by axis number. axes()[d] is the physical axis of index d.
  std::vector<int> axes() const;
  int num_indices() const;        // axes().size()
};

// One step down the memory contract (docs/memory.md): the first word of
// cell `c` of a container of node `s` (a node below the root) that starts
// at word `container`, reading the tree's masks, slots and lengths through
// `word`; -1 when the cell is inactive.
template <typename Word>
int64_t cell_in_container(const SNodeLayout& s, int64_t container, int64_t c, const Word& word) {
  switch (s.type) {
    case SNodeType::root:
    case SNodeType::place:
    case SNodeType::dense:
      return container + c * s.cell_words;
    case SNodeType::bitmasked:
      if (((word(container + c / 32) >> (c % 32)) & 1u) == 0) return -1;
      return container + s.mask_words + c * s.cell_words;
    case SNodeType::pointer: {
      const uint32_t v = word(container + c);
      if (v == 0) return -1;
      return s.pool_offset + (int64_t{v} - 1) * s.pool_entry_words;
    }
    case SNodeType::dynamic: {
      const int64_t length = std::min<int64_t>(word(container), s.num_cells);
      if (c >= length) return -1;
      const uint32_t v = word(container + 1 + c / s.chunk_size);
      if (v == 0) return -1;
      return s.pool_offset + (int64_t{v} - 1) * s.pool_entry_words + (c % s.chunk_size) * s.cell_words;
    }
  }
  return -1;
}

// Allocator state of one pool, in the tree header (word offsets from state_offset).
//
// The first `capacity` tickets take the positions of the allocation order
// in turn: order[p] holds the entry minus p, so a zeroed pool hands out
// entries 0, 1, 2, ..., and gc writes the entries it frees just below the
// next position. Later tickets reuse the candidates CAS losers left, one
// bit per entry in the spare bitmap (ir::SparseRuntime::take_spare).
enum PoolState : int64_t {
  kTickets = 0,       // allocations so far; the first `capacity` took the order's positions
  kSpareCount = 1,    // entries in the spare bitmap: candidates CAS losers left, not reused yet
  kSpareHint = 2,     // the bitmap word the last spare went to (where takers start looking)
  kQueueCount = 3,    // entries deactivated, waiting for gc
  kAllocFailures = 4, // allocations that found the pool full
  kAppendFailures = 5,// dynamic: appends past the maximum length
  kHighWater = 6,     // most entries ever held at once (in use, or deactivated and waiting for gc), as of the last gc
  kCollected = 7,     // entries gc returned to the allocation order so far
  kPositions = 8,     // most order positions ever taken, as of the last gc: every entry
                      // ever handed out is below max(this, min(tickets, capacity))
  kPoolStateWords = 9,
};

// Tree header words before the per-pool states.
enum TreeHeader : int64_t {
  kMagic = 0,         // 0x47524f56 "GROV"
  kLayoutVersion = 1,
  kTotalWords = 2,
  kHeaderWords = 4,
};
inline constexpr uint32_t kTreeMagic = 0x47524f56u;
inline constexpr uint32_t kLayoutVersionValue = 8;  // 6: the root region on a 64-byte line, big siblings 4 KiB apart; 7: spares a bitmap, a bit per entry; 8: a pointer entry's coordinates in one word where they fit
// A cache line in words. The root region starts on one (offset from the
// buffer's start), and host buffers start on one (rt::Words), so a dense
// field under the root whose rows are whole lines is line-aligned.
inline constexpr int64_t kLineWords = 16;

// Field path words (TreeLayout::field_path; shaders/grove_tree.glsl reads
// them). Header: levels, indices, root cell's word, the place's word in its
// cell, storage words per element, then per index (4 each) the extent and
// the first index. Each level: its kind (1 dense, 2 bitmasked, 3 pointer,
// 4 dynamic), the words of the memory contract, and per index the stride
// and extent of its cells.
enum FieldPathWord : uint32_t {
  kPathLevels = 0, kPathIndices = 1, kPathRootWord = 2, kPathPlaceWord = 3, kPathStorageWords = 4,
  kPathShape = 8, kPathOffset = 12, kPathHeaderWords = 16,
  kLevelKind = 0, kLevelComponent = 1, kLevelCellWords = 2, kLevelMaskWords = 3, kLevelPool = 4,
  kLevelEntryWords = 5, kLevelChunk = 6, kLevelCells = 7, kLevelStride = 8, kLevelExtent = 12, kLevelWords = 16,
};
inline constexpr int kPathMaxIndices = 4;

// A field placed in a tree: its scalar type, its place node, and the
// indices users give it (one per axis its path splits, offset included).
struct FieldLayout {
  int id = -1;
  std::string name;
  DataType dtype = DataType::unknown;
  int place = -1;                 // the place node's id
  std::vector<int64_t> shape;     // extent per index
  std::vector<int64_t> offset;    // per index; empty when every offset is 0
  int64_t offset_of(size_t d) const { return offset.empty() ? 0 : offset[d]; }
};

// Reads word `a` of a tree's buffer.
using WordReader = std::function<uint32_t(int64_t)>;

// One tree type's layout. Node ids are the compiler's (unique in a
// program), so that kernel plans and layouts name the same nodes.
class TreeLayout {
 public:
  int root = -1;                   // the root node's id
  int64_t root_offset = 0;         // word offset of the root cell
  int64_t total_words = 0;         // size of a tree's buffer
  std::vector<SNodeLayout> nodes;  // every node, root first, in pre-order
  std::vector<int> pools;          // ids of the nodes with a pool, in pre-order
  std::vector<FieldLayout> fields;

  // Builds the lookup from ids (call after filling `nodes`).
  void index();
  bool has_node(int id) const;
  const SNodeLayout& node(int id) const;
  const FieldLayout* field(int id) const;              // nullptr if not in this tree
  const FieldLayout* field(std::string_view name) const;
  std::vector<int> path(int node) const;               // root..node, inclusive

  // The initial words of a tree's buffer up to the root region: the header
  // (magic, layout version, total words); everything else starts at zero.
  std::vector<uint32_t> header_words() const;

  // Local cell number within a container of `node` for physical indices in
  // the index space of `leaf` (a descendant of `node`, or `node` itself):
  // each axis is reduced modulo the node's extent, row-major over its axes.
  int64_t local_cell(int node, int leaf, const int64_t* indices) const;
  // The first word of a cell of `node` for physical indices in its index
  // space, following the memory contract without activating anything; -1
  // when a sparse ancestor (or the cell) is inactive. Out-of-bounds indices
  // wrap (debug mode checks bounds first).
  int64_t find_cell(int node, const int64_t* indices, const WordReader& word) const;
  // The word of one element of `field` (physical indices), or -1.
  int64_t find_element(int field, const int64_t* indices, const WordReader& word) const;
  // The path words of `field` for shaders/grove_tree.glsl (and
  // grove::runtime::FieldInfo::path): a 16-word header, then 16 words per
  // node from below the root to the place's parent (see kFieldPath*).
  // Raises grove::Error for a field of more than 4 indices.
  std::vector<uint32_t> field_path(int field) const;
  // The active cells of `node` in a tree's words.
  int64_t count_active(int node, const WordReader& word) const;

 private:
  std::vector<int> slot_;  // node id -> position in `nodes`, -1 if not in this tree
};

}  // namespace grove::rt
