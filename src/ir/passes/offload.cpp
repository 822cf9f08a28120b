// src/ir/passes/offload.cpp — tasks, list generation and gc (see offload.h).
#include "ir/passes/offload.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/builder.h"
#include "ir/snode.h"
#include "ir/sparse_runtime.h"

namespace grove::ir {

namespace {

int struct_for_node(const SNodeForest& f, const Stmt* struct_for) {
  return struct_for->field() >= 0 ? f.snode(f.place_of(struct_for->field())).parent : struct_for->snode();
}

// Whether `access` (inside `struct_for`) takes the loop's own indices: the
// same instance, the loop's indices in order, with the offset of the field
// the loop runs over (none for an SNode). Not in a dynamic SNode's loop: an
// element below the length may lie in a chunk never allocated (written past
// it), and writing it allocates.
bool at_loop_indices(const SNodeForest& f, const FieldTable& fields, const Stmt* access, const Stmt* struct_for) {
  if (access->tree_param() != struct_for->tree_param()) return false;  // another instance
  const FieldDecl& accessed = fields.get(access->field());
  for (int d = 0; d < accessed.ndim(); ++d) {
    const int64_t loop_offset = struct_for->field() >= 0 ? fields.get(struct_for->field()).offset_of(d) : 0;
    if (accessed.offset_of(d) != loop_offset) return false;
  }
  if (f.snode(struct_for_node(f, struct_for)).type == SNodeType::dynamic) return false;
  std::span<Stmt* const> idx = access->indices();
  for (size_t a = 0; a < idx.size(); ++a) {
    const Stmt* i = idx[a];
    if (i->kind() != StmtKind::LoopIndex || i->loop() != struct_for || i->index() != static_cast<int>(a))
      return false;
  }
  return true;
}

}  // namespace

bool is_own_cell_access(const SNodeForest& f, const FieldTable& fields, const Stmt* access, const Stmt* struct_for) {
  return f.snode(f.place_of(access->field())).parent == struct_for_node(f, struct_for) &&
         at_loop_indices(f, fields, access, struct_for);
}

bool is_within_own_cells(const SNodeForest& f, const FieldTable& fields, const Stmt* access, const Stmt* struct_for) {
  if (!at_loop_indices(f, fields, access, struct_for)) return false;
  const SNodeDecl& loop = f.snode(struct_for_node(f, struct_for));
  const int place_parent = f.snode(f.place_of(access->field())).parent;
  const SNodeDecl& placed = f.snode(place_parent);
  // The same indices name the same point of both index spaces.
  if (placed.axes() != loop.axes()) return false;
  for (int a : loop.axes())
    if (placed.shape[static_cast<size_t>(a)] != loop.shape[static_cast<size_t>(a)]) return false;
  // Up from the accessed cell to the nearest node above the loop's cell:
  // that node's cell is active (the loop visits an active cell below it),
  // and nothing sparse may lie between.
  // A field of another tree (another root) never meets the loop's path.
  std::set<int> above_loop;
  for (int n = loop.id; n >= 0; n = f.snode(n).parent) above_loop.insert(n);
  int n = place_parent;
  for (; n >= 0 && above_loop.count(n) == 0; n = f.snode(n).parent)
    if (f.snode(n).is_sparse()) return false;
  return n >= 0;
}

namespace {

// Sparse SNodes on the path root..node (inclusive), of one instance.
void add_sparse_path(const SNodeForest& f, int node, int tree_param, std::set<BoundSNode>& out) {
  for (int n = node; n >= 0; n = f.snode(n).parent)
    if (f.snode(n).is_sparse()) out.insert({n, tree_param});
}

// The SNodes (of which instance) `block` deactivates cells of.
std::set<BoundSNode> deactivated_snodes(Block* block) {
  std::set<BoundSNode> out;
  walk(block, [&](Stmt* s) {
    if (s->kind() == StmtKind::SNodeOp && s->snode_op() == SNodeOpKind::deactivate)
      out.insert({s->snode(), s->tree_param()});
  });
  return out;
}

// The SNodes whose activity `block` may change. A write at the indices of
// the cell a struct-for visits, to a field of that cell or of one beside it
// under the same sparse ancestors (is_within_own_cells), changes nothing:
// those cells are active, unless the loop deactivates cells.
void collect_modifies(const SNodeForest& f, const FieldTable& fields, Block* block, std::set<BoundSNode>& out) {
  const Stmt* own_loop = nullptr;
  if (block->size() > 0) {
    Stmt* last = block->at(block->size() - 1);
    if (last->kind() == StmtKind::StructFor && deactivated_snodes(last->body()).empty()) own_loop = last;
  }
  walk(block, [&](Stmt* s) {
    if (is_field_access(s->kind()) && s->kind() != StmtKind::FieldLoad) {
      if (own_loop && is_within_own_cells(f, fields, s, own_loop)) return;
      add_sparse_path(f, f.snode(f.place_of(s->field())).parent, s->tree_param(), out);
    } else if (s->kind() == StmtKind::SNodeOp) {
      switch (s->snode_op()) {
        case SNodeOpKind::activate:
        case SNodeOpKind::append:
          add_sparse_path(f, s->snode(), s->tree_param(), out);
          break;
        case SNodeOpKind::deactivate:
          out.insert({s->snode(), s->tree_param()});
          break;
        case SNodeOpKind::is_active:
        case SNodeOpKind::length:
          break;
      }
    }
  });
}

// Pure values made of pure values: recomputed in each task that uses them.
bool rematerializable(const Stmt* s) {
  if (!is_value(s->kind())) return false;
  for (const Stmt* op : s->operands())
    if (!rematerializable(op)) return false;
  return true;
}

class Offloader {
 public:
  Offloader(Kernel& k, const OffloadOptions& o) : kernel_(k), forest_(*k.forest), options_(o) {}

