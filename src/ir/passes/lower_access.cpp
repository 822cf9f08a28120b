// src/ir/passes/lower_access.cpp — fields and SNode operations become tree memory.
#include "ir/passes/lower_access.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_set>
#include <unordered_map>
#include <vector>

#include "ir/passes/offload.h"

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/builder.h"
#include "ir/snode.h"
#include "ir/sparse_runtime.h"

namespace grove::ir {

namespace {

class Lowerer {
 public:
  Lowerer(Kernel& k, const LowerAccessOptions& o) : kernel_(k), forest_(*k.forest), options_(o) {}

  void run() {
    // Decided before anything is lowered (a struct-for's loop is gone after).
    std::vector<bool> changes;
    for (size_t n = 0; n < kernel_.body()->size(); ++n) changes.push_back(changes_words(kernel_.body()->at(n)));
    // Struct-fors first: their bodies move into the list loops and are then
    // lowered like any other statements.
    for (size_t n = 0; n < kernel_.body()->size(); ++n) {
      Stmt* task = kernel_.body()->at(n);
      if (task->task_kind() != TaskKind::struct_for) continue;
      Block* b = task->body();
      Stmt* loop = b->at(b->size() - 1);
      GROVE_ASSERT(loop->kind() == StmtKind::StructFor, "a struct_for task must end with its struct_for");
      changes_words_ = changes[n];
      lower_struct_for(loop);
    }
    for (size_t n = 0; n < kernel_.body()->size(); ++n) {
      changes_words_ = changes[n];
      lower_block(kernel_.body()->at(n)->body());
    }
    kernel_.stage = Stage::lowered;
  }

 private:
  [[noreturn]] void fail(const std::string& m) { throw Error("kernel '" + kernel_.name() + "': " + m); }

  // Whether invocations of `task` may change the sparse runtime's words
  // (slots, masks, lengths) or, through a narrow atomic's compare-and-swap
  // loop, a field's word that another reads: a write to a field under a
  // sparse node (it may activate; not one within the cells a struct-for
  // visits, is_within_own_cells, in a loop that deactivates nothing), any
  // atomic, or an SNode operation that activates, deactivates or appends.
  // Else its runtime reads are plain loads (SparseRuntime::set_task_changes_words).
  bool changes_words(Stmt* task) const {
    const Block* body = task->body();
    const Stmt* loop = task->task_kind() == TaskKind::struct_for ? body->at(body->size() - 1) : nullptr;
    bool changes = false;
    std::vector<const Stmt*> sparse_stores;
    walk(task->body(), [&](Stmt* s) {
      switch (s->kind()) {
        case StmtKind::FieldAtomic:
          changes = true;
          break;
        case StmtKind::FieldStore:
          if (forest_.is_sparse_path(parent_of_place(s->field()))) sparse_stores.push_back(s);
          break;
        case StmtKind::SNodeOp:
          if (s->snode_op() != SNodeOpKind::is_active && s->snode_op() != SNodeOpKind::length) changes = true;
          break;
        default:
          break;
      }
    });
    // (A deactivation has set `changes`, so the loop's cells stay active below.)
    return changes || std::any_of(sparse_stores.begin(), sparse_stores.end(), [&](const Stmt* s) {
             return loop == nullptr || !is_within_own_cells(forest_, kernel_.fields(), s, loop);
           });
  }

  int node_of_struct_for(const Stmt* s) const {
    return s->field() >= 0 ? forest_.snode(forest_.place_of(s->field())).parent : s->snode();
  }

