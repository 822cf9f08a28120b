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
#include "runtime/core/tree_layout.h"

namespace grove::ir {

// The layout data is the runtime's (runtime/core/tree_layout.h): the
// compiler computes it, the runtime reads it.
using rt::AxisArray;
using rt::kLayoutVersionValue;
using rt::kMaxAxes;
using rt::kMaxCells;
using rt::kMaxPoolCapacity;
using rt::kMaxTreeWords;
using rt::kTreeMagic;
using rt::PoolState;
using rt::snode_type_name;
using rt::SNodeType;
using rt::TreeHeader;
using SNodeDecl = rt::SNodeLayout;
using enum rt::PoolState;
using enum rt::TreeHeader;

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
  // Adds a place node for `field` under `parent`; `field_name` names it in
  // errors and in the tree's layout, with `offset` (one per index, or empty).
  int add_place(int parent, int field, DataType dtype, const std::string& field_name,
                const std::vector<int64_t>& offset = {});
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

  // The layout of a laid-out tree, as the runtime takes it.
  const rt::TreeLayout& layout(int tree) const;

  // The walks of rt::TreeLayout on the tree that holds `node` or `field`
  // (laid out): physical indices, one per axis.
  int64_t local_cell(int node, int leaf, const int64_t* indices) const;
  using WordReader = rt::WordReader;
  int64_t find_element(int field, const int64_t* indices, const WordReader& word) const;
  int64_t find_cell(int node, const int64_t* indices, const WordReader& word) const;
  int64_t count_active(int node, const WordReader& word) const;
  // Whether any node on the path root..field is sparse.
  bool is_sparse_path(int node) const;

 private:
  struct PlacedField {
    std::string name;
    std::vector<int64_t> offset;
  };
  std::vector<SNodeDecl> snodes_;
  std::vector<TreeDecl> trees_;
  std::vector<rt::TreeLayout> layouts_;  // by tree id, once laid out
  std::vector<int> place_of_field_;
  std::vector<DataType> place_dtype_;
  std::vector<PlacedField> placed_;      // by field id
};

}  // namespace grove::ir