  OffloadResult run() {
    // 1. Take the top-level statements out and group them into tasks.
    Block* body = kernel_.body();
    std::vector<std::unique_ptr<Stmt>> top;
    while (!body->empty()) top.push_back(body->take(0));
    std::vector<std::unique_ptr<Stmt>> serial;
    // The trees (tree, tree_param) tasks so far deactivate cells of, not
    // collected since: a pointer's in-use bits are exact only after gc.
    std::set<std::pair<int, int>> uncollected;
    auto note_deactivations = [&](Stmt* t) {
      for (const BoundSNode& b : deactivated_snodes(t->body()))
        uncollected.insert({forest_.snode(b.snode).tree, b.tree_param});
    };
    auto flush_serial = [&] {
      if (serial.empty()) return;
      Stmt* t = new_task(TaskKind::serial, -1, -1, "serial");
      for (auto& s : serial) t->body()->append(std::move(s));
      serial.clear();
      note_deactivations(t);
    };
    for (auto& s : top) {
      if (s->kind() == StmtKind::RangeFor) {
        flush_serial();
        Stmt* t = new_task(TaskKind::range_for, -1, -1, "range_for");
        t->body()->append(std::move(s));
        note_deactivations(t);
      } else if (s->kind() == StmtKind::StructFor) {
        flush_serial();
        int node = s->field() >= 0 ? forest_.snode(forest_.place_of(s->field())).parent : s->snode();
        std::vector<int> path = forest_.path(node);
        // The lists the loop needs: each level's is made from its parent's,
        // except below the root and below a pointer, whose pool listgen
        // walks instead; so only the levels from the deepest of those on.
        size_t first = 1;
        for (size_t n = 1; n < path.size(); ++n)
          if (forest_.snode(path[n - 1]).type == SNodeType::pointer) first = n;
        check_loop_size(path, first);
        // The lists of the instance the loop runs over, made after the gc of
        // what earlier tasks deactivated in it (listgen below a pointer reads
        // the pool's in-use bits, which gc clears).
        const int param = s->tree_param();
        const std::pair<int, int> tree{forest_.snode(node).tree, param};
        if (uncollected.erase(tree) != 0) emit_gc(tree.first, tree.second);
        for (size_t n = first; n < path.size(); ++n) {
          const SNodeDecl& level = forest_.snode(path[n]);
          emit_runtime_task(TaskKind::clear_list, path[n], param, "clear_list " + level.name(),
                            [&](SparseRuntime& rt) { rt.emit_clear_list(path[n]); });
          emit_runtime_task(TaskKind::listgen, path[n], param,
                            "listgen " + forest_.snode(level.parent).name() + "->" + level.name(),
                            [&](SparseRuntime& rt) { rt.emit_listgen(path[n]); });
        }
        Stmt* t = new_task(TaskKind::struct_for, node, param, "struct_for " + forest_.snode(node).name());
        t->body()->append(std::move(s));
        note_deactivations(t);
      } else {
        serial.push_back(std::move(s));
      }
    }
    flush_serial();

    // 2. What each user task may change.
    for (size_t n = 0; n < body->size(); ++n) {
      Stmt* t = body->at(n);
      std::set<BoundSNode> m;
      if (t->task_kind() == TaskKind::serial || t->task_kind() == TaskKind::range_for ||
          t->task_kind() == TaskKind::struct_for)
        collect_modifies(forest_, kernel_.fields(), t->body(), m);
      result_.tasks[n].modifies.assign(m.begin(), m.end());
    }

    // 3. Values that cross tasks: recompute pure ones, keep the rest in scratch.
    localize();

    // 4. gc for every pool of the trees the kernel deactivates cells of and
    // has not collected yet. A kernel that only activates leaves its losers'
    // candidates in the spare slots, where allocations reuse them once a
    // pool is used up and the next gc returns them to the allocation order,
    // so it needs no gc dispatches of its own.
    for (auto [tree, param] : uncollected) emit_gc(tree, param);
    kernel_.stage = Stage::offloaded;
    result_.scratch_words_used = used_;
    return std::move(result_);
  }