  void lower_struct_for(Stmt* loop) {
    Block* block = loop->parent();
    size_t pos = block->position_of(loop);
    std::unique_ptr<Stmt> owned = block->take(pos);
    // Accesses to the loop's own cell (decided before the indices change).
    bool keeps_cells = true;
    walk(loop->body(), [&](Stmt* s) {
      if (s->kind() == StmtKind::SNodeOp && s->snode_op() == SNodeOpKind::deactivate) keeps_cells = false;
    });
    const int node = node_of_struct_for(loop);
    // And reads of fields in the loop's own cells at other indices (a
    // stencil's neighbours), where the target asks for it: at constant
    // offsets, from the neighbouring blocks a run looks up once
    // (SparseRuntime::lookup_at_offset); else, where they fall in the
    // loop's cell of the deepest sparse level, at the loop's cell's address
    // plus an offset, with no slot read (SparseRuntime::lookup_near).
    const bool reads_near =
        options_.near_reads != LowerAccessOptions::NearReads::off && SparseRuntime::looks_up_near(forest_, node);
    std::vector<Stmt*> own, near;
    // Accesses beside the loop's own cells at its indices (a field in a
    // dense block beside the loop's under the same pointer): an address
    // from the loop's cell, no walk (SparseRuntime::cell_beside).
    std::vector<Stmt*> beside;
    bool writes_elsewhere = false;  // a write that may activate a cell the runs' lookups found empty
    if (keeps_cells)
      walk(loop->body(), [&](Stmt* s) {
        if (s->kind() == StmtKind::SNodeOp && s->tree_param() == loop->tree_param()) writes_elsewhere = true;
        if (!is_field_access(s->kind())) return;
        if (is_own_cell_access(forest_, kernel_.fields(), s, loop)) {
          own.push_back(s);
        } else if (is_within_own_cells(forest_, kernel_.fields(), s, loop) &&
                   SparseRuntime::cell_beside_known(forest_, node, parent_of_place(s->field()))) {
          beside.push_back(s);
        } else if (s->kind() != StmtKind::FieldLoad) {
          writes_elsewhere = writes_elsewhere || s->tree_param() == loop->tree_param();
        } else if (reads_near && s->tree_param() == loop->tree_param() && parent_of_place(s->field()) == node) {
          near.push_back(s);
        }
      });
    std::unordered_map<const Stmt*, std::pair<std::vector<int64_t>, uint32_t>> at_offsets;  // and clamped axes
    std::vector<std::vector<int>> directions;  // the neighbouring blocks those reach
    // Runs of cells that keep their length: where they shorten to keep a
    // device busy (lavapipe's: set_least_iterations), a run's lookups cost
    // more than the reads' test for their own block (lookup_near) when the
    // list is short (smoke_sparse's step, with runs of 4 cells, 15% slower
    // on lavapipe; a 3-D Laplacian over 3,072 blocks, with runs of 64,
    // 15% faster).
    const bool runs = options_.cells_per_iteration > 1 && options_.least_iterations == 0 && !writes_elsewhere;
    std::erase_if(near, [&](Stmt* s) {
      std::vector<int64_t> d;
      uint32_t clamped = 0;
      if (runs && loop_offsets(s, loop, node, d, clamped) && SparseRuntime::reads_at_offset(forest_, node, d)) {
        for (std::vector<int>& r : SparseRuntime::blocks_reached(d))
          if (std::find(directions.begin(), directions.end(), r) == directions.end())
            directions.push_back(std::move(r));
        at_offsets[s] = {std::move(d), clamped};
        return false;
      }
      return options_.near_reads != LowerAccessOptions::NearReads::all;
    });
    Builder b(block, pos);
    b.set_tree_param(loop->tree_param());  // the list loop reads the instance it runs over
    SparseRuntime rt = runtime(b);
    rt.set_cells_per_iteration(options_.cells_per_iteration);
    rt.set_least_iterations(options_.least_iterations);
    const std::vector<int> axes = forest_.snode(node).axes();
    const FieldDecl* over = loop->field() >= 0 ? &kernel_.fields().get(loop->field()) : nullptr;
    auto blocks = std::make_shared<SparseRuntime::NearBlocks>();
    SparseRuntime::RunStart run_start = nullptr;
    if (!directions.empty())
      run_start = [&](const std::vector<Stmt*>& bases) { *blocks = rt.near_blocks(node, bases, directions); };
    rt.emit_struct_for(node, [&](const std::vector<Stmt*>& indices, Stmt* cell) {
      for (Stmt* s : own) own_cell_[s] = cell;
      if (cell != nullptr) {
        std::unordered_map<int, Stmt*> beside_cells;  // by the accessed field's parent
        for (Stmt* s : beside) {
          const int target = parent_of_place(s->field());
          auto [it, added] = beside_cells.try_emplace(target, nullptr);
          if (added) it->second = rt.cell_beside(node, cell, indices, target);
          own_cell_[s] = it->second;
        }
        // (Runs of one cell have no run_start: those reads look up near, or walk.)
        const bool looked_up = !directions.empty() && blocks->corners.size() == directions.size();
        for (Stmt* s : near) {
          auto it = at_offsets.find(s);
          if (looked_up && it != at_offsets.end())
            near_[s] = Near{node, indices, cell, it->second.first, it->second.second, blocks};
          else if (options_.near_reads == LowerAccessOptions::NearReads::all)
            near_[s] = Near{node, indices, cell, {}, 0, nullptr};
        }
      }

      // Move the old body here; its loop indices (one per axis the node's
      // path splits, plus the field's offset) become the cell's indices.
      Block* old = loop->body();
      while (!old->empty()) {
        std::unique_ptr<Stmt> s = old->take(0);
        if (s->kind() == StmtKind::LoopIndex && s->loop() == loop) {
          const int d = s->index();
          Stmt* index = indices.at(static_cast<size_t>(axes.at(static_cast<size_t>(d))));
          if (over != nullptr && over->offset_of(d) != 0) {
            Builder at(b.block(), b.position());
            at.set_tree_param(b.tree_param());
            index = at.binary(BinaryOp::add, index, at.const_int(DataType::i32, over->offset_of(d)));
            b.set_insert_point(b.block(), at.position());
          }
          replace_all_uses(kernel_.body(), s.get(), index);
          replace_all_uses(old, s.get(), index);
          continue;
        }
        b.block()->insert(b.position(), std::move(s));
        b.set_insert_point(b.block(), b.position() + 1);
      }
    }, run_start);
  }

