// src/ir/sparse_runtime.cpp — the sparse runtime as IR (see sparse_runtime.h).
//
// Everything here is straight-line word arithmetic, atomics and structured
// control flow on u32 words; no statement is backend-specific. Conventions:
// a pointer slot or chunk slot holds 0 (inactive) or entry + 1; an
// allocation takes the next position of the allocation order, or once that
// is used up a candidate a CAS loser left in the spare bitmap (see
// take_spare); deactivated entries wait in the queue until the gc tasks
// zero them and return them (with unused spares) to the allocation order.
// No thread ever waits for another.
#include "ir/sparse_runtime.h"

#include <algorithm>
#include <bit>

#include "ir/assert.h"

namespace grove::ir {

namespace {
constexpr DataType U32 = DataType::u32;
constexpr DataType I32 = DataType::i32;
constexpr DataType U1 = DataType::u1;
// How often an activation that finds the pool full re-reads its slot and
// asks the pool again before it counts a failure (activate_slot).
constexpr uint64_t kActivationTries = 64;
}  // namespace

// ---- helpers -----------------------------------------------------------------

Stmt* SparseRuntime::u32(uint64_t v) { return b_.const_int(U32, static_cast<int64_t>(v)); }
Stmt* SparseRuntime::i32(int64_t v) { return b_.const_int(I32, v); }

std::vector<Stmt*> SparseRuntime::axis_indices(const std::vector<Stmt*>& indices) {
  std::vector<Stmt*> out;
  for (Stmt* i : indices) out.push_back(i->type() == U32 ? i : b_.cast(U32, i));
  while (out.size() < static_cast<size_t>(kMaxAxes)) out.push_back(u32(0));
  return out;
}

Stmt* SparseRuntime::bin(BinaryOp op, Stmt* a, Stmt* c) {
  GROVE_ASSERT(a->type() == c->type() || op == BinaryOp::logic_and || op == BinaryOp::logic_or,
               "sparse runtime emitted a binary op on mixed types");
  return b_.binary(op, a, c);
}

Stmt* SparseRuntime::load(int tree, Stmt* address) {
  Stmt* v = b_.tree_load(tree, U32, address);
  v->set_field(kRuntimeWords);
  return v;
}
Stmt* SparseRuntime::load_shared(int tree, Stmt* address) {
  Stmt* v = b_.tree_load(tree, U32, address, task_changes_words_);
  v->set_field(kRuntimeWords);
  return v;
}
void SparseRuntime::store(int tree, Stmt* address, Stmt* value) {
  b_.tree_store(tree, U32, address, value);
}
Stmt* SparseRuntime::atomic(AtomicOp op, int tree, Stmt* address, Stmt* value) {
  return b_.tree_atomic(op, tree, U32, address, value);
}

Stmt* SparseRuntime::var(DataType t, Stmt* init) {
  Stmt* v = b_.alloca_var(t);
  b_.local_store(v, init);
  return v;
}
Stmt* SparseRuntime::get(Stmt* v) { return b_.local_load(v); }
void SparseRuntime::set(Stmt* v, Stmt* value) { b_.local_store(v, value); }

Stmt* SparseRuntime::if_then(Stmt* cond, const std::function<void()>& then_body,
                             const std::function<void()>& else_body) {
  Stmt* s = b_.if_stmt(cond);
  Block* saved = b_.block();
  size_t pos = b_.position();
  b_.set_insert_point_to_end(s->then_block());
  then_body();
  if (else_body) {
    b_.set_insert_point_to_end(s->else_block());
    else_body();
  }
  b_.set_insert_point(saved, pos);
  return s;
}

void SparseRuntime::serial_loop(Stmt* begin, Stmt* end, const std::function<void(Stmt*)>& body) {
  Stmt* loop = b_.range_for(begin, end);
  Block* saved = b_.block();
  size_t pos = b_.position();
  b_.set_insert_point_to_end(loop->body());
  body(b_.loop_index(loop, 0));
  b_.set_insert_point(saved, pos);
}

void SparseRuntime::loop(const std::function<void()>& body) {
  Stmt* l = b_.while_loop();
  Block* saved = b_.block();
  size_t pos = b_.position();
  b_.set_insert_point_to_end(l->body());
  body();
  b_.set_insert_point(saved, pos);
}

Stmt* SparseRuntime::state(int pool, int64_t which) {
  return u32(static_cast<uint64_t>(forest_.snode(pool).state_offset + which));
}

bool SparseRuntime::subtree_has_pool(int node) const {
  for (int c : forest_.snode(node).children)
    if (forest_.snode(c).has_pool() || subtree_has_pool(c)) return true;
  return false;
}

// Local cell number (u32) of `node` for u32 indices in `leaf`'s index space.
Stmt* SparseRuntime::local_cell(int node, int leaf, const std::vector<Stmt*>& idx) {
  const SNodeDecl& s = forest_.snode(node);
  const SNodeDecl& last = forest_.snode(leaf);
  Stmt* cell = nullptr;
  for (int a = 0; a < kMaxAxes; ++a) {
    if (!((s.axis_mask >> a) & 1)) continue;
    auto ua = static_cast<size_t>(a);
    int64_t stride = last.shape[ua] / s.shape[ua];
    Stmt* v = idx.at(ua);
    if (stride != 1) v = bin(BinaryOp::div, v, u32(static_cast<uint64_t>(stride)));
    v = bin(BinaryOp::mod, v, u32(static_cast<uint64_t>(s.extent[ua])));
    cell = cell ? bin(BinaryOp::add,
                      bin(BinaryOp::mul, cell, u32(static_cast<uint64_t>(s.extent[ua]))), v)
                : v;
  }
  return cell ? cell : u32(0);
}

// ---- allocation --------------------------------------------------------------

Stmt* SparseRuntime::allocate(int pool) {
  const SNodeDecl& s = forest_.snode(pool);
  int t = s.tree;
  const uint64_t cap = static_cast<uint64_t>(s.capacity);
  Stmt* result = var(U32, u32(0));
  // 1. One ticket per allocation. A ticket below the capacity takes the
  // entry its position of the allocation order encodes: a plain load, since
  // no other ticket reads that position and gc, which writes it, runs
  // between kernels.
  Stmt* p = atomic(AtomicOp::add, t, state(pool, kTickets), u32(1));
  if_then(
      bin(BinaryOp::cmp_lt, p, u32(cap)),
      [&] {
        Stmt* w = load(t, bin(BinaryOp::add, u32(static_cast<uint64_t>(s.order_offset)), p));
        set(result, bin(BinaryOp::add, bin(BinaryOp::add, w, p), u32(1)));
      },
      [&] {
        // The ticket took no position: hand it back, so that the counter
        // stays within the capacity plus the allocations in flight however
        // often a full pool is asked (it is a u32, and only gc resets it).
        atomic(AtomicOp::sub, t, state(pool, kTickets), u32(1));
        // 2. The pool is full: candidates that lost a race since the last gc.
        set(result, take_spare(pool));
      });
  return get(result);
}

// Spare entries: the candidates CAS losers took and did not publish, one
// bit per entry in the pool's spare bitmap (spare_words). A loser sets its
// entry's bit; a taker of a full pool clears a set bit it finds and owns
// that entry. Neither waits for the other and nothing is ordered, so no
// candidate strands while a taker looks (a ring whose takers counted
// positions before their writers came lost candidates under thousands of
// simultaneous activations: an H200 ran pools dry that were a third spare).
// kSpareCount counts the set bits (a taker of a pool without spares looks
// no further), and kSpareHint is the word the last spare went to, where a
// taker starts.
Stmt* SparseRuntime::spare_word(int pool, Stmt* w) {
  return bin(BinaryOp::add, u32(static_cast<uint64_t>(forest_.snode(pool).spare_offset)), w);
}

uint64_t SparseRuntime::spare_words(int pool) const {
  return (static_cast<uint64_t>(forest_.snode(pool).capacity) + 31) / 32;
}

Stmt* SparseRuntime::take_spare(int pool) {
  const SNodeDecl& s = forest_.snode(pool);
  int t = s.tree;
  const uint64_t words = spare_words(pool);
  Stmt* result = var(U32, u32(0));
  if_then(bin(BinaryOp::cmp_ne, load_shared(t, state(pool, kSpareCount)), u32(0)), [&] {
    Stmt* start = load_shared(t, state(pool, kSpareHint));
    // Every word once, from the hint on (a set bit is almost always in the
    // first), claiming a set bit at a time, at most 32 claims a word: one
    // loop, not a loop of words around a loop of claims, since this code
    // stands at every activation site of a kernel and a driver compiles
    // each copy (two nested loops at each of sparse_life count's eight
    // sites were 40% of lavapipe's time to compile it).
    Stmt* passed = var(U32, u32(0));  // words left behind
    Stmt* tries = var(U32, u32(0));   // claims made on the current word
    loop([&] {
      if_then(bin(BinaryOp::cmp_ge, get(passed), u32(words)), [&] { b_.break_stmt(); });
      Stmt* w = bin(BinaryOp::mod, bin(BinaryOp::add, start, get(passed)), u32(words));
      Stmt* address = spare_word(pool, w);
      Stmt* bits = load_shared(t, address);
      if_then(
          bin(BinaryOp::logic_or, bin(BinaryOp::cmp_eq, bits, u32(0)), bin(BinaryOp::cmp_ge, get(tries), u32(32))),
          [&] {
            set(passed, bin(BinaryOp::add, get(passed), u32(1)));
            set(tries, u32(0));
          },
          [&] {
            set(tries, bin(BinaryOp::add, get(tries), u32(1)));
            Stmt* low = bin(BinaryOp::bit_and, bits, bin(BinaryOp::sub, u32(0), bits));
            Stmt* old = atomic(AtomicOp::bit_and, t, address, b_.unary(UnaryOp::bit_not, low));
            // Another taker may have had it: then the word is read again.
            if_then(bin(BinaryOp::cmp_ne, bin(BinaryOp::bit_and, old, low), u32(0)), [&] {
              atomic(AtomicOp::sub, t, state(pool, kSpareCount), u32(1));
              Stmt* entry = bin(BinaryOp::add, bin(BinaryOp::mul, w, u32(32)), b_.unary(UnaryOp::ctz, low));
              set(result, bin(BinaryOp::add, entry, u32(1)));
              b_.break_stmt();
            });
          });
    });
  });
  return get(result);
}

void SparseRuntime::offer_spare(int pool, Stmt* candidate) {
  const SNodeDecl& s = forest_.snode(pool);
  int t = s.tree;
  Stmt* entry = bin(BinaryOp::sub, candidate, u32(1));
  Stmt* w = bin(BinaryOp::div, entry, u32(32));
  atomic(AtomicOp::bit_or, t, spare_word(pool, w), bin(BinaryOp::shl, u32(1), bin(BinaryOp::mod, entry, u32(32))));
  atomic(AtomicOp::add, t, state(pool, kSpareCount), u32(1));
  // (Losers of one burst leave entries of the same few words: most find
  // the hint there already and leave the shared word alone.)
  if_then(bin(BinaryOp::cmp_ne, load_shared(t, state(pool, kSpareHint)), w),
          [&] { atomic(AtomicOp::exchange, t, state(pool, kSpareHint), w); });
}

Stmt* SparseRuntime::activate_slot(int pool, Stmt* slot,
                                   const std::function<void(Stmt*)>& published) {
  const SNodeDecl& s = forest_.snode(pool);
  int t = s.tree;
  Stmt* value = var(U32, load_shared(t, slot));
  auto activate = [&] {
    // Tries until the slot holds an entry: the first almost always ends it.
    Stmt* tries = var(U32, u32(0));
    loop([&] {
      Stmt* candidate = allocate(pool);
      if_then(
          bin(BinaryOp::cmp_ne, candidate, u32(0)),
          [&] {
            Stmt* old = b_.tree_cas(t, U32, slot, u32(0), candidate);
            if_then(
                bin(BinaryOp::cmp_eq, old, u32(0)),
                [&] {
                  set(value, candidate);
                  if (published) published(candidate);
                },
                [&] {
                  // Lost the race: the winner's entry is used, ours is offered
                  // to the takers of a full pool (the spare bitmap).
                  set(value, old);
                  offer_spare(pool, candidate);
                });
            b_.break_stmt();
          },
          [&] {
            // The pool is full. On a parallel device the entries may be held by
            // threads that lost races (their candidates wait in the spare bitmap
            // until gc), and one of them may have published this slot by now:
            // re-read it atomically. Still empty, try again, up to
            // kActivationTries times, before counting a failure: on a GPU many
            // thousand threads may find one empty slot at once, each takes a
            // candidate, and the pool runs dry before the first winner has
            // published (an H200 through CUDA failed four stress tests so,
            // tens of thousands of allocations each). The tries are bounded,
            // so that no thread waits on another (devices without independent
            // thread scheduling promise no progress to a spinning lane).
            Stmt* now = b_.tree_cas(t, U32, slot, u32(0), u32(0));
            set(value, now);
            if_then(bin(BinaryOp::cmp_ne, now, u32(0)), [&] { b_.break_stmt(); });
            set(tries, bin(BinaryOp::add, get(tries), u32(1)));
            if_then(bin(BinaryOp::cmp_ge, get(tries), u32(kActivationTries)), [&] {
              atomic(AtomicOp::add, t, state(pool, kAllocFailures), u32(1));
              b_.break_stmt();
            });
          });
    });
  };
  Stmt* empty = if_then(bin(BinaryOp::cmp_eq, get(value), u32(0)), [&] {
    if (!subgroup_activations_) {
      activate();
      return;
    }
    // The invocations of a subgroup that found the first one's slot empty
    // let the first activate it and take its entry: one candidate taken
    // where each took one and all but one left theirs spare. The others
    // (another slot) activate theirs as before. One pass, no loop: lavapipe
    // (Mesa 22.3) got subgroup operations wrong in a loop run again after
    // invocations had left it (a read of the first's slot in the second
    // activation site of a group gave another).
    Stmt* first = b_.subgroup_first(slot);
    Stmt* follows = bin(BinaryOp::logic_and, bin(BinaryOp::cmp_eq, slot, first),
                        b_.unary(UnaryOp::logic_not, b_.subgroup_elect()));
    if_then(b_.unary(UnaryOp::logic_not, follows), activate);
    Stmt* led = b_.subgroup_first(get(value));  // the first's: it was elected
    if_then(follows, [&] {
      set(value, led);
      // 0: the first found the pool full (and counted it), or it is not
      // beside us: a device that did not join the subgroup again after the
      // activation above (Vulkan does not promise it without maximal
      // reconvergence; every driver measured does). Then the slot as it is
      // now, and if still empty a failure counted (reported after the
      // launch) rather than a write lost in silence.
      if_then(bin(BinaryOp::cmp_eq, led, u32(0)), [&] {
        Stmt* now = b_.tree_cas(t, U32, slot, u32(0), u32(0));
        set(value, now);
        if_then(bin(BinaryOp::cmp_eq, now, u32(0)),
                [&] { atomic(AtomicOp::add, t, state(pool, kAllocFailures), u32(1)); });
      });
    });
  });
  empty->set_unlikely(true);  // once per block activated; every later access finds the entry
  return get(value);
}

Stmt* SparseRuntime::entry_address(int pool, Stmt* entry) {
  const SNodeDecl& s = forest_.snode(pool);
  return bin(BinaryOp::add, u32(static_cast<uint64_t>(s.pool_offset)),
             bin(BinaryOp::mul, entry, u32(static_cast<uint64_t>(s.pool_entry_words))));
}

void SparseRuntime::enqueue(int pool, Stmt* entry) {
  const SNodeDecl& s = forest_.snode(pool);
  Stmt* at = atomic(AtomicOp::add, s.tree, state(pool, kQueueCount), u32(1));
  store(s.tree, bin(BinaryOp::add, u32(static_cast<uint64_t>(s.queue_offset)), at), entry);
}

// ---- walking the tree ----------------------------------------------------------

SparseRuntime::Cell SparseRuntime::walk(int node, const std::vector<Stmt*>& indices, bool activate,
                                        int space, EmptySlot* empty) {
  if (space < 0) space = node;
  const SNodeDecl& target = forest_.snode(node);
  int t = target.tree;
  const std::vector<Stmt*> idx = axis_indices(indices);
  Stmt* address = u32(static_cast<uint64_t>(forest_.tree(t).root_offset));
  Stmt* ok = b_.const_int(U1, 1);
  if (empty != nullptr) *empty = {u32(0), u32(0)};
  std::vector<int> path = forest_.path(node);
  for (size_t n = 1; n < path.size(); ++n) {
    const SNodeDecl& s = forest_.snode(path[n]);
    Stmt* c = local_cell(path[n], space, idx);
    Stmt* container = bin(BinaryOp::add, address, u32(static_cast<uint64_t>(s.component_offset)));
    Stmt* cw = u32(static_cast<uint64_t>(s.cell_words));
    switch (s.type) {
      case SNodeType::root:
      case SNodeType::place:
        GROVE_ASSERT(false, "walk through a root or place");
        break;
      case SNodeType::dense:
        address = bin(BinaryOp::add, container, bin(BinaryOp::mul, c, cw));
        break;
      case SNodeType::bitmasked: {
        Stmt* word = bin(BinaryOp::add, container, bin(BinaryOp::div, c, u32(32)));
        Stmt* bit = bin(BinaryOp::shl, u32(1), bin(BinaryOp::mod, c, u32(32)));
        Stmt* bits = load_shared(t, word);
        Stmt* set_now = bin(BinaryOp::cmp_ne, bin(BinaryOp::bit_and, bits, bit), u32(0));
        if (activate) {
          if_then(b_.unary(UnaryOp::logic_not, set_now),
                  [&] { atomic(AtomicOp::bit_or, t, word, bit); });
        } else {
          ok = bin(BinaryOp::logic_and, ok, set_now);
        }
        address = bin(BinaryOp::add,
                      bin(BinaryOp::add, container, u32(static_cast<uint64_t>(s.mask_words))),
                      bin(BinaryOp::mul, c, cw));
        break;
      }
      case SNodeType::pointer: {
        Stmt* slot = bin(BinaryOp::add, container, c);
        // The slot's publisher records the entry for listgen and the lists' readers.
        auto published = [&](Stmt* v) { record_published(path[n], space, idx, bin(BinaryOp::sub, v, u32(1))); };
        Stmt* v = activate ? activate_slot(path[n], slot, published) : load_shared(t, slot);
        Stmt* nz = bin(BinaryOp::cmp_ne, v, u32(0));
        if (empty != nullptr) {  // the first empty slot: the levels above it all hold entries
          Stmt* first = bin(BinaryOp::logic_and, ok, b_.unary(UnaryOp::logic_not, nz));
          empty->slot_plus_one = b_.select(first, bin(BinaryOp::add, slot, u32(1)), empty->slot_plus_one);
          empty->level = b_.select(first, u32(n), empty->level);
        }
        ok = bin(BinaryOp::logic_and, ok, nz);
        Stmt* entry = b_.select(nz, bin(BinaryOp::sub, v, u32(1)), u32(0));
        address = entry_address(path[n], entry);
        break;
      }
      case SNodeType::dynamic: {
        Stmt* max_len = u32(static_cast<uint64_t>(s.num_cells));
        if (!activate) {
          Stmt* length = bin(BinaryOp::min, load_shared(t, container), max_len);
          ok = bin(BinaryOp::logic_and, ok, bin(BinaryOp::cmp_lt, c, length));
        }
        Stmt* chunk = bin(BinaryOp::div, c, u32(static_cast<uint64_t>(s.chunk_size)));
        Stmt* slot = bin(BinaryOp::add, bin(BinaryOp::add, container, u32(1)), chunk);
        Stmt* v = activate ? activate_slot(path[n], slot) : load_shared(t, slot);
        Stmt* nz = bin(BinaryOp::cmp_ne, v, u32(0));
        // A write extends the length only once its chunk exists, so that
        // the length never counts an element that has nowhere to live.
        if (activate) if_then(nz, [&] { atomic(AtomicOp::max, t, container, bin(BinaryOp::add, c, u32(1))); });
        ok = bin(BinaryOp::logic_and, ok, nz);
        Stmt* entry = b_.select(nz, bin(BinaryOp::sub, v, u32(1)), u32(0));
        Stmt* in_chunk = bin(BinaryOp::mod, c, u32(static_cast<uint64_t>(s.chunk_size)));
        address = bin(BinaryOp::add, entry_address(path[n], entry), bin(BinaryOp::mul, in_chunk, cw));
        break;
      }
    }
  }
  return {address, ok};
}

SparseRuntime::Cell SparseRuntime::lookup(int node, const std::vector<Stmt*>& indices) {
  return walk(node, indices, false);
}

SparseRuntime::Cell SparseRuntime::activate(int node, const std::vector<Stmt*>& indices) {
  return walk(node, indices, true);
}

namespace {
// The position in path(node) of its deepest sparse level, or -1.
int deepest_sparse(const SNodeForest& forest, const std::vector<int>& path) {
  int at = -1;
  for (size_t n = 0; n < path.size(); ++n) {
    const SNodeType t = forest.snode(path[n]).type;
    if (t == SNodeType::pointer || t == SNodeType::bitmasked || t == SNodeType::dynamic) at = static_cast<int>(n);
  }
  return at;
}

// A compute type's 0.
Stmt* zero_of(Builder& b, DataType t) {
  return is_float(t) ? b.const_float(compute_type(t), 0.0) : b.const_int(t, 0);
}
}  // namespace

bool SparseRuntime::looks_up_near(const SNodeForest& forest, int node) {
  const std::vector<int> path = forest.path(node);
  const int p = deepest_sparse(forest, path);
  if (p < 0 || p + 1 >= static_cast<int>(path.size())) return false;
  if (forest.snode(path[static_cast<size_t>(p)]).type == SNodeType::dynamic) return false;
  for (size_t n = static_cast<size_t>(p) + 1; n < path.size(); ++n)
    if (forest.snode(path[n]).type != SNodeType::dense) return false;
  return true;
}

SparseRuntime::Cell SparseRuntime::lookup_near(int node, const std::vector<Stmt*>& indices,
                                               const std::vector<Stmt*>& own_indices, Stmt* own) {
  GROVE_ASSERT(looks_up_near(forest_, node), "lookup_near on a node without dense levels below its sparse one");
  const std::vector<int> path = forest_.path(node);
  const auto p = static_cast<size_t>(deepest_sparse(forest_, path));
  const SNodeDecl& target = forest_.snode(node);
  const SNodeDecl& sparse = forest_.snode(path[p]);
  const std::vector<Stmt*> idx = axis_indices(indices), mine = axis_indices(own_indices);
  // One cell of the sparse level: the same quotient on every axis.
  Stmt* same = b_.const_int(U1, 1);
  for (int a = 0; a < kMaxAxes; ++a) {
    if (!((target.axis_mask >> a) & 1)) continue;
    const auto ua = static_cast<size_t>(a);
    const auto q = static_cast<uint64_t>(target.shape[ua] / sparse.shape[ua]);
    Stmt* eq = q == 1 ? bin(BinaryOp::cmp_eq, idx[ua], mine[ua])
                      : bin(BinaryOp::cmp_eq, bin(BinaryOp::div, idx[ua], u32(q)), bin(BinaryOp::div, mine[ua], u32(q)));
    same = bin(BinaryOp::logic_and, same, eq);
  }
  Stmt* address = var(U32, u32(0));
  Stmt* ok = var(U32, u32(0));
  if_then(
      same,
      [&] {
        // The dense levels below it: each level's cell, as walk() finds it,
        // less own's (words wrap).
        Stmt* at = own;
        for (size_t n = p + 1; n < path.size(); ++n) {
          const SNodeDecl& s = forest_.snode(path[n]);
          Stmt* cw = u32(static_cast<uint64_t>(s.cell_words));
          at = bin(BinaryOp::sub, bin(BinaryOp::add, at, bin(BinaryOp::mul, local_cell(path[n], node, idx), cw)),
                   bin(BinaryOp::mul, local_cell(path[n], node, mine), cw));
        }
        set(address, at);
        set(ok, u32(1));
      },
      [&] {
        const Cell far = walk(node, indices, false);
        set(address, far.address);
        set(ok, b_.select(far.ok, u32(1), u32(0)));
      });
  return {get(address), bin(BinaryOp::cmp_ne, get(ok), u32(0))};
}

namespace {
// Per axis of `node`'s index space: how many of its cells lie along it in
// one cell of its path's deepest sparse node (a block's side, in cells).
std::vector<int64_t> block_sides(const SNodeForest& forest, int node) {
  const std::vector<int> path = forest.path(node);
  const SNodeDecl& target = forest.snode(node);
  const SNodeDecl& sparse = forest.snode(path[static_cast<size_t>(deepest_sparse(forest, path))]);
  std::vector<int64_t> sides(static_cast<size_t>(target.ndim()));
  for (size_t a = 0; a < sides.size(); ++a) sides[a] = target.shape[a] / sparse.shape[a];
  return sides;
}

// Where the paths to a and b part: the position in both of their deepest
// common node, or -1 (other trees).
int parting(const std::vector<int>& a, const std::vector<int>& b) {
  int at = -1;
  for (size_t n = 0; n < a.size() && n < b.size() && a[n] == b[n]; ++n) at = static_cast<int>(n);
  return at;
}
}  // namespace

bool SparseRuntime::cell_beside_known(const SNodeForest& forest, int node, int target) {
  const std::vector<int> from = forest.path(node), to = forest.path(target);
  const int at = parting(from, to);
  if (at < 0 || node == target) return false;
  for (const std::vector<int>* path : {&from, &to})
    for (size_t n = static_cast<size_t>(at) + 1; n < path->size(); ++n)
      if (forest.snode((*path)[n]).type != SNodeType::dense) return false;
  return true;
}

Stmt* SparseRuntime::cell_beside(int node, Stmt* own, const std::vector<Stmt*>& own_indices, int target) {
  GROVE_ASSERT(cell_beside_known(forest_, node, target), "cell_beside of cells whose paths part above a sparse level");
  const std::vector<int> from = forest_.path(node), to = forest_.path(target);
  const auto at = static_cast<size_t>(parting(from, to));
  const std::vector<Stmt*> mine = axis_indices(own_indices);
  // A dense level's part of a walk's address: its container's place in the
  // cell above, and its cell's in the container.
  auto part = [&](int n, int leaf) {
    const SNodeDecl& s = forest_.snode(n);
    return bin(BinaryOp::add, u32(static_cast<uint64_t>(s.component_offset)),
               bin(BinaryOp::mul, local_cell(n, leaf, mine), u32(static_cast<uint64_t>(s.cell_words))));
  };
  Stmt* address = own;
  for (size_t n = at + 1; n < from.size(); ++n) address = bin(BinaryOp::sub, address, part(from[n], node));
  for (size_t n = at + 1; n < to.size(); ++n) address = bin(BinaryOp::add, address, part(to[n], target));
  return address;
}

bool SparseRuntime::reads_at_offset(const SNodeForest& forest, int node, const std::vector<int64_t>& offsets) {
  if (!looks_up_near(forest, node)) return false;
  const std::vector<int64_t> side = block_sides(forest, node);
  if (offsets.size() > side.size()) return false;
  int moved = 0;
  for (size_t a = 0; a < offsets.size(); ++a) {
    if (offsets[a] == 0) continue;
    const int64_t q = side[a];
    if (!std::has_single_bit(static_cast<uint64_t>(q)) || offsets[a] >= q || -offsets[a] >= q) return false;
    ++moved;
  }
  return moved <= 3;
}

std::vector<std::vector<int>> SparseRuntime::blocks_reached(const std::vector<int64_t>& offsets) {
  std::vector<size_t> moved;
  for (size_t a = 0; a < offsets.size(); ++a)
    if (offsets[a] != 0) moved.push_back(a);
  std::vector<std::vector<int>> out;
  for (uint32_t mask = 1; mask < (1u << moved.size()); ++mask) {
    std::vector<int> d(offsets.size(), 0);
    for (size_t m = 0; m < moved.size(); ++m)
      if ((mask >> m) & 1) d[moved[m]] = offsets[moved[m]] > 0 ? 1 : -1;
    out.push_back(d);
  }
  return out;
}

SparseRuntime::NearBlocks SparseRuntime::near_blocks(int node, const std::vector<Stmt*>& run_bases,
                                                     const std::vector<std::vector<int>>& directions) {
  const SNodeDecl& target = forest_.snode(node);
  const std::vector<int64_t> side = block_sides(forest_, node);
  // The run's block's first cell: its container's, less its place in the
  // block where the container is smaller (sides are powers of two).
  std::vector<Stmt*> corner;
  for (size_t a = 0; a < run_bases.size(); ++a) {
    const auto q = static_cast<uint64_t>(side[a]);
    Stmt* c = run_bases[a];
    if (static_cast<uint64_t>(target.extent[a]) != q)
      c = std::has_single_bit(q) ? bin(BinaryOp::bit_and, c, u32(~(q - 1) & 0xffffffffu))
                                 : bin(BinaryOp::mul, bin(BinaryOp::div, c, u32(q)), u32(q));
    corner.push_back(c);
  }
  NearBlocks out;
  out.directions = directions;
  out.own_corner = walk(node, corner, false).address;
  for (const std::vector<int>& d : directions) {
    std::vector<Stmt*> at = corner;
    for (size_t a = 0; a < at.size() && a < d.size(); ++a) {
      if (d[a] == 0) continue;
      const auto q = static_cast<uint64_t>(side[a]);
      at[a] = d[a] > 0 ? bin(BinaryOp::add, at[a], u32(q)) : bin(BinaryOp::sub, at[a], u32(q));
    }
    out.corners.push_back(walk(node, at, false));
  }
  return out;
}

SparseRuntime::Cell SparseRuntime::lookup_at_offset(int node, const NearBlocks& blocks,
                                                    const std::vector<Stmt*>& indices,
                                                    const std::vector<int64_t>& offsets, uint32_t clamped,
                                                    const std::vector<Stmt*>& own_indices, Stmt* own) {
  GROVE_ASSERT(reads_at_offset(forest_, node, offsets), "lookup_at_offset of offsets it does not take");
  const std::vector<int> path = forest_.path(node);
  const auto p = static_cast<size_t>(deepest_sparse(forest_, path));
  const std::vector<Stmt*> idx = axis_indices(indices), mine = axis_indices(own_indices);
  const Leaving where = leaving(node, offsets, clamped, idx, mine);
  // The block's first cell: the loop's block's (own less its dense levels'
  // cells), or a neighbour's the run looked up.
  Stmt* base = own;
  Stmt* here = nullptr;  // sum of the dense levels' cells of the read
  for (size_t n = p + 1; n < path.size(); ++n) {
    const SNodeDecl& s = forest_.snode(path[n]);
    Stmt* cw = u32(static_cast<uint64_t>(s.cell_words));
    base = bin(BinaryOp::sub, base, bin(BinaryOp::mul, local_cell(path[n], node, mine), cw));
    Stmt* c = bin(BinaryOp::mul, local_cell(path[n], node, idx), cw);
    here = here == nullptr ? c : bin(BinaryOp::add, here, c);
  }
  Stmt* ok = b_.const_int(U1, 1);
  for (size_t k = 0; k < blocks.directions.size(); ++k) {
    Stmt* chosen = takes(where, blocks.directions[k], offsets);
    if (chosen == nullptr) continue;
    base = b_.select(chosen, blocks.corners[k].address, base);
    ok = b_.select(chosen, blocks.corners[k].ok, ok);
  }
  return {bin(BinaryOp::add, base, here), ok};
}

SparseRuntime::Leaving SparseRuntime::leaving(int node, const std::vector<int64_t>& offsets, uint32_t clamped,
                                              const std::vector<Stmt*>& idx, const std::vector<Stmt*>& mine) {
  const std::vector<int64_t> side = block_sides(forest_, node);
  Leaving out;
  for (size_t a = 0; a < offsets.size(); ++a) {
    const int64_t d = offsets[a];
    if (d == 0) continue;
    const auto q = static_cast<uint64_t>(side[a]);
    out.moved.push_back(a);
    if ((clamped >> a) & 1) {  // its index and the loop's differ above the block's bits
      GROVE_ASSERT(a < idx.size(), "a clamped read's block found without its indices");
      out.leaves.push_back(bin(BinaryOp::cmp_ge, bin(BinaryOp::bit_xor, idx[a], mine[a]), u32(q)));
      continue;
    }
    Stmt* at = bin(BinaryOp::bit_and, mine[a], u32(q - 1));
    out.leaves.push_back(d > 0 ? bin(BinaryOp::cmp_ge, at, u32(q - static_cast<uint64_t>(d)))
                               : bin(BinaryOp::cmp_lt, at, u32(static_cast<uint64_t>(-d))));
  }
  return out;
}

Stmt* SparseRuntime::takes(const Leaving& l, const std::vector<int>& d, const std::vector<int64_t>& offsets) {
  for (size_t a = 0; a < d.size(); ++a)
    if (d[a] != 0 && (a >= offsets.size() || offsets[a] == 0 || (offsets[a] > 0) != (d[a] > 0))) return nullptr;
  Stmt* chosen = nullptr;
  for (size_t m = 0; m < l.moved.size(); ++m) {
    Stmt* here = d[l.moved[m]] != 0 ? l.leaves[m] : b_.unary(UnaryOp::logic_not, l.leaves[m]);
    chosen = chosen == nullptr ? here : bin(BinaryOp::logic_and, chosen, here);
  }
  return chosen != nullptr ? chosen : b_.const_int(U1, 1);  // (a read that moves along no axis stays)
}

Stmt* SparseRuntime::load_at_offset(int field, DataType dtype, int node, const NearBlocks& blocks,
                                    const std::vector<Stmt*>& indices, const std::vector<int64_t>& offsets,
                                    uint32_t clamped, const std::vector<Stmt*>& own_indices, Stmt* own) {
  const std::vector<int> path = forest_.path(node);
  const auto p = static_cast<size_t>(deepest_sparse(forest_, path));
  if (p + 2 != path.size() || blocks.own_corner == nullptr || clamped != 0)
    return load_field_at(field, dtype, lookup_at_offset(node, blocks, indices, offsets, clamped, own_indices, own));
  const SNodeDecl& target = forest_.snode(node);
  const std::vector<int64_t> side = block_sides(forest_, node);
  const SNodeDecl& place = forest_.snode(forest_.place_of(field));
  const std::vector<Stmt*> mine = axis_indices(own_indices);
  // Words between cells one apart on each axis of the one dense level (as
  // local_cell numbers them: the last axis fastest).
  std::vector<int64_t> stride(offsets.size(), 0);
  int64_t step = target.cell_words;
  for (int a = kMaxAxes - 1; a >= 0; --a) {
    if (!((target.axis_mask >> a) & 1)) continue;
    if (static_cast<size_t>(a) < stride.size()) stride[static_cast<size_t>(a)] = step;
    step *= target.extent[static_cast<size_t>(a)];
  }
  int64_t delta = 0;  // the read's distance from the loop's cell in one block
  for (size_t a = 0; a < offsets.size(); ++a) delta += offsets[a] * stride[a];
  const Leaving where = leaving(node, offsets, 0, {}, mine);
  auto word = [](int64_t v) { return static_cast<uint64_t>(v) & 0xffffffffu; };  // wraps as u32 adds do
  Stmt* at = cell_field_address(field, bin(BinaryOp::add, own, u32(word(delta))));
  const DataType ct = compute_type(dtype);
  Stmt* value = var(ct, zero_of(b_, ct));
  auto read = [&](Stmt* address) {
    Stmt* v = b_.tree_load(place.tree, dtype, address);
    v->set_field(field);
    set(value, v);
  };
  if_then(takes(where, std::vector<int>(offsets.size(), 0), offsets), [&] { read(at); });
  for (size_t k = 0; k < blocks.directions.size(); ++k) {
    const std::vector<int>& d = blocks.directions[k];
    Stmt* taken = takes(where, d, offsets);
    if (taken == nullptr) continue;
    Stmt* chosen = bin(BinaryOp::logic_and, blocks.corners[k].ok, taken);
    int64_t back = 0;  // the block's side on each axis it lies along
    for (size_t a : where.moved)
      if (d[a] != 0) back += d[a] * side[a] * stride[a];
    // The block's first cell plus the read's place in it, which is not
    // negative where the read takes this block (addresses are sums that
    // never wrap: code generators widen them so).
    if_then(chosen, [&] {
      Stmt* in_block = bin(BinaryOp::add, bin(BinaryOp::sub, own, blocks.own_corner), u32(word(delta - back)));
      read(cell_field_address(field, bin(BinaryOp::add, blocks.corners[k].address, in_block)));
    });
  }
  return get(value);
}

bool SparseRuntime::groups_activations(const SNodeForest& forest, int node) {
  bool pointer = false;
  for (int n : forest.path(node)) {
    const SNodeType t = forest.snode(n).type;
    if (t == SNodeType::bitmasked || t == SNodeType::dynamic) return false;
    pointer = pointer || t == SNodeType::pointer;
  }
  return pointer;
}

std::vector<Stmt*> SparseRuntime::activate_group(int node, const std::vector<GroupSite>& sites) {
  GROVE_ASSERT(groups_activations(forest_, node), "activate_group over a path of dense and pointer levels only");
  const SNodeDecl& target = forest_.snode(node);
  const std::vector<int> path = forest_.path(node);
  std::vector<Stmt*> cells;
  for (size_t k = 0; k < sites.size(); ++k) cells.push_back(var(U32, u32(0)));
  std::vector<std::vector<Stmt*>> idx;
  for (const GroupSite& site : sites) idx.push_back(axis_indices(site.indices));
  std::vector<int> pools;  // positions in `path` of the pointer levels
  for (size_t n = 1; n < path.size(); ++n)
    if (forest_.snode(path[n]).type == SNodeType::pointer) pools.push_back(static_cast<int>(n));
  // (A cell's address is never 0, which the variables use for none: cells
  // under a pointer lie in its pool, after the root's words.)
  GROVE_ASSERT(forest_.snode(path[static_cast<size_t>(pools.back())]).pool_offset > 0, "a pool at word 0");
  auto body = [&] {
    // The first empty slot a needed site met (its address + 1; 0: none),
    // its level's position in the path and the site's indices, for the
    // publisher's record.
    Stmt* missing = var(U32, u32(0));
    Stmt* level = pools.size() > 1 ? var(U32, u32(0)) : nullptr;
    std::vector<Stmt*> at(static_cast<size_t>(kMaxAxes), nullptr);
    for (int a = 0; a < kMaxAxes; ++a)
      if (target.shape[static_cast<size_t>(a)] > 1) at[static_cast<size_t>(a)] = var(U32, u32(0));
    for (size_t k = 0; k < sites.size(); ++k) {
      EmptySlot first;
      const auto [address, ok] = walk(node, idx[k], false, -1, &first);
      set(cells[k], b_.select(ok, address, u32(0)));
      Stmt* take = bin(BinaryOp::logic_and, b_.unary(UnaryOp::logic_not, ok),
                       bin(BinaryOp::cmp_eq, get(missing), u32(0)));
      if (sites[k].needed != nullptr) take = bin(BinaryOp::logic_and, sites[k].needed, take);
      if_then(take, [&] {
        set(missing, first.slot_plus_one);
        if (level != nullptr) set(level, first.level);
        for (size_t a = 0; a < at.size(); ++a)
          if (at[a] != nullptr) set(at[a], idx[k][a]);
      });
    }
    // Done where no needed site lacks its cell, or a pool is full (counted:
    // the sites without a cell then skip their access); the loop is left
    // where its body ends.
    Stmt* slot_plus_one = get(missing);
    Stmt* done = var(U1, bin(BinaryOp::cmp_eq, slot_plus_one, u32(0)));
    if_then(b_.unary(UnaryOp::logic_not, get(done)), [&] {
      Stmt* slot = bin(BinaryOp::sub, slot_plus_one, u32(1));
      std::vector<Stmt*> published_idx;
      for (size_t a = 0; a < at.size(); ++a) published_idx.push_back(at[a] != nullptr ? get(at[a]) : u32(0));
      Stmt* which = level != nullptr ? get(level) : nullptr;
      for (int n : pools) {
        const int pool = path[static_cast<size_t>(n)];
        auto activate_here = [&] {
          auto published = [&](Stmt* v) { record_published(pool, node, published_idx, bin(BinaryOp::sub, v, u32(1))); };
          Stmt* v = activate_slot(pool, slot, published);
          set(done, bin(BinaryOp::cmp_eq, v, u32(0)));
        };
        if (which == nullptr) activate_here();
        else if_then(bin(BinaryOp::cmp_eq, which, u32(static_cast<uint64_t>(n))), activate_here);
      }
    });
    if_then(get(done), [&] { b_.break_stmt(); });
  };
  // A counted loop: each pass but the last fills a slot that stays filled
  // for the rest of the kernel (nothing in it deactivates), so the sites'
  // slots, one per pool each, and a last look bound the passes. (As a while
  // loop left only by its break, lavapipe (Mesa 22.3) ran it until its loop
  // limiter stopped it and the cells were never seen: 0 for every site.)
  serial_loop(i32(0), i32(static_cast<int64_t>(sites.size() * pools.size() + 1)), [&](Stmt*) { body(); });
  return cells;
}

SparseRuntime::Cell SparseRuntime::grouped_cell(Stmt* cell_var) {
  Stmt* address = get(cell_var);
  return {address, bin(BinaryOp::cmp_ne, address, u32(0))};
}

// ---- fields ------------------------------------------------------------------


SparseRuntime::Cell SparseRuntime::active_cell(Stmt* address) { return {address, b_.const_int(U1, 1)}; }

Stmt* SparseRuntime::cell_field_address(int field, Stmt* cell) {
  const SNodeDecl& place = forest_.snode(forest_.place_of(field));
  return bin(BinaryOp::add, cell, u32(static_cast<uint64_t>(place.component_offset)));
}

Stmt* SparseRuntime::load_field(int field, DataType dtype, const std::vector<Stmt*>& indices) {
  return load_field_at(field, dtype, walk(forest_.snode(forest_.place_of(field)).parent, indices, false));
}

Stmt* SparseRuntime::load_field_at(int field, DataType dtype, const Cell& cell) {
  const SNodeDecl& place = forest_.snode(forest_.place_of(field));
  Stmt* addr = cell_field_address(field, cell.address);
  Stmt* v = b_.tree_load(place.tree, dtype, addr);
  v->set_field(field);
  if (cell.ok->is_const() && cell.ok->const_int() == 1) return v;
  return b_.select(cell.ok, v, zero_of(b_, compute_type(dtype)));
}

void SparseRuntime::store_field(int field, DataType dtype, const std::vector<Stmt*>& indices,
                                Stmt* value) {
  store_field_at(field, dtype, walk(forest_.snode(forest_.place_of(field)).parent, indices, true), value);
}

void SparseRuntime::store_field_at(int field, DataType dtype, const Cell& cell, Stmt* value) {
  const SNodeDecl& place = forest_.snode(forest_.place_of(field));
  Stmt* addr = cell_field_address(field, cell.address);
  if (cell.ok->is_const() && cell.ok->const_int() == 1) {
    b_.tree_store(place.tree, dtype, addr, value)->set_field(field);
    return;
  }
  if_then(cell.ok, [&] { b_.tree_store(place.tree, dtype, addr, value)->set_field(field); });
}

Stmt* SparseRuntime::atomic_field(AtomicOp op, int field, DataType dtype,
                                  const std::vector<Stmt*>& indices, Stmt* value) {
  return atomic_field_at(op, field, dtype, walk(forest_.snode(forest_.place_of(field)).parent, indices, true), value);
}

Stmt* SparseRuntime::atomic_field_at(AtomicOp op, int field, DataType dtype, const Cell& cell, Stmt* value) {
  const SNodeDecl& place = forest_.snode(forest_.place_of(field));
  int t = place.tree;
  DataType ct = compute_type(dtype);
  Stmt* addr = cell_field_address(field, cell.address);
  Stmt* result = var(ct, zero_of(b_, ct));
  if_then(cell.ok, [&] {
    if (bit_width(dtype) >= 32) {
      Stmt* old = b_.tree_atomic(op, t, ct, addr, value);
      old->set_field(field);
      set(result, old);
      return;
    }
    // Narrow integers share no atomic instruction with 32-bit words: a
    // compare-and-swap loop on the word that holds the value.
    GROVE_ASSERT(is_integral(dtype), "atomic on a narrow float must be rejected before lowering");
    // The word a failed swap returns is the next expected value, so the loop
    // reads memory once.
    Stmt* expected = var(U32, b_.tree_load(t, U32, addr, task_changes_words_));  // the field's word: no kRuntimeWords
    Stmt* w = b_.while_loop();
    Block* saved = b_.block();
    size_t pos = b_.position();
    b_.set_insert_point_to_end(w->body());
    Stmt* old_word = get(expected);
    Stmt* old = b_.cast(ct, old_word);
    Stmt* updated = nullptr;
    switch (op) {
      case AtomicOp::add:
        updated = bin(BinaryOp::add, old, value);
        break;
      case AtomicOp::sub:
        updated = bin(BinaryOp::sub, old, value);
        break;
      case AtomicOp::min:
        updated = bin(BinaryOp::min, old, value);
        break;
      case AtomicOp::max:
        updated = bin(BinaryOp::max, old, value);
        break;
      case AtomicOp::bit_and:
        updated = bin(BinaryOp::bit_and, old, value);
        break;
      case AtomicOp::bit_or:
        updated = bin(BinaryOp::bit_or, old, value);
        break;
      case AtomicOp::bit_xor:
        updated = bin(BinaryOp::bit_xor, old, value);
        break;
      case AtomicOp::exchange:
        updated = value;
        break;
    }
    uint64_t mask = (uint64_t{1} << bit_width(dtype)) - 1;
    Stmt* new_word = bin(BinaryOp::bit_and, b_.cast(U32, updated), u32(mask));
    Stmt* prev = b_.tree_cas(t, U32, addr, old_word, new_word);
    if_then(bin(BinaryOp::cmp_eq, prev, old_word), [&] {
      set(result, old);
      b_.break_stmt();
    });
    set(expected, prev);
    b_.set_insert_point(saved, pos);
  });
  return get(result);
}

// ---- SNode operations ------------------------------------------------------------

void SparseRuntime::op_activate(int node, const std::vector<Stmt*>& indices) {
  walk(node, indices, true);
}

Stmt* SparseRuntime::op_is_active(int node, const std::vector<Stmt*>& indices) {
  return walk(node, indices, false).ok;
}

void SparseRuntime::op_deactivate(int node, const std::vector<Stmt*>& indices) {
  const SNodeDecl& s = forest_.snode(node);
  int t = s.tree;
  Cell parent = walk(s.parent, indices, false, node);
  const std::vector<Stmt*> idx = axis_indices(indices);
  Stmt* c = local_cell(node, node, idx);
  Stmt* container =
      bin(BinaryOp::add, parent.address, u32(static_cast<uint64_t>(s.component_offset)));
  if_then(parent.ok, [&] {
    switch (s.type) {
      case SNodeType::pointer: {
        Stmt* v = atomic(AtomicOp::exchange, t, bin(BinaryOp::add, container, c), u32(0));
        if_then(bin(BinaryOp::cmp_ne, v, u32(0)),
                [&] { enqueue(node, bin(BinaryOp::sub, v, u32(1))); });
        break;
      }
      case SNodeType::bitmasked: {
        Stmt* word = bin(BinaryOp::add, container, bin(BinaryOp::div, c, u32(32)));
        Stmt* bit = bin(BinaryOp::shl, u32(1), bin(BinaryOp::mod, c, u32(32)));
        Stmt* old = atomic(AtomicOp::bit_and, t, word, b_.unary(UnaryOp::bit_not, bit));
        if_then(bin(BinaryOp::cmp_ne, bin(BinaryOp::bit_and, old, bit), u32(0)), [&] {
          Stmt* cell = bin(BinaryOp::add,
                           bin(BinaryOp::add, container, u32(static_cast<uint64_t>(s.mask_words))),
                           bin(BinaryOp::mul, c, u32(static_cast<uint64_t>(s.cell_words))));
          release_cell(node, cell);
        });
        break;
      }
      case SNodeType::dynamic:
        release_container(node, container);
        break;
      case SNodeType::root:
      case SNodeType::dense:
      case SNodeType::place:
        GROVE_ASSERT(false, "deactivate of a dense SNode must be rejected before lowering");
    }
  });
}

Stmt* SparseRuntime::op_append(int node, const std::vector<Stmt*>& indices, const std::vector<Stmt*>& values) {
  const SNodeDecl& s = forest_.snode(node);
  GROVE_ASSERT(s.type == SNodeType::dynamic && s.children.size() == values.size(),
               "append needs a dynamic node and one value per field under it");
  int t = s.tree;
  Cell parent = walk(s.parent, indices, true, node);
  Stmt* container =
      bin(BinaryOp::add, parent.address, u32(static_cast<uint64_t>(s.component_offset)));
  Stmt* result = var(I32, i32(-1));
  if_then(parent.ok, [&] {
    // An append that cannot store its element (the list is at its maximum
    // length, or its chunk found the pool full) lowers the length to its own
    // index with an atomic min: the length then counts only elements that
    // were written, whatever other appends (or a deactivation) do meanwhile.
    // A later append that takes the same index writes it again; nothing is
    // ever subtracted, so the length cannot wrap below zero. The failure is
    // reported after the launch.
    Stmt* k = atomic(AtomicOp::add, t, container, u32(1));
    if_then(
        bin(BinaryOp::cmp_lt, k, u32(static_cast<uint64_t>(s.num_cells))),
        [&] {
          Stmt* chunk = bin(BinaryOp::div, k, u32(static_cast<uint64_t>(s.chunk_size)));
          Stmt* slot = bin(BinaryOp::add, bin(BinaryOp::add, container, u32(1)), chunk);
          Stmt* v = activate_slot(node, slot);
          if_then(
              bin(BinaryOp::cmp_ne, v, u32(0)),
              [&] {
                Stmt* entry = bin(BinaryOp::sub, v, u32(1));
                Stmt* in_chunk = bin(BinaryOp::mod, k, u32(static_cast<uint64_t>(s.chunk_size)));
                Stmt* cell = bin(BinaryOp::add, entry_address(node, entry),
                                 bin(BinaryOp::mul, in_chunk, u32(static_cast<uint64_t>(s.cell_words))));
                for (size_t f = 0; f < values.size(); ++f) {  // the element: one value per field
                  const SNodeDecl& place = forest_.snode(s.children[f]);
                  b_.tree_store(t, forest_.field_dtype(place.field),
                                bin(BinaryOp::add, cell, u32(static_cast<uint64_t>(place.component_offset))),
                                values[f]);
                }
                set(result, b_.cast(I32, k));
              },
              [&] { atomic(AtomicOp::min, t, container, k); });
        },
        [&] {
          atomic(AtomicOp::min, t, container, u32(static_cast<uint64_t>(s.num_cells)));
          atomic(AtomicOp::add, t, state(node, kAppendFailures), u32(1));
        });
  });
  return get(result);
}

Stmt* SparseRuntime::op_length(int node, const std::vector<Stmt*>& indices) {
  const SNodeDecl& s = forest_.snode(node);
  Cell parent = walk(s.parent, indices, false, node);
  Stmt* container =
      bin(BinaryOp::add, parent.address, u32(static_cast<uint64_t>(s.component_offset)));
  Stmt* length =
      bin(BinaryOp::min, load_shared(s.tree, container), u32(static_cast<uint64_t>(s.num_cells)));
  return b_.select(parent.ok, b_.cast(I32, length), i32(0));
}

// ---- releasing -----------------------------------------------------------------

void SparseRuntime::zero_words(int tree, Stmt* address, int64_t count) {
  if (count <= 8) {
    for (int64_t w = 0; w < count; ++w)
      store(tree, bin(BinaryOp::add, address, u32(static_cast<uint64_t>(w))), u32(0));
    return;
  }
  serial_loop(i32(0), i32(count),
              [&](Stmt* w) { store(tree, bin(BinaryOp::add, address, b_.cast(U32, w)), u32(0)); });
}

void SparseRuntime::release_cell(int node, Stmt* address) {
  const SNodeDecl& s = forest_.snode(node);
  if (!subtree_has_pool(node)) {
    zero_words(s.tree, address, s.cell_words);
    return;
  }
  for (int c : s.children)
    release_container(c, bin(BinaryOp::add, address,
                             u32(static_cast<uint64_t>(forest_.snode(c).component_offset))));
}

void SparseRuntime::release_container(int node, Stmt* container) {
  const SNodeDecl& s = forest_.snode(node);
  int t = s.tree;
  switch (s.type) {
    case SNodeType::place:
      zero_words(t, container, s.container_words);
      return;
    case SNodeType::dense:
    case SNodeType::bitmasked:
      if (!subtree_has_pool(node)) {
        zero_words(t, container, s.container_words);
        return;
      }
      zero_words(t, container, s.mask_words);
      serial_loop(i32(0), i32(s.num_cells), [&](Stmt* i) {
        release_cell(
            node,
            bin(BinaryOp::add,
                bin(BinaryOp::add, container, u32(static_cast<uint64_t>(s.mask_words))),
                bin(BinaryOp::mul, b_.cast(U32, i), u32(static_cast<uint64_t>(s.cell_words)))));
      });
      return;
    case SNodeType::pointer:
      serial_loop(i32(0), i32(s.num_cells), [&](Stmt* i) {
        Stmt* v =
            atomic(AtomicOp::exchange, t, bin(BinaryOp::add, container, b_.cast(U32, i)), u32(0));
        if_then(bin(BinaryOp::cmp_ne, v, u32(0)),
                [&] { enqueue(node, bin(BinaryOp::sub, v, u32(1))); });
      });
      return;
    case SNodeType::dynamic:
      // The chunks go first and the length last: an append that reserves
      // an index after the last reset writes into a chunk that no reset
      // frees any more, so every element the length counts was written.
      // (Length first, an append between the two steps had its chunk freed
      // under it, and a later one counted the zeros of a fresh chunk: seen
      // on an H200 through CUDA.) Chunks that appends make meanwhile stay
      // the list's, for later appends.
      serial_loop(i32(0), i32(s.num_chunks), [&](Stmt* i) {
        Stmt* slot = bin(BinaryOp::add, bin(BinaryOp::add, container, u32(1)), b_.cast(U32, i));
        Stmt* v = atomic(AtomicOp::exchange, t, slot, u32(0));
        if_then(bin(BinaryOp::cmp_ne, v, u32(0)),
                [&] { enqueue(node, bin(BinaryOp::sub, v, u32(1))); });
      });
      atomic(AtomicOp::exchange, t, container, u32(0));
      return;
    case SNodeType::root:
      GROVE_ASSERT(false, "release of a root container");
  }
}

// ---- tasks ---------------------------------------------------------------------

Stmt* SparseRuntime::mask_bit(int tree, Stmt* container, Stmt* c) {
  Stmt* bits = load_shared(tree, bin(BinaryOp::add, container, bin(BinaryOp::div, c, u32(32))));
  return bin(
      BinaryOp::cmp_ne,
      bin(BinaryOp::bit_and, bin(BinaryOp::shr, bits, bin(BinaryOp::mod, c, u32(32))), u32(1)),
      u32(0));
}

std::vector<Stmt*> SparseRuntime::entry_indices(int pool, Stmt* entry, int naxes, const int64_t* scale) {
  const SNodeDecl& p = forest_.snode(pool);
  Stmt* coords = entry_coords(pool, entry);
  Stmt* packed = p.coords_packed() ? load(p.tree, coords) : nullptr;  // one word of them (coords_packed)
  std::vector<Stmt*> out;
  for (int a = 0; a < naxes; ++a) {
    Stmt* v = u32(0);
    if (a < p.coord_axes() && packed == nullptr) {
      v = load(p.tree, a == 0 ? coords : bin(BinaryOp::add, coords, u32(static_cast<uint64_t>(a))));
    } else if (a < p.coord_axes() && p.coord_bits(a) > 0) {
      v = p.coord_shift(a) > 0 ? bin(BinaryOp::shr, packed, u32(static_cast<uint64_t>(p.coord_shift(a)))) : packed;
      if (p.coord_shift(a) + p.coord_bits(a) < 32)
        v = bin(BinaryOp::bit_and, v, u32((uint64_t{1} << p.coord_bits(a)) - 1));
    }
    out.push_back(scale == nullptr ? v : bin(BinaryOp::mul, v, u32(static_cast<uint64_t>(scale[a]))));
  }
  return out;
}

std::vector<Stmt*> SparseRuntime::list_entry_bases(int node, Stmt* entry, Stmt* container, int naxes) {
  const SNodeDecl& s = forest_.snode(node);
  const SNodeDecl& p = forest_.snode(s.parent);
  // A cell's global index in the node's index space: its container's
  // coordinates scaled by the node's extents, plus the cell's local
  // coordinates (cell_index). The list entry holds the coordinates after
  // the container, except below a pointer: there the entry is the container
  // alone, and the coordinates are those its pool entry's publisher recorded
  // (record_published), so that listgen writes one word per container.
  if (p.type == SNodeType::pointer) {
    Stmt* offset = bin(BinaryOp::sub, container, u32(static_cast<uint64_t>(p.pool_offset + s.component_offset)));
    return entry_indices(s.parent, bin(BinaryOp::div, offset, u32(static_cast<uint64_t>(p.pool_entry_words))), naxes,
                         s.extent.data());
  }
  Stmt* coords = bin(BinaryOp::add, entry, u32(1));
  const int stored = static_cast<int>(s.list_entry_words) - 1;
  std::vector<Stmt*> bases;
  for (int a = 0; a < naxes; ++a) {
    Stmt* base = u32(0);
    if (a < stored) base = load(s.tree, a == 0 ? coords : bin(BinaryOp::add, coords, u32(static_cast<uint64_t>(a))));
    bases.push_back(bin(BinaryOp::mul, base, u32(static_cast<uint64_t>(s.extent[static_cast<size_t>(a)]))));
  }
  return bases;
}

std::vector<Stmt*> SparseRuntime::cell_index(int node, const std::vector<Stmt*>& bases, Stmt* cell) {
  const SNodeDecl& s = forest_.snode(node);
  // The cell's local coordinates: row-major over the node's axes.
  std::vector<Stmt*> local(static_cast<size_t>(kMaxAxes), nullptr);
  Stmt* rest = cell;
  for (int a = kMaxAxes - 1; a >= 0; --a) {
    if (!((s.axis_mask >> a) & 1)) continue;
    auto ua = static_cast<size_t>(a);
    Stmt* ext = u32(static_cast<uint64_t>(s.extent[ua]));
    local[ua] = bin(BinaryOp::mod, rest, ext);
    rest = bin(BinaryOp::div, rest, ext);
  }
  std::vector<Stmt*> index;
  for (size_t a = 0; a < bases.size(); ++a)
    index.push_back(local[a] ? bin(BinaryOp::add, bases[a], local[a]) : bases[a]);
  return index;
}

void SparseRuntime::for_list_cells(int node, int naxes,
                                   const std::function<void(Stmt*, Stmt*, const std::vector<Stmt*>&)>& body,
                                   const RunStart& run_start) {
  const SNodeDecl& s = forest_.snode(node);
  int t = s.tree;
  // The list's counter may pass its capacity (listgen counts every append);
  // list_capacity * num_cells fits an i32 (checked by offload).
  Stmt* count = bin(BinaryOp::min, load(t, u32(static_cast<uint64_t>(s.list_offset))),
                    u32(static_cast<uint64_t>(s.list_capacity)));
  // An iteration of the parallel loop takes `run` cells of one container:
  // one (every cell its own iteration), or a run of them walked by a serial
  // loop inside, with the list entry read once per run (set_cells_per_iteration).
  const uint64_t cells = static_cast<uint64_t>(s.num_cells);
  const uint64_t run = std::clamp<uint64_t>(cells_per_iteration_, 1, cells);
  // Runs of 2^k cells (set_least_iterations), k chosen before the loop from
  // the list's length: the largest with count * cells / 2^k >=
  // least_iterations_, 0 when there is none; a container is then
  // 2^(log2 cells - k) runs, found with shifts and a mask.
  const bool adaptive = least_iterations_ > 0 && run > 1 && std::has_single_bit(cells);
  const uint64_t parts = (cells + run - 1) / run;  // runs per container (else)
  const bool whole = !adaptive && run > 1 && parts == 1;  // one run is the whole container
  Stmt* shift = nullptr;
  Stmt* parts_shift = nullptr;
  Stmt* total = nullptr;
  if (adaptive) {
    Stmt* all = bin(BinaryOp::mul, count, u32(cells));
    shift = u32(0);
    for (uint64_t r = 2; r <= std::bit_floor(run); r *= 2)
      shift = b_.select(bin(BinaryOp::cmp_ge, all, u32(uint64_t{least_iterations_} * r)),
                        u32(static_cast<uint64_t>(std::countr_zero(r))), shift);
    parts_shift = bin(BinaryOp::sub, u32(static_cast<uint64_t>(std::countr_zero(cells))), shift);
    total = bin(BinaryOp::shl, count, parts_shift);
  } else {
    total = whole ? count : bin(BinaryOp::mul, count, u32(parts));
  }
  Stmt* loop = b_.range_for(i32(0), b_.cast(I32, total));
  Block* saved = b_.block();
  size_t pos = b_.position();
  b_.set_insert_point_to_end(loop->body());
  Stmt* idx = b_.cast(U32, b_.loop_index(loop, 0));
  Stmt* e = adaptive ? bin(BinaryOp::shr, idx, parts_shift) : whole ? idx : bin(BinaryOp::div, idx, u32(parts));
  Stmt* entry = bin(BinaryOp::add, u32(static_cast<uint64_t>(s.list_offset + 1)),
                    bin(BinaryOp::mul, e, u32(static_cast<uint64_t>(s.list_entry_words))));
  Stmt* container = load(t, entry);
  if (run == 1) {
    Stmt* c = bin(BinaryOp::mod, idx, u32(cells));  // the cell's number in its container
    body(c, container, cell_index(node, list_entry_bases(node, entry, container, naxes), c));
  } else {
    // The run's bases are read before its cell loop, which does the rest.
    std::vector<Stmt*> bases = list_entry_bases(node, entry, container, naxes);
    if (run_start) run_start(bases);
    Stmt* first = nullptr;
    Stmt* last = nullptr;
    if (adaptive) {
      Stmt* mask = bin(BinaryOp::sub, bin(BinaryOp::shl, u32(1), parts_shift), u32(1));
      first = bin(BinaryOp::shl, bin(BinaryOp::bit_and, idx, mask), shift);
      last = bin(BinaryOp::add, first, bin(BinaryOp::shl, u32(1), shift));
    } else {
      first = whole ? u32(0) : bin(BinaryOp::mul, bin(BinaryOp::mod, idx, u32(parts)), u32(run));
      last = whole                  ? u32(cells)
             : cells % run == 0 ? bin(BinaryOp::add, first, u32(run))
                                : bin(BinaryOp::min, bin(BinaryOp::add, first, u32(run)), u32(cells));
    }
    serial_loop(b_.cast(I32, first), b_.cast(I32, last), [&](Stmt* i) {
      Stmt* c = b_.cast(U32, i);
      body(c, container, cell_index(node, bases, c));
    });
  }
  b_.set_insert_point(saved, pos);
}

std::pair<Stmt*, Stmt*> SparseRuntime::in_use_bit(int pool, Stmt* entry) {
  const SNodeDecl& s = forest_.snode(pool);
  Stmt* word = bin(BinaryOp::add, u32(static_cast<uint64_t>(s.in_use_offset)), bin(BinaryOp::div, entry, u32(32)));
  return {word, bin(BinaryOp::shl, u32(1), bin(BinaryOp::mod, entry, u32(32)))};
}

Stmt* SparseRuntime::entry_coords(int pool, Stmt* entry) {
  const SNodeDecl& s = forest_.snode(pool);
  return bin(BinaryOp::add, u32(static_cast<uint64_t>(s.coords_offset)),
             bin(BinaryOp::mul, entry, u32(static_cast<uint64_t>(s.entry_coord_words()))));
}

void SparseRuntime::record_published(int pool, int space, const std::vector<Stmt*>& idx, Stmt* entry) {
  const SNodeDecl& s = forest_.snode(pool);
  const SNodeDecl& last = forest_.snode(space);
  const int t = s.tree;
  // Entries share bit words, and publishers of other entries run at once.
  auto [word, bit] = in_use_bit(pool, entry);
  atomic(AtomicOp::bit_or, t, word, bit);
  // The cell's global index in the pool node's index space, as local_cell
  // reads it level by level (so indices past the shape wrap the same way).
  // Packed, the axes side by side in one word (coord_shift): one store, not
  // one per axis (a 3-D pool's three were a sixth of an activation's time
  // on lavapipe).
  Stmt* at = entry_coords(pool, entry);
  Stmt* packed = nullptr;
  for (int a = 0; a < s.coord_axes(); ++a) {
    auto ua = static_cast<size_t>(a);
    Stmt* v = u32(0);
    if (s.shape[ua] > 1) {
      v = idx.at(ua);
      const int64_t stride = last.shape[ua] / s.shape[ua];
      if (stride != 1) v = bin(BinaryOp::div, v, u32(static_cast<uint64_t>(stride)));
      v = bin(BinaryOp::mod, v, u32(static_cast<uint64_t>(s.shape[ua])));
    }
    if (!s.coords_packed()) {
      store(t, a == 0 ? at : bin(BinaryOp::add, at, u32(static_cast<uint64_t>(a))), v);
    } else if (s.coord_bits(a) > 0) {
      if (s.coord_shift(a) > 0) v = bin(BinaryOp::shl, v, u32(static_cast<uint64_t>(s.coord_shift(a))));
      packed = packed == nullptr ? v : bin(BinaryOp::bit_or, packed, v);
    }
  }
  if (s.coords_packed()) store(t, at, packed != nullptr ? packed : u32(0));
}

void SparseRuntime::for_pool_word_runs(int pool, uint64_t words_per_run, const std::function<void(Stmt*, Stmt*)>& body) {
  const SNodeDecl& s = forest_.snode(pool);
  const int t = s.tree;
  GROVE_ASSERT(s.type == SNodeType::pointer, "a walk of the in-use bits of a node that is not a pointer");
  // Every entry ever handed out lies below the most order positions taken
  // (PoolState::kPositions): only their bit words are read.
  const uint64_t cap = static_cast<uint64_t>(s.capacity);
  Stmt* positions = bin(BinaryOp::max, load(t, state(pool, kPositions)),
                        bin(BinaryOp::min, load(t, state(pool, kTickets)), u32(cap)));
  Stmt* words = bin(BinaryOp::div, bin(BinaryOp::add, positions, u32(31)), u32(32));
  const uint64_t run = std::clamp<uint64_t>(words_per_run, 1, (cap + 31) / 32);
  Stmt* total = run == 1 ? words : bin(BinaryOp::div, bin(BinaryOp::add, words, u32(run - 1)), u32(run));
  Stmt* loop = b_.range_for(i32(0), b_.cast(I32, total));
  Block* saved = b_.block();
  size_t pos = b_.position();
  b_.set_insert_point_to_end(loop->body());
  Stmt* idx = b_.cast(U32, b_.loop_index(loop, 0));
  Stmt* first = run == 1 ? idx : bin(BinaryOp::mul, idx, u32(run));
  Stmt* last = run == 1 ? bin(BinaryOp::add, idx, u32(1)) : bin(BinaryOp::min, bin(BinaryOp::add, first, u32(run)), words);
  body(first, last);
  b_.set_insert_point(saved, pos);
}

void SparseRuntime::each_bit(Stmt* bits, const std::function<void(Stmt*)>& body) {
  Stmt* lp = b_.while_loop();
  Block* outer = b_.block();
  size_t here = b_.position();
  b_.set_insert_point_to_end(lp->body());
  if_then(bin(BinaryOp::cmp_eq, get(bits), u32(0)), [&] { b_.break_stmt(); });
  Stmt* now = get(bits);
  set(bits, bin(BinaryOp::bit_and, now, bin(BinaryOp::sub, now, u32(1))));
  body(b_.unary(UnaryOp::ctz, now));
  b_.set_insert_point(outer, here);
}

void SparseRuntime::for_pool_cells(int child_node, const std::function<void(Stmt*, Stmt*)>& body) {
  const SNodeDecl& child = forest_.snode(child_node);
  const int node = child.parent;
  const SNodeDecl& s = forest_.snode(node);
  const int t = s.tree;
  // An iteration takes as many bit words (32 entries each) as
  // cells_per_iteration_ cells, at least one.
  for_pool_word_runs(node, cells_per_iteration_ / 32, [&](Stmt* first, Stmt* last) {
    Stmt* bits_at = u32(static_cast<uint64_t>(s.in_use_offset));
    // 1. Count the run's entries in use.
    Stmt* found = var(U32, u32(0));
    serial_loop(b_.cast(I32, first), b_.cast(I32, last), [&](Stmt* w) {
      Stmt* bits = load(t, bin(BinaryOp::add, bits_at, b_.cast(U32, w)));
      set(found, bin(BinaryOp::add, get(found), b_.unary(UnaryOp::popcnt, bits)));
    });
    // 2. One atomic add for the run, then its entries in order.
    if_then(bin(BinaryOp::cmp_ne, get(found), u32(0)), [&] {
      Stmt* at = var(U32, atomic(AtomicOp::add, t, u32(static_cast<uint64_t>(child.list_offset)), get(found)));
      serial_loop(b_.cast(I32, first), b_.cast(I32, last), [&](Stmt* w) {
        Stmt* bits = var(U32, load(t, bin(BinaryOp::add, bits_at, b_.cast(U32, w))));
        Stmt* word_first = bin(BinaryOp::mul, b_.cast(U32, w), u32(32));
        // Pools hand out entries from the bottom, so most words are full: a
        // counted loop over their 32 entries (which a CPU vectorises) instead
        // of one trip per bit.
        if_then(
            bin(BinaryOp::cmp_eq, get(bits), u32(0xffffffffu)),
            [&] {
              Stmt* base = get(at);
              serial_loop(i32(0), i32(32), [&](Stmt* b) {
                Stmt* bit = b_.cast(U32, b);
                body(bin(BinaryOp::add, base, bit), entry_address(node, bin(BinaryOp::add, word_first, bit)));
              });
              set(at, bin(BinaryOp::add, base, u32(32)));
            },
            [&] {
              each_bit(bits, [&](Stmt* bit) {
                body(get(at), entry_address(node, bin(BinaryOp::add, word_first, bit)));
                set(at, bin(BinaryOp::add, get(at), u32(1)));
              });
            });
      });
    });
  });
}

void SparseRuntime::for_pool_entries(int pool, const std::function<void(Stmt*)>& body) {
  const SNodeDecl& s = forest_.snode(pool);
  // A word an iteration: the body runs once per cell of the pointer, which
  // may be a block's worth of work (sparse_life's prune reads 64 cells), so
  // a few hundred blocks still spread over the cores.
  for_pool_word_runs(pool, 1, [&](Stmt* first, Stmt* last) {
    serial_loop(b_.cast(I32, first), b_.cast(I32, last), [&](Stmt* w) {
      Stmt* bits =
          var(U32, load(s.tree, bin(BinaryOp::add, u32(static_cast<uint64_t>(s.in_use_offset)), b_.cast(U32, w))));
      Stmt* word_first = bin(BinaryOp::mul, b_.cast(U32, w), u32(32));
      each_bit(bits, [&](Stmt* bit) { body(bin(BinaryOp::add, word_first, bit)); });
    });
  });
}

void SparseRuntime::emit_clear_list(int node) {
  const SNodeDecl& s = forest_.snode(node);
  store(s.tree, u32(static_cast<uint64_t>(s.list_offset)), u32(0));
}

void SparseRuntime::emit_listgen(int node) {
  const SNodeDecl& s = forest_.snode(node);
  const SNodeDecl& p = forest_.snode(s.parent);
  int t = s.tree;
  // Writes entry `at` of the list, if the list has room for it (its
  // counter counts every append, so the host sees an overflow).
  auto write_entry = [&](Stmt* at, Stmt* container, const std::vector<Stmt*>& coords) {
    if_then(bin(BinaryOp::cmp_lt, at, u32(static_cast<uint64_t>(s.list_capacity))), [&] {
      Stmt* entry = bin(BinaryOp::add, u32(static_cast<uint64_t>(s.list_offset + 1)),
                        bin(BinaryOp::mul, at, u32(static_cast<uint64_t>(s.list_entry_words))));
      store(t, entry, container);
      for (size_t a = 0; a < coords.size(); ++a)
        store(t, bin(BinaryOp::add, entry, u32(1 + a)), coords[a]);
    });
  };
  auto append_entry = [&](Stmt* container, const std::vector<Stmt*>& coords) {
    write_entry(atomic(AtomicOp::add, t, u32(static_cast<uint64_t>(s.list_offset)), u32(1)), container, coords);
  };
  int ncoords = static_cast<int>(s.list_entry_words) - 1;
  if (p.type == SNodeType::root) {
    Stmt* loop = b_.range_for(i32(0), i32(1));
    Block* saved = b_.block();
    size_t pos = b_.position();
    b_.set_insert_point_to_end(loop->body());
    b_.loop_index(loop, 0);
    std::vector<Stmt*> coords(static_cast<size_t>(ncoords), nullptr);
    for (auto& c : coords) c = u32(0);
    append_entry(u32(static_cast<uint64_t>(forest_.tree(t).root_offset + s.component_offset)),
                 coords);
    b_.set_insert_point(saved, pos);
    return;
  }
  if (p.type == SNodeType::pointer) {
    // The parent's pool entries in use, in memory order; a list entry is
    // the container alone (list_entry_bases reads the pool's coordinates).
    for_pool_cells(node, [&](Stmt* at, Stmt* cell) {
      write_entry(at, bin(BinaryOp::add, cell, u32(static_cast<uint64_t>(s.component_offset))), {});
    });
    return;
  }
  for_list_cells(
      s.parent, ncoords, [&](Stmt* c, Stmt* container, const std::vector<Stmt*>& coords) {
        Stmt* cw = u32(static_cast<uint64_t>(p.cell_words));
        Stmt* comp = u32(static_cast<uint64_t>(s.component_offset));
        switch (p.type) {
          case SNodeType::dense:
            append_entry(
                bin(BinaryOp::add, bin(BinaryOp::add, container, bin(BinaryOp::mul, c, cw)), comp),
                coords);
            break;
          case SNodeType::bitmasked: {
            if_then(mask_bit(t, container, c), [&] {
              Stmt* cell =
                  bin(BinaryOp::add,
                      bin(BinaryOp::add, container, u32(static_cast<uint64_t>(p.mask_words))),
                      bin(BinaryOp::mul, c, cw));
              append_entry(bin(BinaryOp::add, cell, comp), coords);
            });
            break;
          }
          case SNodeType::pointer:  // for_pool_cells, above
          case SNodeType::root:
          case SNodeType::dynamic:
          case SNodeType::place:
            GROVE_ASSERT(false, "listgen below a root, pointer, dynamic or place node here");
        }
      });
}

void SparseRuntime::emit_struct_for(int node, const StructForBody& body, const RunStart& run_start) {
  const SNodeDecl& s = forest_.snode(node);
  int t = s.tree;
  if (s.type == SNodeType::root) {
    // Fields placed in the root's one cell (0-D fields): one iteration.
    Stmt* loop = b_.range_for(i32(0), i32(1));
    Block* saved = b_.block();
    size_t pos = b_.position();
    b_.set_insert_point_to_end(loop->body());
    body({}, u32(static_cast<uint64_t>(forest_.tree(t).root_offset)));
    b_.set_insert_point(saved, pos);
    return;
  }
  if (s.type == SNodeType::pointer) {
    // Its active cells are its pool's entries in use (gc runs before a
    // struct-for that follows a deactivation, so the bits are exact): a
    // walk of the pool's bits, not of every slot of its containers.
    for_pool_entries(node, [&](Stmt* entry) {
      std::vector<Stmt*> indices;
      for (Stmt* g : entry_indices(node, entry, s.ndim())) indices.push_back(b_.cast(I32, g));
      body(indices, entry_address(node, entry));
    });
    return;
  }
  for_list_cells(node, s.ndim(), [&](Stmt* c, Stmt* container, const std::vector<Stmt*>& index) {
    std::vector<Stmt*> indices;
    for (Stmt* g : index) indices.push_back(b_.cast(I32, g));
    Stmt* cw = u32(static_cast<uint64_t>(s.cell_words));
    switch (s.type) {
      case SNodeType::dense:
        body(indices, bin(BinaryOp::add, container, bin(BinaryOp::mul, c, cw)));
        break;
      case SNodeType::bitmasked:
        if_then(mask_bit(t, container, c), [&] {
          body(indices, bin(BinaryOp::add, bin(BinaryOp::add, container, u32(static_cast<uint64_t>(s.mask_words))),
                            bin(BinaryOp::mul, c, cw)));
        });
        break;
      case SNodeType::dynamic: {
        // Every element below the length is active, even in a chunk that was
        // never allocated (it reads 0): no cell address is passed then.
        Stmt* length = bin(BinaryOp::min, load_shared(t, container), u32(static_cast<uint64_t>(s.num_cells)));
        if_then(bin(BinaryOp::cmp_lt, c, length), [&] { body(indices, nullptr); });
        break;
      }
      case SNodeType::root:
      case SNodeType::place:
      case SNodeType::pointer:  // (above)
        GROVE_ASSERT(false, "struct_for over a root, a place or (above) a pointer");
    }
  }, run_start);
}

// The order positions tickets took are [0, min(tickets, capacity)) (those
// below the last gc's start were taken before it). Returned entries go just
// below that end, downwards, so the next tickets take them first and then
// the order positions nobody took yet.
Stmt* SparseRuntime::order_taken(int pool) {
  const SNodeDecl& s = forest_.snode(pool);
  return bin(BinaryOp::min, load(s.tree, state(pool, kTickets)), u32(static_cast<uint64_t>(s.capacity)));
}

void SparseRuntime::emit_gc(int pool) {
  const SNodeDecl& s = forest_.snode(pool);
  int t = s.tree;
  Stmt* end = order_taken(pool);
  // The spare bitmap's words, where it has any bits set.
  Stmt* spares = b_.select(bin(BinaryOp::cmp_ne, load(t, state(pool, kSpareCount)), u32(0)), u32(spare_words(pool)),
                           u32(0));
  Stmt* queued = load(t, state(pool, kQueueCount));
  Stmt* each = b_.range_for(i32(0), b_.cast(I32, bin(BinaryOp::add, spares, queued)));
  Block* saved = b_.block();
  size_t pos = b_.position();
  b_.set_insert_point_to_end(each->body());
  Stmt* i = b_.cast(U32, b_.loop_index(each, 0));
  auto give_back = [&](Stmt* entry) {
    Stmt* at = bin(BinaryOp::sub, bin(BinaryOp::sub, end, u32(1)),
                   atomic(AtomicOp::add, t, state(pool, kCollected), u32(1)));
    store(t, bin(BinaryOp::add, u32(static_cast<uint64_t>(s.order_offset)), at), bin(BinaryOp::sub, entry, at));
    // Listgen lists a pointer's entries by their in-use bits; other freed
    // entries of the same word are cleared at once.
    if (s.type == SNodeType::pointer) {
      auto [word, bit] = in_use_bit(pool, entry);
      atomic(AtomicOp::bit_and, t, word, b_.unary(UnaryOp::bit_not, bit));
    }
  };
  if_then(
      bin(BinaryOp::cmp_lt, i, spares),
      [&] {
        // Spares not reused: their entries were never published, so they
        // are still zero.
        Stmt* bits = var(U32, atomic(AtomicOp::exchange, t, spare_word(pool, i), u32(0)));
        loop([&] {
          if_then(bin(BinaryOp::cmp_eq, get(bits), u32(0)), [&] { b_.break_stmt(); });
          Stmt* low = bin(BinaryOp::bit_and, get(bits), bin(BinaryOp::sub, u32(0), get(bits)));
          give_back(bin(BinaryOp::add, bin(BinaryOp::mul, i, u32(32)), b_.unary(UnaryOp::ctz, low)));
          set(bits, bin(BinaryOp::bit_xor, get(bits), low));
        });
      },
      [&] {
        // A deactivated entry: zero it (queueing what lies below it for the
        // gc of the pools below, which runs later), then free it.
        Stmt* entry = load(t, bin(BinaryOp::add, u32(static_cast<uint64_t>(s.queue_offset)),
                                  bin(BinaryOp::sub, i, spares)));
        Stmt* address = entry_address(pool, entry);
        if (s.type == SNodeType::pointer) {
          release_cell(pool, address);
        } else {
          zero_words(t, address, s.pool_entry_words);  // a dynamic chunk holds only places
        }
        give_back(entry);
      });
  b_.set_insert_point(saved, pos);
}

void SparseRuntime::emit_gc_finish(int pool) {
  const SNodeDecl& s = forest_.snode(pool);
  int t = s.tree;
  // The next ticket takes the last entry returned. Every entry not in the
  // order from there on is in use (published), so that is also the count in
  // use; entries in use only grow between two gcs (kernels without gc do not
  // free any), so the most held since the last gc is that plus the entries
  // this gc found queued.
  Stmt* taken = order_taken(pool);
  store(t, state(pool, kPositions), bin(BinaryOp::max, load(t, state(pool, kPositions)), taken));
  Stmt* next = bin(BinaryOp::sub, taken, load(t, state(pool, kCollected)));
  store(t, state(pool, kTickets), next);
  Stmt* before = bin(BinaryOp::add, next, load(t, state(pool, kQueueCount)));
  store(t, state(pool, kHighWater), bin(BinaryOp::max, load(t, state(pool, kHighWater)), before));
  store(t, state(pool, kCollected), u32(0));
  store(t, state(pool, kSpareCount), u32(0));
  store(t, state(pool, kSpareHint), u32(0));
  store(t, state(pool, kQueueCount), u32(0));
}

}  // namespace grove::ir
