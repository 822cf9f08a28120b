// src/ir/sparse_runtime.h — the sparse runtime, written once as IR: lookups,
// activation by compare-and-swap, lock-free pool allocation, deactivation,
// list generation and garbage collection, emitted over a tree's word buffer
// (DESIGN.md, "Memory contract"). Every backend runs exactly this code.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "ir/builder.h"
#include "ir/ir.h"
#include "ir/snode.h"

namespace grove::ir {

// Emits sparse-runtime IR at a builder's insertion point. Indices are i32
// statements in the physical index space of the SNode named: one per axis
// 0..ndim()-1 (0 for axes its path does not split; lower_access maps the
// indices users write, one per axis the path splits, onto these). Addresses
// are u32 word offsets into the SNode's tree.
class SparseRuntime {
 public:
  SparseRuntime(const SNodeForest& forest, Builder& builder) : forest_(forest), b_(builder) {}

  // How many cells of one container an iteration of a list loop (listgen,
  // struct-for) takes. 1 (GPUs): every cell is its own parallel iteration.
  // More (CPUs): an iteration reads its list entry once and walks up to n
  // cells of the container in a serial loop, which the vectoriser sees as a
  // dense loop; a container of more cells is split into runs of n.
  void set_cells_per_iteration(uint32_t n) { cells_per_iteration_ = n; }
  // 0: a list loop's runs are cells_per_iteration cells (at most the
  // container's). Else, for containers of a power-of-two number of cells,
  // the run is the longest power of two up to that which leaves the loop at
  // least n iterations at launch (one cell when the list is short): a CPU
  // device running few list entries keeps every core busy, and many run in
  // long runs. Chosen in the task from the list's length, before the loop.
  void set_least_iterations(uint32_t n) { least_iterations_ = n; }
  // Whether other invocations of the task being lowered may change the
  // runtime's words (it activates, deactivates, appends or has atomics):
  // else load_shared is a plain load, which LLVM's vectoriser takes (it
  // refuses a loop with an atomic load) and nothing can change under it.
  void set_task_changes_words(bool changes) { task_changes_words_ = changes; }
  // Whether invocations of a subgroup that find one slot empty together
  // activate it once (activate_slot: the first of them does, the others
  // take its entry), where each would take a candidate entry and all but
  // one leave theirs spare. For devices that run invocations in subgroups
  // (SPIR-V with subgroup operations).
  void set_subgroup_activations(bool on) { subgroup_activations_ = on; }