  // A read's constant offsets from the loop's cell, per axis below
  // `node`'s ndim() in its index space (into `out`), where each of its
  // indices is the loop's index of the same position plus a constant, or
  // that clamped to constant bounds (max(min(i + c, hi), lo), either way
  // round) that hold every index the loop visits there, for a field of the
  // loop field's offset on that axis: the read then lies between the
  // loop's cell and the offset (a stencil at a grid's edges). Those axes
  // are set in `clamped`.
  bool loop_offsets(const Stmt* access, const Stmt* loop, int node, std::vector<int64_t>& out,
                    uint32_t& clamped) const {
    const FieldDecl& f = kernel_.fields().get(access->field());
    const FieldDecl* over = loop->field() >= 0 ? &kernel_.fields().get(loop->field()) : nullptr;
    const SNodeDecl& s = forest_.snode(node);
    const std::vector<int> axes = s.axes();
    std::span<Stmt* const> idx = access->indices();
    if (idx.size() != axes.size()) return false;
    out.assign(static_cast<size_t>(s.ndim()), 0);
    clamped = 0;
    auto bound = [](const Stmt* x, BinaryOp op) {  // x = op(something, a constant), in i32
      return x->kind() == StmtKind::Binary && x->type() == DataType::i32 && x->binary_op() == op && x->rhs()->is_const();
    };
    for (size_t k = 0; k < idx.size(); ++k) {
      int64_t c = 0;
      const Stmt* at = idx[k];
      const int d = static_cast<int>(k);
      const int64_t loop_offset = over != nullptr ? over->offset_of(d) : 0;
      for (BinaryOp outer : {BinaryOp::max, BinaryOp::min}) {
        const BinaryOp inner = outer == BinaryOp::max ? BinaryOp::min : BinaryOp::max;
        if (!bound(at, outer) || !bound(at->lhs(), inner)) continue;
        const int64_t lo = outer == BinaryOp::max ? at->rhs()->const_int() : at->lhs()->rhs()->const_int();
        const int64_t hi = outer == BinaryOp::max ? at->lhs()->rhs()->const_int() : at->rhs()->const_int();
        const int64_t first = loop_offset, last = loop_offset + s.shape[static_cast<size_t>(axes[k])] - 1;
        if (lo > first || hi < last || f.offset_of(d) != loop_offset) return false;
        clamped |= 1u << axes[k];
        at = at->lhs()->lhs();
        break;
      }
      while (at->kind() == StmtKind::Binary && at->type() == DataType::i32 &&
             (at->binary_op() == BinaryOp::add || at->binary_op() == BinaryOp::sub)) {
        const bool add = at->binary_op() == BinaryOp::add;
        if (at->rhs()->is_const()) {
          c += add ? at->rhs()->const_int() : -at->rhs()->const_int();
          at = at->lhs();
        } else if (add && at->lhs()->is_const()) {
          c += at->lhs()->const_int();
          at = at->rhs();
        } else {
          break;
        }
        if (c > INT32_MAX || c < INT32_MIN) return false;
      }
      if (at->kind() != StmtKind::LoopIndex || at->loop() != loop || at->index() != d) return false;
      // The loop's index is its cell's plus the loop field's offset; the
      // read's cell is its index less its field's.
      out[static_cast<size_t>(axes[k])] = c + loop_offset - f.offset_of(d);
    }
    return true;
  }

  // The sparse runtime emitting at `b`, as every site of this task wants
  // it: whether the task changes the runtime's words, and the target's
  // subgroup activations.
  SparseRuntime runtime(Builder& b) const {
    SparseRuntime rt(forest_, b);
    rt.set_task_changes_words(changes_words_);
    rt.set_subgroup_activations(options_.subgroup_activations);
    return rt;
  }

