// src/ir/snode.h — SNode tree types: the structure users declare, and its
// memory layout in one buffer of 32-bit words per tree (DESIGN.md, "Memory
// contract"). Knows nothing of devices.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace grove::ir {

inline constexpr int kMaxAxes = 8;

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
  // Derived when the tree is laid out (words):
  int64_t cell_words = 0;         // one cell = its children's containers side by side
  int64_t container_words = 0;    // one container of this node (place: the value)
  int64_t component_offset = 0;   // where this node's container starts in its parent's cell

  std::string name() const;       // "S3dense", "S5place_x"
  int ndim() const;               // highest axis split on the path to here, plus one
};

struct TreeDecl {
  int id = -1;
  int root = -1;
  bool laid_out = false;
  int64_t total_words = 0;       // size of the tree's buffer
};

// Every SNode and tree of a program. Ids are global; trees are numbered in
// creation order. Invalid structures raise grove::Error naming the SNode.
class SNodeForest {
 public:
  int add_tree();  // returns the tree id; its root is trees()[id].root
  // Adds a child under `parent`. `axes` lists physical axes, `extents` one
  // extent per listed axis.
  int add_child(int parent, SNodeType type, const std::vector<int>& axes,
                const std::vector<int64_t>& extents, int64_t chunk_size = 0);
  // Adds a place node for `field` under `parent`; `field_name` for errors.
  int add_place(int parent, int field, DataType dtype, const std::string& field_name);
  // Computes the word layout of a tree; no more children may be added after.
  void lay_out(int tree);

  const SNodeDecl& snode(int id) const { return snodes_.at(static_cast<size_t>(id)); }
  const TreeDecl& tree(int id) const { return trees_.at(static_cast<size_t>(id)); }
  int num_snodes() const { return static_cast<int>(snodes_.size()); }
  int num_trees() const { return static_cast<int>(trees_.size()); }
  int place_of(int field) const;  // -1 if the field is not placed
  // The path root..node (inclusive).
  std::vector<int> path(int node) const;

  // Word offset of one element of `field` in its tree's buffer, for indices in
  // the field's index space. Out-of-bounds indices are not an error here:
  // each local index is reduced modulo its node's extent, so the address
  // always stays inside the tree's buffer (debug mode checks bounds). Valid
  // for trees of dense nodes only; sparse trees go through lowered IR.
  int64_t dense_address(int field, const int64_t* indices) const;

 private:
  std::vector<SNodeDecl> snodes_;
  std::vector<TreeDecl> trees_;
  std::vector<int> place_of_field_;
  std::vector<DataType> place_dtype_;
};

}  // namespace grove::ir