  struct Cell {
    Stmt* address;  // u32: first word of the cell (safe to read even when !ok)
    Stmt* ok;       // u1: the cell exists (active path; allocation succeeded)
  };
  // The cell of `node`, activating nothing.
  Cell lookup(int node, const std::vector<Stmt*>& indices);
  // lookup() of a cell near an active one a struct-for knows (`own`, at
  // `own_indices`, of the same node): where both lie in one cell of the
  // path's deepest sparse level, the address is own's plus the dense
  // levels' difference, with no slot read; elsewhere a lookup(). For nodes
  // that looks_up_near() (a dense node whose path's deepest sparse level
  // is a pointer or bitmasked, only dense levels below it).
  static bool looks_up_near(const SNodeForest& forest, int node);
  Cell lookup_near(int node, const std::vector<Stmt*>& indices, const std::vector<Stmt*>& own_indices, Stmt* own);
  // Reads at constant offsets from a struct-for's own cell (a stencil's
  // neighbours), with no branch and no slot read per cell: before each run
  // of the loop's cells (emit_struct_for's `run_start`), the neighbouring
  // cells of the path's deepest sparse level that such reads can reach are
  // looked up once (near_blocks); each read then takes its own block's or
  // one of those by where the loop's cell lies in its block, plus the dense
  // levels' offsets (lookup_at_offset). For nodes that looks_up_near(),
  // and `offsets` (per axis below the node's ndim(), in its index space)
  // that reads_at_offset(): on at most three axes, each shorter than the
  // sparse cell's side there, which is a power of two (so that indices
  // past the grid's edges wrap as a walk wraps them).
  static bool reads_at_offset(const SNodeForest& forest, int node, const std::vector<int64_t>& offsets);
  // The neighbouring blocks a read at `offsets` may reach: per axis -1, 0
  // or 1, never all 0.
  static std::vector<std::vector<int>> blocks_reached(const std::vector<int64_t>& offsets);
  struct NearBlocks {
    std::vector<std::vector<int>> directions;  // as blocks_reached gives them
    std::vector<Cell> corners;                 // each one's block's first cell of the node
    Stmt* own_corner = nullptr;                // the run's own block's first cell (u32 address)
  };
  // `run_bases`: emit_struct_for's run_start argument.
  NearBlocks near_blocks(int node, const std::vector<Stmt*>& run_bases,
                         const std::vector<std::vector<int>>& directions);
  // `clamped`: the axes (bits) whose index is the loop's plus the offset
  // clamped to bounds that hold the loop's: such a read lies between the
  // loop's cell and the offset, and its block is found from its index.
  Cell lookup_at_offset(int node, const NearBlocks& blocks, const std::vector<Stmt*>& indices,
                        const std::vector<int64_t>& offsets, uint32_t clamped,
                        const std::vector<Stmt*>& own_indices, Stmt* own);
  // The value of `field` (under `node`) that lookup_at_offset finds, for a
  // code generator that vectorises a run's cell loop (LLVM's): where one
  // dense level lies below the sparse one, a cell's address is linear in
  // its indices there, so each block the read may take is read under its
  // own condition at the loop's cell's address plus a constant and the
  // run's distance between the blocks. Those become contiguous masked
  // loads of a vector loop, where selects between addresses were gathers.
  // Elsewhere load_field_at(lookup_at_offset()).
  // (Clamped reads, whose distance is not a constant, take that form.)
  Stmt* load_at_offset(int field, DataType dtype, int node, const NearBlocks& blocks,
                       const std::vector<Stmt*>& indices, const std::vector<int64_t>& offsets, uint32_t clamped,
                       const std::vector<Stmt*>& own_indices, Stmt* own);
  // The cell of `target` at a struct-for's own indices, beside the loop's
  // own cell (`own`, of `node`, at `own_indices`) under the same sparse
  // ancestors (a field placed in a dense block beside the loop's, under the
  // same pointer: offload's is_within_own_cells): where the two paths part
  // at a node below which both are dense (cell_beside_known), it is active,
  // and its address is own's less the loop's levels below that node plus
  // the target's: no slot read, no activation.
  static bool cell_beside_known(const SNodeForest& forest, int node, int target);
  Stmt* cell_beside(int node, Stmt* own, const std::vector<Stmt*>& own_indices, int target);
  // The cell of `node`, activating every sparse level on the way.
  Cell activate(int node, const std::vector<Stmt*>& indices);
  // Activation at several sites of a statement group at once, with one
  // copy of the activation code per pool on the path rather than one per
  // site (a driver compiles each copy: eight sites were ~70% of lavapipe's
  // time to compile sparse_life's count). For `node`, whose path holds
  // dense and pointer levels only (groups_activations): a loop that looks
  // up every site whose `needed` (u1, or null: always) holds, activates the
  // first empty slot it met, and looks again, until every needed site's
  // cell exists or a pool is full. Returns one u32 variable per site, the
  // cell's address or 0 where it could not be made; grouped_cell reads one.
  struct GroupSite {
    std::vector<Stmt*> indices;  // as activate() takes them
    Stmt* needed = nullptr;
  };
  static bool groups_activations(const SNodeForest& forest, int node);
  std::vector<Stmt*> activate_group(int node, const std::vector<GroupSite>& sites);
  Cell grouped_cell(Stmt* cell_var);

  // Field element access (value of compute_type(dtype)); reads give 0 when
  // inactive, writes activate, atomics activate and yield the old value.
  Stmt* load_field(int field, DataType dtype, const std::vector<Stmt*>& indices);
  void store_field(int field, DataType dtype, const std::vector<Stmt*>& indices, Stmt* value);
  Stmt* atomic_field(AtomicOp op, int field, DataType dtype, const std::vector<Stmt*>& indices,
                     Stmt* value);
  // The same at a cell of the field's place's parent that lookup() or
  // activate() gave (an activated cell serves loads too).
  Stmt* load_field_at(int field, DataType dtype, const Cell& cell);
  void store_field_at(int field, DataType dtype, const Cell& cell, Stmt* value);
  Stmt* atomic_field_at(AtomicOp op, int field, DataType dtype, const Cell& cell, Stmt* value);

  // SNode operations (docs/ir.md). For a dynamic node, deactivate/append/
  // length name the list: the value on the dynamic node's own axis is
  // ignored.
  void op_activate(int node, const std::vector<Stmt*>& indices);
  void op_deactivate(int node, const std::vector<Stmt*>& indices);
  Stmt* op_is_active(int node, const std::vector<Stmt*>& indices);
  // One value per place under the dynamic node, in order (compute types).
  Stmt* op_append(int node, const std::vector<Stmt*>& indices, const std::vector<Stmt*>& values);
  Stmt* op_length(int node, const std::vector<Stmt*>& indices);