  void check_bounds(Builder& b, const FieldDecl& f, std::span<Stmt* const> indices) {
    if (!options_.debug) return;
    std::string shape, offset, fmt;
    for (size_t a = 0; a < f.shape.size(); ++a) {
      shape += (a ? ", " : "") + std::to_string(f.shape[a]);
      offset += (a ? ", " : "") + std::to_string(f.offset_of(static_cast<int>(a)));
      fmt += a ? ", {}" : "{}";
    }
    const std::string described =
        "field '" + f.name + "' has shape (" + shape + ")" + (f.has_offset() ? " and offset (" + offset + ")" : "");
    std::vector<Stmt*> values(indices.begin(), indices.end());
    for (size_t a = 0; a < indices.size(); ++a) {
      Stmt* i = indices[a];
      const int64_t first = f.offset_of(static_cast<int>(a));
      Stmt* ok = b.binary(BinaryOp::logic_and, b.binary(BinaryOp::cmp_ge, i, b.const_int(DataType::i32, first)),
                          b.binary(BinaryOp::cmp_lt, i, b.const_int(DataType::i32, first + f.shape[a])));
      b.assert_stmt(ok, described + "; index (" + fmt + ") is out of bounds on axis " + std::to_string(a) +
                            " (debug mode)",
                    values);
    }
  }

  // The runtime's indices (one per physical axis of `node`, 0 where its
  // path splits none) for the indices a user wrote: one per axis the path
  // splits, in axis order (Taichi's rule), less the field's offset. A list
  // operation on a dynamic node names a list: its own axis takes 0.
  std::vector<Stmt*> physical(Builder& b, int node, std::span<Stmt* const> logical, const FieldDecl* field,
                              bool list) {
    const SNodeDecl& s = forest_.snode(node);
    std::vector<Stmt*> out(static_cast<size_t>(s.ndim()), nullptr);
    size_t next = 0;
    for (int axis : s.axes()) {
      if (list && s.type == SNodeType::dynamic && ((s.axis_mask >> axis) & 1)) continue;
      GROVE_ASSERT(next < logical.size(), "fewer indices than the SNode has axes");
      Stmt* v = logical[next];
      if (field != nullptr && field->offset_of(static_cast<int>(next)) != 0)
        v = b.binary(BinaryOp::sub, v, b.const_int(DataType::i32, field->offset_of(static_cast<int>(next))));
      out[static_cast<size_t>(axis)] = v;
      ++next;
    }
    GROVE_ASSERT(next == logical.size(), "more indices than the SNode has axes");
    for (Stmt*& v : out)
      if (v == nullptr) v = b.const_int(DataType::i32, 0);
    return out;
  }

  int parent_of_place(int field) const { return forest_.snode(forest_.place_of(field)).parent; }

  // A cell that an access earlier in the same block activated: writes,
  // atomics and reads at the same indices of a field under the same parent
  // use it instead of walking the tree again (a vector's components, a
  // read-modify-write), as long as nothing between may deactivate it.
  struct Activated {
    int node;
    int tree_param;
    std::vector<const Stmt*> indices;  // as the user wrote them
    std::vector<int64_t> offsets;      // the field's offset per axis
    SparseRuntime::Cell cell;
  };
  using Activations = std::vector<Activated>;

  // Whether the path to `node` has a level whose cells come and go (else
  // a walk is index arithmetic, which later passes share anyway).
  bool sparse_path(int node) const {
    for (int n : forest_.path(node)) {
      const SNodeType t = forest_.snode(n).type;
      if (t == SNodeType::pointer || t == SNodeType::bitmasked || t == SNodeType::dynamic) return true;
    }
    return false;
  }

  static std::vector<int64_t> offsets_of(const FieldDecl& f) {
    std::vector<int64_t> out;
    for (size_t a = 0; a < f.shape.size(); ++a) out.push_back(f.offset_of(static_cast<int>(a)));
    return out;
  }

  // Whether access `s` to field `f` names the cell `a` does.
  bool same_cell(const Activated& a, const Stmt* s, const FieldDecl& f) const {
    return a.node == parent_of_place(f.id) && a.tree_param == s->tree_param() && a.offsets == offsets_of(f) &&
           std::equal(a.indices.begin(), a.indices.end(), s->indices().begin(), s->indices().end());
  }

  const SparseRuntime::Cell* activated(const Activations& known, const Stmt* s, const FieldDecl& f) const {
    for (const Activated& a : known)
      if (same_cell(a, s, f)) return &a.cell;
    return nullptr;
  }

  // The cell a write or atomic at `s` activates: one an earlier access of
  // the block activated, or a new walk, remembered for later ones.
  SparseRuntime::Cell activate_for(SparseRuntime& rt, Builder& b, Activations& known, const Stmt* s,
                                   const FieldDecl& f) {
    if (const SparseRuntime::Cell* cell = activated(known, s, f)) return *cell;
    const int node = parent_of_place(f.id);
    auto grouped = grouped_.find(s);
    SparseRuntime::Cell cell = grouped != grouped_.end() ? rt.grouped_cell(grouped->second)
                                                         : rt.activate(node, physical(b, node, s->indices(), &f, false));
    if (sparse_path(node))
      known.push_back({node, s->tree_param(), std::vector<const Stmt*>(s->indices().begin(), s->indices().end()),
                       offsets_of(f), cell});
    return cell;
  }