 private:
  // Listgen and the struct-for loop over every cell of every container a
  // list can hold, in one parallel loop with an i32 index.
  void check_loop_size(const std::vector<int>& path, size_t first) const {
    for (size_t n = first; n < path.size(); ++n) {
      const SNodeDecl& s = forest_.snode(path[n]);
      const int64_t cells = forest_.snode(s.parent).max_cells * s.num_cells;  // <= kMaxCells
      if (cells > std::numeric_limits<int32_t>::max())
        throw Error("kernel '" + kernel_.name() + "': a struct-for over SNode '" + forest_.snode(path.back()).name() +
                    "' runs a parallel loop over the " + std::to_string(cells) + " cells SNode '" + s.name() +
                    "' can have, more than the 2^31-1 iterations one loop may take; loop over a coarser "
                    "SNode, or split the field over several SNodes");
    }
  }

  // gc and gc_finish for every pool of a tree, in the tree's pool order (a
  // pool's gc queues the entries below the ones it frees for the gc of the
  // pools below).
  void emit_gc(int tree, int param) {
    for (int pool : forest_.tree(tree).pools) {
      const std::string name = forest_.snode(pool).name();
      emit_runtime_task(TaskKind::gc, pool, param, "gc " + name, [&](SparseRuntime& rt) { rt.emit_gc(pool); });
      emit_runtime_task(TaskKind::gc_finish, pool, param, "gc_finish " + name,
                        [&](SparseRuntime& rt) { rt.emit_gc_finish(pool); });
    }
  }

  // A task of the instance `tree_param` names (-1: the trees' own).
  Stmt* new_task(TaskKind kind, int snode, int tree_param, std::string label) {
    Builder b(kernel_.body());
    b.set_tree_param(tree_param);
    Stmt* t = b.task(kind, snode, std::move(label));
    TaskInfo info;
    info.kind = kind;
    info.snode = snode;
    info.tree_param = tree_param;
    result_.tasks.push_back(info);
    return t;
  }

  template <typename F>
  void emit_runtime_task(TaskKind kind, int snode, int tree_param, std::string label, F&& emit) {
    Stmt* t = new_task(kind, snode, tree_param, std::move(label));
    Builder b(t->body());
    b.set_tree_param(tree_param);  // every tree statement of the task works on that instance
    SparseRuntime rt(forest_, b);
    rt.set_cells_per_iteration(options_.cells_per_iteration);
    rt.set_least_iterations(options_.least_iterations);
    emit(rt);
  }

  // The task (a top-level Task statement) that holds `s`.
  Stmt* task_of(const Stmt* s) const {
    const Stmt* cur = s;
    while (cur->parent()->owner() != nullptr) cur = cur->parent()->owner();
    return const_cast<Stmt*>(cur);
  }

  int64_t scratch_slot() {
    int64_t slot = options_.scratch_base + used_;
    used_ += 2;
    GROVE_ASSERT(options_.scratch_tree >= 0, "offload without a scratch buffer");
    if (used_ > options_.scratch_words)
      throw Error("kernel '" + kernel_.name() + "' keeps more values across its tasks than the " +
                  std::to_string(options_.scratch_words) + " words a buffer may hold on this device; "
                  "keep fewer values between its loops (e.g. in a field)");
    return slot;
  }

