// src/ir/passes/schedule_loads.cpp — see schedule_loads.h.
#include "ir/passes/schedule_loads.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace grove::ir {

namespace {

bool movable(const Stmt* s) { return s->kind() == StmtKind::TreeLoad && !s->atomic_load(); }

// What a waiting load may move past: nothing here writes tree memory.
bool passable(const Stmt* s) {
  if (!s->blocks().empty()) return false;
  switch (kind_category(s->kind())) {
    case StmtCategory::value:
    case StmtCategory::local:
      return true;
    default:
      return s->kind() == StmtKind::LoopIndex || s->kind() == StmtKind::MessageBase || movable(s);
  }
}

// The kernel's statements numbered in program order (operands before their
// users), with what the schedule needs of each, by number.
class Scheduler {
 public:
  explicit Scheduler(Kernel& kernel) {
    walk(kernel.body(), [&](Stmt* s) { numbering_.set(s, count_++); });
    uses_.assign(count_, 0);
    first_use_.assign(count_, kNever);
    chain_of_.assign(count_, kNone);
    chains_.resize(count_);
    position_.assign(count_, 0);
    waiting_.assign(count_, false);
    uint32_t n = 0;
    walk(kernel.body(), [&](Stmt* s) {
      for (size_t k = 0; k < s->operands().size(); ++k) {
        const Stmt* op = s->operands()[k];
        if (!numbering_.has(op)) continue;
        const uint32_t o = numbering_.get(op);
        ++uses_[o];
        // (Of `a + b`, a's load goes first.)
        if (first_use_[o] == kNever) first_use_[o] = (uint64_t{n} << 8) | std::min<size_t>(k, 255);
      }
      ++n;
    });
    schedule(kernel.body());
  }

 private:
  static constexpr uint64_t kNever = ~uint64_t{0};
  static constexpr uint32_t kNone = ~uint32_t{0};

  uint32_t number(const Stmt* s) const { return numbering_.get(s); }

  // A load's address chain: the value statements of its block whose one
  // use is the load or another statement of its chain, in program order
  // (operands first). A worklist, not recursion: a chain may be as long as
  // the block.
  void claim(Block* block, const Stmt* load_stmt, uint32_t load) {
    std::vector<const Stmt*> work{load_stmt};
    std::vector<uint32_t>& chain = chains_[load];
    while (!work.empty()) {
      const Stmt* s = work.back();
      work.pop_back();
      for (const Stmt* op : s->operands()) {
        if (op->parent() != block || !is_value(op->kind()) || !numbering_.has(op)) continue;
        const uint32_t o = number(op);
        if (uses_[o] != 1 || chain_of_[o] != kNone) continue;
        chain_of_[o] = load;
        chain.push_back(o);
        work.push_back(op);
      }
    }
    std::sort(chain.begin(), chain.end());
  }

  void schedule(Block* block) {
    for (size_t i = 0; i < block->size(); ++i)
      for (const auto& inner : block->at(i)->blocks()) schedule(inner.get());
    for (size_t i = 0; i < block->size(); ++i)
      if (movable(block->at(i))) claim(block, block->at(i), number(block->at(i)));
    std::vector<std::unique_ptr<Stmt>> stmts = block->take_all();
    for (size_t i = 0; i < stmts.size(); ++i) position_[number(stmts[i].get())] = i;
    std::vector<uint32_t> waiting;  // loads taken out, by number
    auto emit = [&](uint32_t n) { block->append(std::move(stmts[position_[n]])); };
    auto place = [&] {
      std::stable_sort(waiting.begin(), waiting.end(),
                       [&](uint32_t a, uint32_t b) { return first_use_[a] < first_use_[b]; });
      for (uint32_t load : waiting) {
        for (uint32_t member : chains_[load]) emit(member);
        emit(load);
      }
      for (uint32_t load : waiting) waiting_[load] = false;
      waiting.clear();
    };
    auto uses_waiting = [&](const Stmt* s) {
      for (const Stmt* op : s->operands())
        if (numbering_.has(op) && waiting_[number(op)]) return true;
      return false;
    };
    for (size_t i = 0; i < stmts.size(); ++i) {
      Stmt* s = stmts[i].get();
      const uint32_t n = number(s);
      if (chain_of_[n] != kNone) continue;  // placed with its load
      bool flush = !waiting.empty() && (!passable(s) || uses_waiting(s));
      for (uint32_t member : chains_[n]) flush = flush || (!waiting.empty() && uses_waiting(stmts[position_[member]].get()));
      if (flush) place();
      if (movable(s)) {
        waiting.push_back(n);
        waiting_[n] = true;
      } else {
        emit(n);
      }
    }
    place();
  }

  Numbering numbering_;
  uint32_t count_ = 0;
  std::vector<uint32_t> uses_;        // operands naming the statement
  std::vector<uint64_t> first_use_;   // its first user's number << 8 | the operand's place
  std::vector<uint32_t> chain_of_;    // the load whose address chain holds it
  std::vector<std::vector<uint32_t>> chains_;  // a load's chain, operands first
  std::vector<size_t> position_;      // in its block, while the block is scheduled
  std::vector<bool> waiting_;         // a load taken out of its block, not yet placed
};

}  // namespace

void schedule_loads(Kernel& kernel) { Scheduler{kernel}; }

}  // namespace grove::ir