  // Whether the statements from block->at(pos) on write the element `load`
  // reads (a store or atomic of its field at the same indices) before
  // anything but values, loads and other writes: a read-modify-write such
  // as demote_atomics makes of `x(i) += v`. The read then activates the
  // cell the write would: one walk for both, and the read never looks at a
  // cell that is not yet there (a lookup of an inactive cell reads the
  // words of pool entry 0, which another invocation may be writing).
  bool written_next(const Block* block, size_t pos, const Stmt* load) const {
    for (size_t k = pos; k < block->size(); ++k) {
      const Stmt* s = block->at(k);
      if (is_value(s->kind()) || s->kind() == StmtKind::FieldLoad) continue;
      if (s->kind() != StmtKind::FieldStore && s->kind() != StmtKind::FieldAtomic) return false;
      if (s->field() == load->field() && s->tree_param() == load->tree_param() &&
          std::equal(s->indices().begin(), s->indices().end(), load->indices().begin(), load->indices().end()))
        return true;
    }
    return false;
  }

  // Lowers one statement in place; returns the position after its replacement.
  size_t lower(Block* block, size_t pos, Activations& known) {
    Stmt* s = block->at(pos);
    std::unique_ptr<Stmt> owned = block->take(pos);
    Builder b(block, pos);
    b.set_tree_param(s->tree_param());  // every tree statement it becomes works on its instance
    SparseRuntime rt = runtime(b);
    Stmt* replacement = nullptr;
    auto field_indices = [&](const FieldDecl& f) {
      return physical(b, parent_of_place(f.id), s->indices(), &f, false);
    };
    GROVE_ASSERT(is_field_access(s->kind()) || s->kind() == StmtKind::SNodeOp,
               "lower() of a statement that needs no lowering");
    if (s->kind() == StmtKind::FieldLoad) {
      const FieldDecl& f = kernel_.fields().get(s->field());
      check_bounds(b, f, s->indices());
      if (Stmt* cell = own_cell(s)) {
        replacement = rt.load_field_at(f.id, f.dtype, rt.active_cell(cell));
      } else if (const SparseRuntime::Cell* cell = activated(known, s, f)) {
        replacement = rt.load_field_at(f.id, f.dtype, *cell);
      } else if (forest_.is_sparse_path(parent_of_place(f.id)) && written_next(block, pos, s)) {
        replacement = rt.load_field_at(f.id, f.dtype, activate_for(rt, b, known, s, f));
      } else if (auto it = near_.find(s); it != near_.end()) {
        const Near& n = it->second;
        if (n.blocks == nullptr)
          replacement = rt.load_field_at(f.id, f.dtype, rt.lookup_near(n.node, field_indices(f), n.indices, n.cell));
        else if (options_.masked_near_reads)
          replacement = rt.load_at_offset(f.id, f.dtype, n.node, *n.blocks, field_indices(f), n.offsets, n.clamped,
                                          n.indices, n.cell);
        else
          replacement = rt.load_field_at(
              f.id, f.dtype,
              rt.lookup_at_offset(n.node, *n.blocks, field_indices(f), n.offsets, n.clamped, n.indices, n.cell));
      } else {
        replacement = rt.load_field(f.id, f.dtype, field_indices(f));
      }
    } else if (s->kind() == StmtKind::FieldStore) {
      const FieldDecl& f = kernel_.fields().get(s->field());
      check_bounds(b, f, s->indices());
      if (Stmt* cell = own_cell(s)) {
        rt.store_field_at(f.id, f.dtype, rt.active_cell(cell), s->value());
      } else {
        rt.store_field_at(f.id, f.dtype, activate_for(rt, b, known, s, f), s->value());
      }
    } else if (s->kind() == StmtKind::FieldAtomic) {
      const FieldDecl& f = kernel_.fields().get(s->field());
      if (f.dtype == DataType::f16)
        fail("atomic " + std::string(op_name(s->atomic_op())) + " on f16 field '" + f.name +
             "' is not supported; use an f32 field");
      check_bounds(b, f, s->indices());
      Stmt* cell = own_cell(s);
      const SparseRuntime::Cell at = cell != nullptr ? rt.active_cell(cell) : activate_for(rt, b, known, s, f);
      replacement = rt.atomic_field_at(s->atomic_op(), f.id, f.dtype, at, s->value());
    } else {
      int node = s->snode();
      const bool list = s->snode_op() == SNodeOpKind::deactivate || s->snode_op() == SNodeOpKind::append ||
                        s->snode_op() == SNodeOpKind::length;
      std::vector<Stmt*> in = physical(b, node, s->indices(), nullptr, list);
      switch (s->snode_op()) {
        case SNodeOpKind::activate: rt.op_activate(node, in); break;
        case SNodeOpKind::deactivate: rt.op_deactivate(node, in); break;
        case SNodeOpKind::is_active: replacement = rt.op_is_active(node, in); break;
        case SNodeOpKind::length: replacement = rt.op_length(node, in); break;
        case SNodeOpKind::append: {
          // One value per field placed under the list, in placement order,
          // each converted to its field's type.
          const SNodeDecl& dyn = forest_.snode(node);
          if (s->values().size() != dyn.children.size())
            fail("append on SNode '" + dyn.name() + "' gives " + std::to_string(s->values().size()) +
                 " value(s), but " + std::to_string(dyn.children.size()) + " field(s) are placed under it");
          std::vector<Stmt*> values;
          for (size_t c = 0; c < dyn.children.size(); ++c) {
            DataType ct = compute_type(forest_.field_dtype(forest_.snode(dyn.children[c]).field));
            Stmt* v = s->values()[c];
            values.push_back(v->type() == ct ? v : b.cast(ct, v));
          }
          replacement = rt.op_append(node, in, values);
          break;
        }
      }
    }
    if (replacement != nullptr) replaced_[s] = replacement;
    dead_.push_back(std::move(owned));
    return b.position();
  }