  // Task bodies (the builder points into an empty task block).
  void emit_clear_list(int node);
  void emit_listgen(int node);
  // The struct-for over `node`'s active cells: prologue and parallel loop;
  // `body` is called inside the loop, under the activity test, with the
  // cell's global indices (i32, one per axis of the node) and the address
  // of the cell (u32), which the loop already knows from its list entry
  // (null for dynamic nodes: an element may lie in a chunk not allocated).
  using StructForBody = std::function<void(const std::vector<Stmt*>& indices, Stmt* cell)>;
  // `run_start`, where the loop takes runs of several cells of a container
  // (set_cells_per_iteration): called before each run's cell loop with the
  // container's first cell's global indices (u32, one per axis of the
  // node), for work a run's cells share (near_blocks).
  using RunStart = std::function<void(const std::vector<Stmt*>& bases)>;
  void emit_struct_for(int node, const StructForBody& body, const RunStart& run_start = nullptr);
  // The address of `field`'s value in a cell of its place's parent SNode.
  Stmt* cell_field_address(int field, Stmt* cell);
  // The cell at `address`, known to be active (a struct-for's own cell).
  Cell active_cell(Stmt* address);
  // Garbage collection of one pool, two tasks: gc (parallel, one iteration
  // per spare slot and per queued entry: zero a queued entry, queueing what
  // lies below it for the gc of the pools below, which runs later; then
  // write it, or the unused spare, into the allocation order below the next
  // position) and gc_finish (serial, no loop: the next position moved down
  // past them, counters reset, high-water mark). Nothing runs a long loop on
  // one thread (some devices cap a loop's iterations).
  void emit_gc(int pool_node);
  void emit_gc_finish(int pool_node);

 private:
  // Where a read at `offsets` from the loop's cell (`mine`, u32 per axis)
  // lies: the axes it moves along and, on each, whether it leaves the
  // loop's block there (`idx`, the read's indices, needed for clamped axes
  // only). takes() is the condition that it takes direction d's block (all
  // 0: the loop's own), or null where it never does.
  struct Leaving {
    std::vector<size_t> moved;
    std::vector<Stmt*> leaves;
  };
  Leaving leaving(int node, const std::vector<int64_t>& offsets, uint32_t clamped, const std::vector<Stmt*>& idx,
                  const std::vector<Stmt*>& mine);
  Stmt* takes(const Leaving& l, const std::vector<int>& d, const std::vector<int64_t>& offsets);
  // Small emission helpers.
  Stmt* u32(uint64_t v);
  Stmt* i32(int64_t v);
  Stmt* bin(BinaryOp op, Stmt* a, Stmt* c);
  Stmt* load(int tree, Stmt* address);
  // A word other invocations of the same task may change with atomics
  // (slots, bitmask words, lengths): an atomic load (docs/memory.md,
  // "Memory ordering"), or a plain one in a task that changes no such
  // word (set_task_changes_words).
  Stmt* load_shared(int tree, Stmt* address);           // u32 word
  void store(int tree, Stmt* address, Stmt* value);  // u32 word
  Stmt* atomic(AtomicOp op, int tree, Stmt* address, Stmt* value);  // u32
  Stmt* var(DataType t, Stmt* init);
  Stmt* get(Stmt* var);
  void set(Stmt* var, Stmt* value);
  // The if statement made.
  Stmt* if_then(Stmt* cond, const std::function<void()>& then_body,
                const std::function<void()>& else_body = nullptr);
  void serial_loop(Stmt* begin, Stmt* end, const std::function<void(Stmt*)>& body);
  Stmt* state(int pool, int64_t which);  // address of a pool state word

