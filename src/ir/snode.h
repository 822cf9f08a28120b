// src/ir/snode.h — SNode tree types: the structure users declare, and its
// memory layout in one buffer of 32-bit words per tree (DESIGN.md, "Memory
// contract"). Knows nothing of devices.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace grove::ir {

inline constexpr int kMaxAxes = 8;
// Most cells one SNode may have in a tree (and so most elements of a field).
inline constexpr int64_t kMaxCells = int64_t{1} << 40;
// Most words of one tree's buffer: word offsets are u32.
inline constexpr int64_t kMaxTreeWords = int64_t{1} << 32;
// Most entries of one pool: a slot holds entry + 1 in a u32 word.
inline constexpr int64_t kMaxPoolCapacity = (int64_t{1} << 32) - 2;

enum class SNodeType : uint8_t { root, dense, bitmasked, pointer, dynamic, place };
const char* snode_type_name(SNodeType t);

using AxisArray = std::array<int64_t, kMaxAxes>;

struct SNodeDecl {
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
  int64_t spare_offset = -1;      // candidates left by CAS losers, a ring: capacity words
  int64_t queue_offset = -1;      // deactivated, waiting for gc: capacity words
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

  std::string name() const;       // "S3dense", "S5place_x"
  // Physical axes: index vectors inside the runtime (and list entries) hold
  // one value per axis 0..ndim()-1; axes the path does not split hold 0.
  int ndim() const;               // highest axis split on the path to here, plus one
  // Taichi's rule for the indices users write: one per axis the path splits,
  // ordered by axis number. axes()[d] is the physical axis of index d.
  std::vector<int> axes() const;
  int num_indices() const;        // axes().size()
};

// Allocator state of one pool, in the tree header (word offsets from state_offset).
//
// The first `capacity` tickets take the positions of the allocation order
// in turn: order[p] holds the entry minus p, so a zeroed pool hands out
// entries 0, 1, 2, ..., and gc writes the entries it frees just below the
// next position. Later tickets reuse the candidates CAS losers left in the
// spare slots (entry + 1 each), through their own counter.
enum PoolState : int64_t {
  kTickets = 0,       // allocations so far; the first `capacity` took the order's positions
  kSpareCount = 1,    // candidates CAS losers left since the last gc (the n-th in spare slot n mod capacity)
  kSpareTaken = 2,    // spare slots taken for reuse since the last gc
  kQueueCount = 3,    // entries deactivated (or spares a later lap displaced), waiting for gc
  kAllocFailures = 4, // allocations that found the pool full
  kAppendFailures = 5,// dynamic: appends past the maximum length
  kHighWater = 6,     // most entries ever held at once (in use, or deactivated and waiting for gc), as of the last gc
  kCollected = 7,     // entries gc returned to the allocation order so far
  kPoolStateWords = 8,
};
// Words of bookkeeping per pool entry: its position in the allocation
// order, its spare slot and its gc queue slot.
inline constexpr int64_t kPoolBookkeepingWords = 3;

// Tree header words before the per-pool states.
enum TreeHeader : int64_t {
  kMagic = 0,         // 0x47524f56 "GROV"
  kLayoutVersion = 1,
  kTotalWords = 2,
  kHeaderWords = 4,
};
inline constexpr uint32_t kTreeMagic = 0x47524f56u;
inline constexpr uint32_t kLayoutVersionValue = 2;

struct TreeDecl {
  int id = -1;
  int root = -1;
  bool laid_out = false;
  int64_t root_offset = 0;       // word offset of the root cell
  int64_t total_words = 0;       // size of the tree's buffer
  std::vector<int> pools;        // SNodes with a pool, in tree pre-order
  std::vector<int> nodes;        // every SNode of the tree in pre-order
};

// Every SNode and tree of a program. Ids are global; trees are numbered in
// creation order. Invalid structures raise grove::Error naming the SNode.
class SNodeForest {
 public:
  int add_tree();  // returns the tree id; its root is trees()[id].root
  // A buffer that is not an SNode tree (root -1), already laid out: kernels
  // keep values that live across tasks there.
  int add_scratch_tree(int64_t words);
  void resize_scratch_tree(int tree, int64_t words);
  // Adds a child under `parent`. `axes` lists physical axes, `extents` one
  // extent per listed axis.
  int add_child(int parent, SNodeType type, const std::vector<int>& axes,
                const std::vector<int64_t>& extents, int64_t chunk_size = 0);
  // Adds a place node for `field` under `parent`; `field_name` for errors.
  int add_place(int parent, int field, DataType dtype, const std::string& field_name);
  // Sets the pool capacity of a pointer or dynamic node (before lay_out);
  // at most kMaxPoolCapacity entries.
  void set_capacity(int node, int64_t capacity);
  // Computes the word layout of a tree; no more children may be added after.
  // Pools without an explicit capacity share `budget_bytes` evenly (each
  // capped at the most entries its node can ever need).
  void lay_out(int tree, int64_t budget_bytes = int64_t{256} << 20);
  // The initial contents of a laid-out tree's buffer (header words set,
  // everything else zero).
  std::vector<uint32_t> initial_buffer(int tree) const;

  const SNodeDecl& snode(int id) const { return snodes_.at(static_cast<size_t>(id)); }
  const TreeDecl& tree(int id) const { return trees_.at(static_cast<size_t>(id)); }
  int num_snodes() const { return static_cast<int>(snodes_.size()); }
  int num_trees() const { return static_cast<int>(trees_.size()); }
  int place_of(int field) const;  // -1 if the field is not placed
  DataType field_dtype(int field) const { return place_dtype_.at(static_cast<size_t>(field)); }
  // The path root..node (inclusive).
  std::vector<int> path(int node) const;

  // Local cell number within a container of `node` for global indices in the
  // index space of `leaf` (a descendant of `node`, or `node` itself): each
  // axis is reduced modulo the node's extent, row-major over its axes.
  int64_t local_cell(int node, int leaf, const int64_t* indices) const;

  // Word offset of one element of `field` for indices in the field's index
  // space, following the memory contract without activating anything (the
  // host reader). Returns -1 when a sparse ancestor of the element is
  // inactive. Out-of-bounds indices wrap (debug mode checks bounds first).
  // `word(a)` reads word a of the field's tree.
  using WordReader = std::function<uint32_t(int64_t)>;
  int64_t find_element(int field, const int64_t* indices, const WordReader& word) const;
  // Same for a cell of any SNode (its base address), in that node's index space.
  int64_t find_cell(int node, const int64_t* indices, const WordReader& word) const;
  // Counts the active cells of `node` in a tree buffer (host walk).
  int64_t count_active(int node, const WordReader& word) const;
  // Whether any node on the path root..field is sparse.
  bool is_sparse_path(int node) const;

 private:
  std::vector<SNodeDecl> snodes_;
  std::vector<TreeDecl> trees_;
  std::vector<int> place_of_field_;
  std::vector<DataType> place_dtype_;
};

}  // namespace grove::ir