  // Uses are rewritten as they are met (a use always follows its definition
  // in program order), not by a walk of the kernel per lowered statement.
  void remap_operands(Stmt* s) {
    for (size_t n = 0; n < s->operands().size(); ++n) {
      auto it = replaced_.find(s->operands()[n]);
      if (it != replaced_.end()) s->set_operand(n, it->second);
    }
  }

  // Returns whether the block deactivates anything (in a block inside too).
  bool lower_block(Block* block) {
    Activations known;  // this block's, in order; a nested block starts with none
    bool deactivates = false;
    const Stmt* region_end = nullptr;  // the statement after the region of groups looked at
    bool in_region = false;
    for (size_t pos = 0; pos < block->size();) {
      Stmt* s = block->at(pos);
      remap_operands(s);
      if (in_region && s == region_end) in_region = false;
      if (!in_region && options_.group_activations && !options_.debug && in_region_kind(s)) {
        region_end = find_groups(block, pos);
        in_region = true;
      }
      if (auto it = pending_.find(s); it != pending_.end()) {
        pos = emit_groups(block, pos, it->second);
        pending_.erase(it);
      }
      bool forgets = s->kind() == StmtKind::SNodeOp && s->snode_op() == SNodeOpKind::deactivate;
      if (is_field_access(s->kind()) || s->kind() == StmtKind::SNodeOp) {
        pos = lower(block, pos, known);
      } else {
        for (const auto& child : s->blocks()) forgets = lower_block(child.get()) || forgets;
        ++pos;
      }
      // The cells activated before it may be gone after it.
      if (forgets) known.clear();
      deactivates = deactivates || forgets;
    }
    return deactivates;
  }

  // ---- activations of a statement group, once ----
  //
  // A run of statements with nothing between them that could stop, loop,
  // deactivate or watch the tree (values, field accesses, variables and ifs
  // of the same) activates the cells its writes name before the first of
  // them, in one loop with one copy of the activation code per pool
  // (SparseRuntime::activate_group), when two or more writes name distinct
  // cells of one SNode: the eight neighbours' counts of sparse_life, the 27
  // nodes of an MPM particle's P2G. A write qualifies when its indices, and
  // the conditions of the ifs around it, are values the run computes (which
  // the loop computes again, divisions only by a nonzero constant) or ones
  // from before it; its cell is activated where those conditions hold, as
  // it would have been. Where the target asks for it
  // (LowerAccessOptions::group_activations), never in debug mode.

  static bool in_region_kind(const Stmt* s) {
    switch (s->kind()) {
      case StmtKind::FieldLoad:
      case StmtKind::FieldStore:
      case StmtKind::FieldAtomic:
      case StmtKind::Alloca:
      case StmtKind::LocalLoad:
      case StmtKind::LocalStore:
        return true;
      case StmtKind::If:
        for (const Block* b : {s->then_block(), s->else_block()})
          for (size_t k = 0; k < b->size(); ++k)
            if (!in_region_kind(b->at(k))) return false;
        return true;
      default:
        return is_value(s->kind());
    }
  }

  struct Site {
    Stmt* access;
    std::vector<std::pair<Stmt*, bool>> guards;  // the conditions of the ifs around it, and which branch
  };
  struct Group {  // the sites of one SNode of one tree instance
    int node, tree_param;
    std::vector<Activated> cells;          // distinct (indices as the user wrote them; cell unused)
    std::vector<std::vector<Site>> sites;  // per cell
  };
  struct Pending {  // the groups of a region, waiting for the statement they go before
    std::vector<Group> groups;
    std::unordered_set<const Stmt*> after;  // that statement and the region's others after it
  };