  // Indices as u32, one per axis up to kMaxAxes (0 past the given ones):
  // what local_cell takes.
  std::vector<Stmt*> axis_indices(const std::vector<Stmt*>& indices);
  Stmt* local_cell(int node, int leaf, const std::vector<Stmt*>& u32_indices);
  // `space`: the SNode whose index space `indices` are in (default: node).
  // With `empty` (a lookup): where the path first meets an empty pointer
  // slot, its address + 1 (0: none) and its position in the path (u32).
  struct EmptySlot {
    Stmt* slot_plus_one;
    Stmt* level;
  };
  Cell walk(int node, const std::vector<Stmt*>& indices, bool activate, int space = -1,
            EmptySlot* empty = nullptr);
  // Returns the slot value (entry + 1) after activation; 0 if the pool is
  // full. `published(entry + 1)` is emitted where this invocation's
  // candidate won the slot.
  Stmt* activate_slot(int pool, Stmt* slot_address, const std::function<void(Stmt*)>& published = nullptr);
  Stmt* allocate(int pool);  // u32 entry + 1, or 0
  Stmt* take_spare(int pool);  // a spare entry + 1 (a CAS loser's candidate), or 0
  void offer_spare(int pool, Stmt* candidate);  // a CAS loser's candidate (entry + 1) to the spares
  void loop(const std::function<void()>& body);  // while (true) { body } (body breaks)
  Stmt* order_taken(int pool);          // gc: end of the order positions taken
  Stmt* spare_word(int pool, Stmt* w);  // address of word w of the spare bitmap (u32)
  uint64_t spare_words(int pool) const;  // words of the spare bitmap
  Stmt* entry_address(int pool, Stmt* entry);  // address of pool entry `entry` (u32)
  void enqueue(int pool, Stmt* entry);  // queue a deactivated entry for gc
  // Zeroes the data of one cell of `node` at `address` and deactivates
  // everything below it (queueing pool entries for their gc).
  void release_cell(int node, Stmt* address);
  void release_container(int node, Stmt* container);
  void zero_words(int tree, Stmt* address, int64_t count);
  // u1: bit c of the bitmask at the start of `container`.
  Stmt* mask_bit(int tree, Stmt* container, Stmt* c);
  // Emits the parallel loop over every cell of every container in `node`'s
  // list (cells_per_iteration_ of them an iteration) and calls body(cell
  // number in its container, container address, the cell's global index
  // (u32) on axes 0..naxes-1) inside it.
  void for_list_cells(int node, int naxes,
                      const std::function<void(Stmt*, Stmt*, const std::vector<Stmt*>&)>& body,
                      const RunStart& run_start = nullptr);
  // The listgen loop of `child`, whose parent is a pointer: walks the
  // parent's pool in entry order through its in-use bits (a run of
  // cells_per_iteration_ / 32 words an iteration, at least one), counts the
  // run's entries in use, takes that many entries of child's list with one
  // atomic add, and calls body(list entry number, cell address) for each,
  // in entry order. The list is in memory order, so a struct-for over it
  // streams through the pool however the entries were handed out.
  void for_pool_cells(int child, const std::function<void(Stmt*, Stmt*)>& body);
  // The parallel loop over a pointer's entries in use, through its in-use
  // bits (a word an iteration); body(entry) for each, in entry order. What a struct-for over the
  // pointer itself visits: its pool's words, not every slot of its
  // containers (sparse_life's prune over 2048^2 slots a step).
  void for_pool_entries(int pool, const std::function<void(Stmt*)>& body);
  // What both loops share: the parallel loop over runs of a pointer's bit
  // words (of the entries ever handed out), `words_per_run` of them an
  // iteration (at least one); body(first word, end word), u32.
  void for_pool_word_runs(int pool, uint64_t words_per_run, const std::function<void(Stmt*, Stmt*)>& body);
  // A loop over the set bits of the u32 variable `bits` (cleared as it
  // goes), lowest first: body(bit number).
  void each_bit(Stmt* bits, const std::function<void(Stmt*)>& body);
  // What a pointer's publisher records: the entry's in-use bit (for
  // listgen), and the coordinates of the cell (in `pool`'s index space) it
  // now holds (for the loops over the lists listgen makes).
  // `idx`: u32 indices in `space`'s index space, kMaxAxes of them.
  void record_published(int pool, int space, const std::vector<Stmt*>& idx, Stmt* entry);
  // A pointer pool entry's in-use bit: the address of its word and its mask
  // (u32); and the address of the entry's first coordinate.
  std::pair<Stmt*, Stmt*> in_use_bit(int pool, Stmt* entry);
  Stmt* entry_coords(int pool, Stmt* entry);
  // The global index of a pointer's cell its pool entry `entry` holds, as
  // its publisher recorded it (u32, axes 0..naxes-1; 0 past the recorded).
  // `scale` (one per axis, or null): each multiplied by it.
  std::vector<Stmt*> entry_indices(int pool, Stmt* entry, int naxes, const int64_t* scale = nullptr);
  // The coordinates of a list entry's container (at `entry`, holding
  // `container`), scaled to `node`'s index space (u32, axes 0..naxes-1);
  // and the global index of cell `c` of it.
  std::vector<Stmt*> list_entry_bases(int node, Stmt* entry, Stmt* container, int naxes);
  std::vector<Stmt*> cell_index(int node, const std::vector<Stmt*>& bases, Stmt* c);
  bool subtree_has_pool(int node) const;

  const SNodeForest& forest_;
  Builder& b_;
  uint32_t cells_per_iteration_ = 1;
  uint32_t least_iterations_ = 0;
  bool subgroup_activations_ = false;
  bool task_changes_words_ = true;
};

}  // namespace grove::ir