  void localize() {
    Block* body = kernel_.body();
    // Uses of every statement by task.
    std::unordered_map<const Stmt*, std::vector<std::pair<Stmt*, Stmt*>>> uses;  // def -> (user, task)
    walk(body, [&](Stmt* s) {
      if (s->kind() == StmtKind::Task) return;
      for (Stmt* op : s->operands()) uses[op].push_back({s, task_of(s)});
    });
    // Defined at a task's top level, used in another task.
    std::vector<Stmt*> defs;
    walk(body, [&](Stmt* s) {
      if (s->kind() == StmtKind::Task || s->parent()->owner() == nullptr) return;
      if (s->parent()->owner()->kind() != StmtKind::Task) return;
      Stmt* home = s->parent()->owner();
      auto it = uses.find(s);
      if (it == uses.end()) return;
      for (auto& [user, task] : it->second)
        if (task != home) {
          defs.push_back(s);
          break;
        }
    });
    // Values first; variables are spilled afterwards in one pass over the
    // kernel, which also rewrites loads of them that are among the values.
    std::unordered_map<const Stmt*, int64_t> spilled;  // alloca -> scratch slot
    for (Stmt* def : defs) {
      Stmt* home = def->parent()->owner();
      if (def->kind() == StmtKind::Alloca) {
        spilled[def] = scratch_slot();
        continue;
      }
      // Tasks using it, in order.
      std::vector<Stmt*> users;
      for (auto& [user, task] : uses[def])
        if (task != home && std::find(users.begin(), users.end(), task) == users.end()) users.push_back(task);
      if (rematerializable(def)) {
        for (Stmt* task : users) {
          Builder b(task->body(), 0);
          Builder::CloneMap map;
          Stmt* copy = clone_tree(b, def, map);
          for (auto& [user, t] : uses[def])
            if (t == task) user->replace_operand(def, copy);
        }
      } else {
        int64_t slot = scratch_slot();
        DataType t = def->type();
        Builder after(def->parent(), def->parent()->position_of(def) + 1);
        after.tree_store(options_.scratch_tree, t, after.const_int(DataType::u32, slot), def);
        for (Stmt* task : users) {
          Builder b(task->body(), 0);
          Stmt* v = b.tree_load(options_.scratch_tree, t, b.const_int(DataType::u32, slot));
          for (auto& [user, tk] : uses[def])
            if (tk == task) user->replace_operand(def, v);
        }
      }
    }
    if (!spilled.empty()) spill_allocas(body, spilled);
  }

  // Clones `s` and the pure statements it depends on at the builder.
  Stmt* clone_tree(Builder& b, const Stmt* s, Builder::CloneMap& map) {
    auto it = map.find(s);
    if (it != map.end()) return it->second;
    for (Stmt* op : s->operands()) clone_tree(b, op, map);
    return b.clone(s, map);
  }

  // A variable shared by several tasks lives in two scratch words: its
  // alloca becomes a store of zero, its loads and stores scratch memory.
  // One pass rebuilds every block in program order (a use always follows
  // its definition, so operands are remapped as they are met).
  void spill_allocas(Block* root, const std::unordered_map<const Stmt*, int64_t>& spilled) {
    std::unordered_map<const Stmt*, Stmt*> replaced;  // spilled local_load -> its tree_load
    // Replaced statements stay allocated until the end, so that no new
    // statement takes the address of one that `replaced` still names.
    std::vector<std::unique_ptr<Stmt>> dropped;
    const int tree = options_.scratch_tree;
    auto rebuild = [&](auto&& self, Block* block) -> void {
      std::vector<std::unique_ptr<Stmt>> old = block->take_all();
      Builder b(block);
      for (std::unique_ptr<Stmt>& owned : old) {
        Stmt* s = owned.get();
        for (size_t n = 0; n < s->operands().size(); ++n) {
          auto r = replaced.find(s->operands()[n]);
          if (r != replaced.end()) s->set_operand(n, r->second);
        }
        const bool is_local = s->kind() == StmtKind::LocalLoad || s->kind() == StmtKind::LocalStore;
        auto slot = spilled.find(is_local ? s->ptr() : s);
        if (slot == spilled.end() || (!is_local && s->kind() != StmtKind::Alloca)) {
          block->append(std::move(owned));
          b.set_insert_point_to_end(block);
          for (const auto& child : s->blocks()) self(self, child.get());
          continue;
        }
        DataType t = is_local ? s->ptr()->type() : s->type();
        Stmt* zero = nullptr;
        if (s->kind() == StmtKind::Alloca) zero = is_float(t) ? b.const_float(t, 0.0) : b.const_int(t, 0);
        Stmt* address = b.const_int(DataType::u32, slot->second);
        GROVE_ASSERT(kind_category(s->kind()) == StmtCategory::local,
                     "an alloca used by something other than local_load/local_store");
        if (s->kind() == StmtKind::Alloca) {
          b.tree_store(tree, t, address, zero);
        } else if (s->kind() == StmtKind::LocalLoad) {
          replaced[s] = b.tree_load(tree, t, address);
        } else {
          b.tree_store(tree, t, address, s->value());
        }
        dropped.push_back(std::move(owned));
      }
    };
    rebuild(rebuild, root);
  }

  Kernel& kernel_;
  const SNodeForest& forest_;
  OffloadOptions options_;
  OffloadResult result_;
  int64_t used_ = 0;
};

}  // namespace

OffloadResult offload(Kernel& kernel, const OffloadOptions& options) {
  GROVE_ASSERT(kernel.forest != nullptr, "offload needs the kernel's SNode forest");
  GROVE_ASSERT(kernel.stage == Stage::typed, "offload needs a typed kernel");
  Offloader o(kernel, options);
  OffloadResult r = o.run();
  return r;
}

}  // namespace grove::ir