  // Whether `v` can be computed again before the region's statements in
  // `after`: it is from before them, or a value of theirs whose operands can.
  bool recomputable(const Stmt* v, const std::unordered_set<const Stmt*>& after,
                    std::unordered_map<const Stmt*, bool>& memo) const {
    if (!after.contains(v)) return true;
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    bool ok = is_value(v->kind());
    // An integer division the run may have guarded (by zero, or of the
    // least value by -1) is not computed where the guard is not.
    if (ok && v->kind() == StmtKind::Binary && !is_float(v->type()) &&
        (v->binary_op() == BinaryOp::div || v->binary_op() == BinaryOp::mod))
      ok = v->rhs()->is_const() && v->rhs()->const_int() != 0 && v->rhs()->const_int() != -1;
    for (const Stmt* op : v->operands()) ok = ok && recomputable(op, after, memo);
    memo[v] = ok;
    return ok;
  }

  // Looks at the region that starts at block->at(pos); notes its groups in
  // pending_ under the statement they go before. Returns the statement after
  // the region (null: the block's end).
  const Stmt* find_groups(Block* block, size_t pos) {
    size_t end = pos;
    while (end < block->size() && in_region_kind(block->at(end))) ++end;
    const Stmt* after_region = end < block->size() ? block->at(end) : nullptr;
    std::vector<Site> candidates;
    std::vector<size_t> top;  // the top-level statement of each
    std::vector<std::pair<Stmt*, bool>> guards;
    std::function<void(Block*, size_t, size_t, size_t)> scan = [&](Block* b, size_t from, size_t to, size_t at) {
      for (size_t k = from; k < to; ++k) {
        Stmt* s = b->at(k);
        const size_t t = b == block ? k : at;
        if (s->kind() == StmtKind::If) {
          guards.emplace_back(s->cond(), true);
          scan(s->then_block(), 0, s->then_block()->size(), t);
          guards.back().second = false;
          scan(s->else_block(), 0, s->else_block()->size(), t);
          guards.pop_back();
          continue;
        }
        const bool activates =
            s->kind() == StmtKind::FieldStore || s->kind() == StmtKind::FieldAtomic ||
            (s->kind() == StmtKind::FieldLoad && written_next(b, k + 1, s));
        if (!activates || own_cell(s) != nullptr || grouped_.contains(s)) continue;
        if (!SparseRuntime::groups_activations(forest_, parent_of_place(s->field()))) continue;
        candidates.push_back({s, guards});
        top.push_back(t);
      }
    };
    scan(block, pos, end, 0);
    if (candidates.size() < 2) return after_region;
    // All in one branch of one if (sparse_life's count: under `alive == 1`):
    // the branch's own block groups them, so that the loop runs only where
    // the branch does.
    const auto& outer = candidates.front().guards;
    if (!outer.empty() && std::all_of(candidates.begin(), candidates.end(), [&](const Site& c) {
          return !c.guards.empty() && c.guards.front() == outer.front();
        }))
      return after_region;
    // Statements from the first candidate's on: what the loop before it must compute again.
    const size_t hoist = top.front();
    Pending pending;
    std::unordered_set<const Stmt*>& after = pending.after;
    std::function<void(const Block*, size_t, size_t)> note = [&](const Block* b, size_t from, size_t to) {
      for (size_t k = from; k < to; ++k) {
        after.insert(b->at(k));
        for (const auto& child : b->at(k)->blocks()) note(child.get(), 0, child->size());
      }
    };
    note(block, hoist, end);
    std::unordered_map<const Stmt*, bool> memo;
    std::vector<Group> groups;
    for (const Site& c : candidates) {
      bool ok = std::all_of(c.access->indices().begin(), c.access->indices().end(),
                            [&](const Stmt* i) { return recomputable(i, after, memo); });
      for (const auto& [cond, branch] : c.guards) ok = ok && recomputable(cond, after, memo);
      if (!ok) continue;
      const FieldDecl& f = kernel_.fields().get(c.access->field());
      const int node = parent_of_place(f.id);
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const Group& x) { return x.node == node && x.tree_param == c.access->tree_param(); });
      if (g == groups.end()) g = groups.insert(groups.end(), Group{node, c.access->tree_param(), {}, {}});
      Activations& cells = g->cells;
      auto same = std::find_if(cells.begin(), cells.end(), [&](const Activated& a) { return same_cell(a, c.access, f); });
      const auto k = static_cast<size_t>(same - cells.begin());
      if (same == cells.end()) {
        cells.push_back({node, c.access->tree_param(),
                         std::vector<const Stmt*>(c.access->indices().begin(), c.access->indices().end()),
                         offsets_of(f), SparseRuntime::Cell{nullptr, nullptr}});
        g->sites.emplace_back();
      }
      g->sites[k].push_back(c);
    }
    for (Group& g : groups)
      if (g.cells.size() >= 2) pending.groups.push_back(std::move(g));
    if (!pending.groups.empty()) pending_[block->at(hoist)] = std::move(pending);
    return after_region;
  }

  // The pending groups' activation loops, before block->at(pos); returns the
  // position of that statement after them.
  size_t emit_groups(Block* block, size_t pos, const Pending& pending) {
    Builder b(block, pos);
    // The statement that computes `v` here: from before (as lowered), or a
    // copy, made once for every group (each copy lies before them all).
    Builder::CloneMap map;
    std::function<Stmt*(Stmt*)> here = [&](Stmt* v) -> Stmt* {
      if (auto r = replaced_.find(v); r != replaced_.end()) return r->second;
      if (auto c = map.find(v); c != map.end()) return c->second;
      if (!pending.after.contains(v)) return v;
      GROVE_ASSERT(is_value(v->kind()), "a grouped activation's index computed again that is no value");
      for (Stmt* op : v->operands()) map[op] = here(op);
      return b.clone(v, map);
    };
    for (const Group& g : pending.groups) {
      b.set_tree_param(g.tree_param);
      SparseRuntime rt = runtime(b);
      std::vector<SparseRuntime::GroupSite> sites;
      for (size_t k = 0; k < g.cells.size(); ++k) {
        const Site& first = g.sites[k].front();
        std::vector<Stmt*> indices;
        for (Stmt* i : first.access->indices()) indices.push_back(here(i));
        const FieldDecl& f = kernel_.fields().get(first.access->field());
        SparseRuntime::GroupSite site{physical(b, g.node, indices, &f, false), nullptr};
        // Needed where any of the cell's accesses runs (always where one is
        // under no if).
        const bool always = std::any_of(g.sites[k].begin(), g.sites[k].end(),
                                        [](const Site& at) { return at.guards.empty(); });
        for (const Site& at : g.sites[k]) {
          if (always) break;
          Stmt* holds = nullptr;
          for (const auto& [cond, branch] : at.guards) {
            Stmt* c = here(cond);
            if (!branch) c = b.unary(UnaryOp::logic_not, c);
            holds = holds == nullptr ? c : b.binary(BinaryOp::logic_and, holds, c);
          }
          site.needed = site.needed == nullptr ? holds : b.binary(BinaryOp::logic_or, site.needed, holds);
        }
        sites.push_back(std::move(site));
      }
      const std::vector<Stmt*> vars = rt.activate_group(g.node, sites);
      for (size_t k = 0; k < g.cells.size(); ++k)
        for (const Site& at : g.sites[k]) grouped_[at.access] = vars[k];
    }
    return b.position();
  }

  // The cell address a struct-for already knows for an access to its own cell.
  Stmt* own_cell(const Stmt* access) const {
    auto it = own_cell_.find(access);
    return it == own_cell_.end() ? nullptr : it->second;
  }

  Kernel& kernel_;
  const SNodeForest& forest_;
  LowerAccessOptions options_;
  std::unordered_map<const Stmt*, Stmt*> own_cell_;
  // Reads near a struct-for's own cell: its node, indices and cell.
  struct Near {
    int node;
    std::vector<Stmt*> indices;
    Stmt* cell;
    std::vector<int64_t> offsets;  // at constant offsets: per axis (lookup_at_offset)
    uint32_t clamped = 0;          // the axes whose index is clamped (lookup_at_offset)
    std::shared_ptr<const SparseRuntime::NearBlocks> blocks;  // and the blocks the run looked up; else null
  };
  std::unordered_map<const Stmt*, Near> near_;
  // Groups of activations waiting for the statement they go before, and
  // the cell variable each grouped access reads (find_groups, emit_groups).
  std::unordered_map<const Stmt*, Pending> pending_;
  std::unordered_map<const Stmt*, Stmt*> grouped_;
  bool changes_words_ = true;  // the task being lowered may change runtime words (changes_words)
  std::unordered_map<const Stmt*, Stmt*> replaced_;  // a lowered statement -> its value
  // Lowered statements stay allocated until the pass ends: their addresses
  // are keys of `replaced_`, which no new statement may take.
  std::vector<std::unique_ptr<Stmt>> dead_;
};

}  // namespace

void lower_access(Kernel& kernel, const LowerAccessOptions& options) {
  GROVE_ASSERT(kernel.forest != nullptr, "lower_access needs the kernel's SNode forest");
  GROVE_ASSERT(kernel.stage == Stage::offloaded, "lower_access needs an offloaded kernel");
  Lowerer(kernel, options).run();
}

}  // namespace grove::ir
