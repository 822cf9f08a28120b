// src/llvm/codegen.cpp — lowered IR to LLVM IR, one function per task, for a
// target that its hooks describe (emit.h: the CPU's in src/llvm_cpu, NVPTX's
// in src/cuda), and LLVM's -O3 pipeline for it. Arithmetic
// follows docs/ir.md as the interpreter computes it (src/ir/eval.cpp): integers wrap, x / 0 and x % 0 are 0, shift counts are
// taken modulo the width, float-to-integer casts truncate and saturate with
// NaN giving 0.
#include "llvm/codegen.h"

#include <llvm/ADT/PostOrderIterator.h>
#include <llvm/IR/CFG.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Instrumentation/ThreadSanitizer.h>
#include <llvm/Transforms/Scalar/LowerAtomicPass.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/passes/reductions.h"
#include "ir/plan_builder.h"
#include "ir/printer.h"
#include "llvm/emit.h"
#include "runtime/core/context_layout.h"

namespace grove::llvm_backend {

namespace {

using ir::BinaryOp;
using ir::StmtKind;
using ir::UnaryOp;

// Emits one kernel's tasks into a module for a target, which decides (its
// TargetHooks, emit.h) only how a function receives its buffers and
// arguments, which iterations of a parallel loop it runs, and where math
// functions come from.
class Emitter {
 public:
  Emitter(const ir::Kernel& kernel, const CodegenOptions& options, const TargetHooks& target, llvm::Module& module)
      : kernel_(kernel), options_(options), target_(target), m_(module), c_(module.getContext()), b_(c_) {}

  std::vector<TaskCode> emit() {
    std::vector<TaskCode> tasks;
    const ir::Block* body = kernel_.body();
    ir::walk(const_cast<ir::Block*>(body), [&](const ir::Stmt* s) {
      for (const ir::Stmt* op : s->operands()) used_.insert(op);
    });
    make_scopes();
    for (size_t i = 0; i < body->size(); ++i) {
      const ir::Stmt* task = body->at(i);
      if (task->kind() != StmtKind::Task)
        throw InternalError("LLVM codegen: kernel '" + kernel_.name() + "' is not offloaded (a " +
                            ir::kind_name(task->kind()) + " outside a task)");
      tasks.push_back(emit_task(task, i));
    }
    return tasks;
  }

 private:
  // ---- types and constants ----
  llvm::Type* type_of(DataType t) {
    switch (t) {
      case DataType::u1: return b_.getInt1Ty();
      case DataType::i8: case DataType::u8: return b_.getInt8Ty();
      case DataType::i16: case DataType::u16: return b_.getInt16Ty();
      case DataType::i32: case DataType::u32: return b_.getInt32Ty();
      case DataType::i64: case DataType::u64: return b_.getInt64Ty();
      case DataType::f16: case DataType::f32: return b_.getFloatTy();  // f16 computes in f32
      case DataType::f64: return b_.getDoubleTy();
      case DataType::unknown: break;
    }
    throw InternalError("LLVM codegen: a value of unknown type in " + what_);
  }
  llvm::Value* constant(DataType t, uint64_t bits) {
    if (t == DataType::f32 || t == DataType::f16) {
      const auto w = static_cast<uint32_t>(bits);
      return llvm::ConstantFP::get(c_, llvm::APFloat(llvm::APFloat::IEEEsingle(), llvm::APInt(32, w)));
    }
    if (t == DataType::f64)
      return llvm::ConstantFP::get(c_, llvm::APFloat(llvm::APFloat::IEEEdouble(), llvm::APInt(64, bits)));
    return llvm::ConstantInt::get(type_of(t), bits);  // truncated to the width
  }
  llvm::Value* zero(DataType t) { return llvm::Constant::getNullValue(type_of(t)); }
  llvm::Value* u32(uint32_t v) { return b_.getInt32(v); }

  // ---- functions ----
  TaskCode emit_task(const ir::Stmt* task, size_t index) {
    TaskCode t;
    t.kind = task->task_kind();
    t.label = task->text();
    t.parallel = ir::is_parallel(t.kind);
    t.entry = target_.entry_name(kernel_.name(), index, t.kind);
    if (target_.shares_runtime_tasks() && ir::is_runtime_task(t.kind)) {
      t.shared = true;
      // Debug mode's early returns are the other thing that decides its code.
      t.shape = ir::fingerprint_task(kernel_, task, {options_.debug ? "debug" : ""});
      char hex[40];
      std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(t.shape.a),
                    static_cast<unsigned long long>(t.shape.b));
      t.entry = std::string(ir::op_name(t.kind)) + ".S" + std::to_string(task->snode()) + "." + hex;
      // The same task twice in one kernel: one function.
      if (auto same = shared_made_.find(t.entry); same != shared_made_.end()) {
        TaskCode again = same->second;
        again.label = t.label;
        return again;
      }
    }
    what_ = "task " + std::to_string(index) + " ('" + t.label + "') of kernel '" + kernel_.name() + "'";
    std::set<TreeKey> used;
    ir::walk(task->body(), [&](ir::Stmt* s) {
      if (ir::accesses_tree_buffer(s)) used.insert({s->tree(), s->tree_param()});
    });
    buffer_index_.clear();
    for (const TreeKey& k : used) {
      buffer_index_[k] = static_cast<uint32_t>(t.trees.size()) + 1;
      t.trees.push_back(k);
    }
    const ir::Block* body = task->body();
    parallel_loop_ = nullptr;
    if (t.parallel) {
      if (body->empty() || body->at(body->size() - 1)->kind() != StmtKind::RangeFor)
        throw InternalError("LLVM codegen: " + what_ + " is parallel but does not end in its range_for");
      parallel_loop_ = body->at(body->size() - 1);
    }
    find_grid(t);
    iterations_per_sum_ = 1;
    // The task function.
    llvm::Type* ptr = b_.getPtrTy();
    begin_function(target_.task_type(c_, t.trees.size(), kernel_.args().size()), t.entry);
    target_.task_made(m_, *fn_);
    if (options_.debug) return_if_an_assertion_failed();
    emit_block(body);
    if (!b_.GetInsertBlock()->getTerminator()) b_.CreateRetVoid();
    end_function();
    t.iterations_per_invocation = iterations_per_sum_;
    // On the CPU, a parallel task's count function (a GPU kernel finds the
    // count itself and strides over it), unless the host can count from
    // the plan (its bounds are constants and arguments): a function less
    // to optimise and emit (5-8% of a one-task kernel's compile).
    if (t.parallel && target_.count_functions() && !ir::counted_on_host(parallel_loop_)) {
      t.count_entry = t.entry + ".count";
      begin_function(llvm::FunctionType::get(b_.getInt32Ty(), {ptr, ptr}, false), t.count_entry);
      for (size_t i = 0; i + 1 < body->size(); ++i) emit_stmt(body->at(i));
      b_.CreateRet(count_of(parallel_loop_));
      end_function();
    }
    if (t.shared) shared_made_.emplace(t.entry, t);
    return t;
  }

  void begin_function(llvm::FunctionType* type, const std::string& name) {
    enter_function(llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, m_));
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    target_.bind(*fn_, buffer_index_, bound_);
  }

  // Emits into `fn` from its new entry block on, knowing no value yet.
  void enter_function(llvm::Function* fn) {
    fn_ = fn;
    entry_ = llvm::BasicBlock::Create(c_, "entry", fn_);
    b_.SetInsertPoint(entry_);
    values_.clear();
    variables_.clear();
    loop_index_.clear();
    loops_.clear();
    bound_ = {};
    accumulators_.clear();
    reductions_.clear();
    wide_.clear();
  }

  void end_function() {
    for (llvm::BasicBlock& bb : *fn_)
      if (!bb.getTerminator()) {
        b_.SetInsertPoint(&bb);
        if (fn_->getReturnType()->isVoidTy()) {
          b_.CreateRetVoid();
        } else {
          b_.CreateUnreachable();
        }
      }
  }

  // max(end - begin, 0) of a range_for, in i32.
  llvm::Value* count_of(const ir::Stmt* loop) {
    llvm::Value* begin = value(loop->begin());
    llvm::Value* end = value(loop->end());
    return b_.CreateSelect(b_.CreateICmpSGT(end, begin), b_.CreateSub(end, begin), u32(0));
  }

  // ---- values ----
  llvm::Value* value(const ir::Stmt* s) {
    auto it = values_.find(s);
    if (it == values_.end())
      throw InternalError(std::string("LLVM codegen: a '") + ir::kind_name(s->kind()) +
                          "' is used before it is defined (or defines no value) in " + what_);
    return it->second;
  }

  void emit_block(const ir::Block* block) {
    for (size_t i = 0; i < block->size(); ++i) {
      if (const std::vector<size_t> group = atomic_add_group(block, i); !group.empty()) {
        // The values between the group's adds first (they read no memory),
        // then the adds as one.
        for (size_t j = i; j < group.back(); ++j)
          if (std::find(group.begin(), group.end(), j) == group.end()) emit_stmt(block->at(j));
        emit_atomic_add_group(block, group);
        i = group.back();
      } else {
        emit_stmt(block->at(i));
      }
    }
  }

  // ---- groups of f32 atomic adds (TargetHooks::cas_words) ----
  // An f32 atomic add whose old value nothing uses, and its address as a
  // value plus a constant number of words.
  std::optional<std::pair<const ir::Stmt*, uint64_t>> groupable_add(const ir::Stmt* s) const {
    if (s->kind() != StmtKind::TreeAtomic || s->atomic_op() != ir::AtomicOp::add || s->type() != DataType::f32 ||
        used_.count(s) != 0 || reductions_.count(s) != 0)
      return std::nullopt;
    return constant_offset(s->address());
  }

  // The positions of f32 atomic adds from block->at(i) on to consecutive
  // words of one tree, in order, that one compare-and-swap can cover: 4 or
  // 2 (as cas_words allows), with only value statements (no loads, no
  // effects) between them; else none.
  std::vector<size_t> atomic_add_group(const ir::Block* block, size_t i) const {
    const unsigned words = target_.cas_words();
    if (words < 2) return {};
    const ir::Stmt* head = block->at(i);
    const auto first = groupable_add(head);
    if (!first) return {};
    std::vector<size_t> group{i};
    for (size_t j = i + 1; group.size() < words && j < block->size(); ++j) {
      const ir::Stmt* s = block->at(j);
      if (ir::is_value(s->kind())) continue;
      const auto next = groupable_add(s);
      if (!next || next->first != first->first || next->second != first->second + group.size() ||
          s->tree() != head->tree() || s->tree_param() != head->tree_param())
        break;
      group.push_back(j);
    }
    group.resize(group.size() >= 4 && words >= 4 ? 4 : group.size() >= 2 ? 2 : 0);
    return group;
  }

  // The n adds of `group` as one compare-and-swap loop of n words
  // (the f32 vector sum, lane by lane as each add would compute it) where
  // the first word is aligned to the group's size, else one by one. Lock
  // instructions are what a scatter pays for on x86: a vector's update
  // takes one instead of n. Nothing uses the old values.
  void emit_atomic_add_group(const ir::Block* block, const std::vector<size_t>& group) {
    const size_t n = group.size();
    auto add_k = [&](size_t k) { return block->at(group[k]); };
    const ir::Stmt* head = add_k(0);
    const auto bytes = static_cast<uint64_t>(n * 4);
    llvm::Value* p = word_pointer(head);
    llvm::Value* at = b_.CreatePtrToInt(p, b_.getInt64Ty());
    llvm::Value* aligned = b_.CreateICmpEQ(b_.CreateAnd(at, b_.getInt64(bytes - 1)), b_.getInt64(0));
    auto* wide = llvm::BasicBlock::Create(c_, "cas_group", fn_);
    auto* loop = llvm::BasicBlock::Create(c_, "cas_group_loop", fn_);
    auto* narrow = llvm::BasicBlock::Create(c_, "cas_group_unaligned", fn_);
    auto* done = llvm::BasicBlock::Create(c_, "cas_group_done", fn_);
    b_.CreateCondBr(aligned, wide, narrow);

    b_.SetInsertPoint(narrow);
    for (size_t k = 0; k < n; ++k) tree_atomic(add_k(k));  // (old values unused)
    b_.CreateBr(done);

    b_.SetInsertPoint(wide);
    llvm::Type* words_t = b_.getIntNTy(static_cast<unsigned>(n * 32));
    llvm::Type* lanes_t = llvm::FixedVectorType::get(b_.getFloatTy(), static_cast<unsigned>(n));
    llvm::Value* add = llvm::PoisonValue::get(lanes_t);
    for (size_t k = 0; k < n; ++k) add = b_.CreateInsertElement(add, value(add_k(k)->value()), k);
    // A first guess at the words, in 64-bit atomic loads (the loop checks it).
    llvm::Value* guess = nullptr;
    for (size_t half = 0; half < n / 2; ++half) {
      llvm::Value* hp = b_.CreateGEP(b_.getInt64Ty(), p, b_.getInt64(half));
      llvm::LoadInst* h = b_.CreateAlignedLoad(b_.getInt64Ty(), hp, llvm::Align(8));
      h->setAtomic(llvm::AtomicOrdering::Monotonic);
      llvm::Value* part = b_.CreateZExt(h, words_t);
      if (half > 0) part = b_.CreateShl(part, llvm::ConstantInt::get(words_t, 64 * half));
      guess = guess ? b_.CreateOr(guess, part) : part;
    }
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    llvm::PHINode* expected = b_.CreatePHI(words_t, 2);
    expected->addIncoming(guess, wide);
    llvm::Value* sum = b_.CreateBitCast(b_.CreateFAdd(b_.CreateBitCast(expected, lanes_t), add), words_t);
    auto* cas = b_.CreateAtomicCmpXchg(p, expected, sum, llvm::MaybeAlign(bytes), llvm::AtomicOrdering::Monotonic,
                                       llvm::AtomicOrdering::Monotonic);
    expected->addIncoming(b_.CreateExtractValue(cas, 0), loop);
    b_.CreateCondBr(b_.CreateExtractValue(cas, 1), done, loop);
    b_.SetInsertPoint(done);
  }

  void emit_stmt(const ir::Stmt* s) {
    switch (s->kind()) {
      case StmtKind::Const:
        values_[s] = constant(s->type(), s->bits());
        return;
      case StmtKind::Arg: {
        // Read in the entry block: an argument is the same in every
        // iteration, and its 64-bit slot read inside a loop made LLVM's
        // vectoriser size the loop's lanes for 64 bits (2 floats per SSE
        // register, 4 per AVX2 one).
        llvm::IRBuilderBase::InsertPointGuard guard(b_);
        if (llvm::Instruction* end = entry_->getTerminator()) b_.SetInsertPoint(end);
        else b_.SetInsertPoint(entry_);
        llvm::Value* bits = target_.arg_bits(b_, *fn_, bound_, buffer_index_.size(), s->index());
        values_[s] = from_u64(bits, s->type());
        return;
      }
      case StmtKind::Unary:
        values_[s] = unary(s->unary_op(), s->operand()->type(), value(s->operand()), s->type());
        return;
      case StmtKind::Cast:
        values_[s] = cast(value(s->operand()), s->operand()->type(), s->type());
        return;
      case StmtKind::Bitcast:  // i32 and u32 (i64 and u64) are one LLVM type
        values_[s] = b_.CreateBitCast(value(s->operand()), type_of(s->type()));
        return;
      case StmtKind::Binary:
        GROVE_ASSERT(s->lhs()->type() == s->rhs()->type(), "LLVM codegen: a binary op on operands of two types");
        values_[s] = binary(s->binary_op(), s->lhs()->type(), value(s->lhs()), value(s->rhs()), s->type());
        return;
      case StmtKind::Select:
        values_[s] = b_.CreateSelect(value(s->cond()), value(s->true_value()), value(s->false_value()));
        return;
      case StmtKind::Alloca: {
        // In the entry block; zeroed where the alloca runs (each iteration).
        llvm::IRBuilder<> at_entry(entry_, entry_->begin());
        llvm::AllocaInst* var = at_entry.CreateAlloca(type_of(s->type()));
        b_.CreateStore(zero(s->type()), var);
        variables_[s] = var;
        return;
      }
      case StmtKind::LocalLoad:
        values_[s] = b_.CreateLoad(type_of(s->ptr()->type()), variables_.at(s->ptr()));
        return;
      case StmtKind::LocalStore:
        b_.CreateStore(value(s->value()), variables_.at(s->ptr()));
        return;
      case StmtKind::RangeFor:
        emit_range_for(s);
        return;
      case StmtKind::LoopIndex: {
        auto it = loop_index_.find(s->loop());
        if (it == loop_index_.end() || s->index() != 0)
          throw InternalError("LLVM codegen: loop_index outside its range_for (or of an axis other than 0) in " + what_);
        values_[s] = it->second;
        return;
      }
      case StmtKind::If:
        emit_if(s);
        return;
      case StmtKind::While:
        emit_while(s);
        return;
      case StmtKind::Break:
      case StmtKind::Continue: {
        if (loops_.empty()) throw InternalError("LLVM codegen: break or continue outside a loop in " + what_);
        b_.CreateBr(s->kind() == StmtKind::Break ? loops_.back().exit : loops_.back().next);
        // What follows in this block is dead.
        b_.SetInsertPoint(llvm::BasicBlock::Create(c_, "dead", fn_));
        return;
      }
      case StmtKind::TreeLoad:
        values_[s] = tree_load(s);
        return;
      case StmtKind::TreeStore:
        tree_store(s);
        return;
      case StmtKind::TreeAtomic:
        values_[s] = tree_atomic(s);
        return;
      case StmtKind::TreeCas: {
        llvm::Type* t = type_of(s->type());
        if (!t->isIntegerTy(32) && !t->isIntegerTy(64))
          throw InternalError("LLVM codegen: a compare-and-swap of a " + std::string(type_name(s->type())) +
                              " in " + what_);
        auto* cas = mark(b_.CreateAtomicCmpXchg(word_pointer(s), value(s->expected()), value(s->desired()),
                                                llvm::MaybeAlign(t->getPrimitiveSizeInBits() / 8),
                                                llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic),
                         s);
        values_[s] = b_.CreateExtractValue(cas, 0);
        return;
      }
      case StmtKind::MessageBase:
        values_[s] = b_.CreateLoad(b_.getInt32Ty(), context_word(rt::context::kMessageBase));
        return;
      // Each invocation its own subgroup (a CPU thread runs one at a time;
      // on CUDA warp-wide forms are not made yet): the operand, and true.
      case StmtKind::SubgroupFirst:
        values_[s] = value(s->operand());
        return;
      case StmtKind::SubgroupElect:
        values_[s] = b_.getTrue();
        return;
      case StmtKind::Stop:
        return_early();
        b_.SetInsertPoint(llvm::BasicBlock::Create(c_, "dead", fn_));  // what follows in this block
        return;
      case StmtKind::Print:
      case StmtKind::Assert:
      case StmtKind::FieldLoad:
      case StmtKind::FieldStore:
      case StmtKind::FieldAtomic:
      case StmtKind::StructFor:
      case StmtKind::SNodeOp:
      case StmtKind::Task:
        throw InternalError(std::string("LLVM codegen: a '") + ir::kind_name(s->kind()) +
                            "' in a lowered kernel (" + what_ + ")");
    }
  }

  // ---- control flow ----
  struct LoopTarget {
    llvm::BasicBlock* exit;
    llvm::BasicBlock* next;  // where `continue` goes
  };

  void branch_if_open(llvm::BasicBlock* to) {
    if (!b_.GetInsertBlock()->getTerminator()) b_.CreateBr(to);
  }

  void emit_if(const ir::Stmt* s) {
    auto* then_bb = llvm::BasicBlock::Create(c_, "then", fn_);
    auto* else_bb = llvm::BasicBlock::Create(c_, "else", fn_);
    auto* merge = llvm::BasicBlock::Create(c_, "endif", fn_);
    b_.CreateCondBr(value(s->cond()), then_bb, else_bb,
                    s->unlikely() ? llvm::MDBuilder(c_).createUnlikelyBranchWeights() : nullptr);
    b_.SetInsertPoint(then_bb);
    if (!s->unlikely() || !emit_out_of_line(s->then_block())) emit_block(s->then_block());
    branch_if_open(merge);
    b_.SetInsertPoint(else_bb);
    emit_block(s->else_block());
    branch_if_open(merge);
    b_.SetInsertPoint(merge);
  }

  void emit_while(const ir::Stmt* s) {
    auto* body = llvm::BasicBlock::Create(c_, "while", fn_);
    auto* exit = llvm::BasicBlock::Create(c_, "endwhile", fn_);
    b_.CreateBr(body);
    b_.SetInsertPoint(body);
    loops_.push_back({exit, body});
    emit_block(s->body());
    loops_.pop_back();
    branch_if_open(body);
    b_.SetInsertPoint(exit);
  }

  // A serial range_for over [begin, end), or the task's parallel loop: on
  // the CPU iterations [lo, hi) of it, on a GPU every iteration k with
  // k = this thread's index modulo the grid's threads (a grid-stride loop,
  // counted in 64 bits so that k + stride cannot wrap). Iteration k has
  // index begin + k.
  // A loop of the grid nest (find_grid) strides along an axis of the
  // launch of its own, as the parallel loop.
  void emit_range_for(const ir::Stmt* s) {
    const bool parallel = s == parallel_loop_;
    const auto in_grid = std::find(grid_nest_.begin(), grid_nest_.end(), s);
    const bool spread = parallel || in_grid != grid_nest_.end();
    llvm::Value* begin = value(s->begin());
    llvm::Value* first = begin;
    llvm::Value* last = value(s->end());
    llvm::Value* stride = u32(1);
    bool strided = false;
    if (spread) {
      const auto axis = in_grid == grid_nest_.end() ? 0u : static_cast<unsigned>(grid_nest_.end() - in_grid - 1);
      const ParallelBounds bounds = target_.parallel_bounds(b_, *fn_, [&] { return count_of(s); }, axis);
      first = bounds.first;
      last = bounds.last;
      stride = bounds.stride;
      strided = bounds.strided;
    }
    // Whether this thread of a grid-stride loop takes an iteration: one that
    // takes none adds nothing to the cells its loop sums into (a launch
    // whose count is found on the device may have a million such threads).
    llvm::Value* iterated = nullptr;
    if (parallel) {
      find_accumulators(s);
      if (strided && !accumulators_.empty()) iterated = b_.CreateICmpSLT(first, last);
      // Threads summing several iterations each (a capped launch): not
      // along a grid, whose launch covers its counts.
      if (!accumulators_.empty() && grid_nest_.empty()) iterations_per_sum_ = target_.iterations_per_sum();
    }
    llvm::BasicBlock* before = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(c_, "for", fn_);
    auto* body = llvm::BasicBlock::Create(c_, "for.body", fn_);
    auto* latch = llvm::BasicBlock::Create(c_, "for.next", fn_);
    auto* exit = llvm::BasicBlock::Create(c_, "endfor", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* i = b_.CreatePHI(first->getType(), 2);
    i->addIncoming(first, before);
    b_.CreateCondBr(b_.CreateICmpSLT(i, last), body, exit);
    b_.SetInsertPoint(body);
    if (strided) {
      loop_index_[s] = b_.CreateAdd(begin, b_.CreateTrunc(i, b_.getInt32Ty()));
    } else {
      loop_index_[s] = spread ? b_.CreateAdd(begin, i) : static_cast<llvm::Value*>(i);
    }
    loops_.push_back({exit, latch});
    emit_block(s->body());
    loops_.pop_back();
    branch_if_open(latch);
    b_.SetInsertPoint(latch);
    i->addIncoming(b_.CreateAdd(i, stride, "", /*HasNUW=*/false, /*HasNSW=*/true), latch);
    llvm::BranchInst* back = b_.CreateBr(header);
    // A loop that sums into accumulators is vectorised with one vector
    // accumulator, not LLVM's default of four: such sums stream their data
    // from memory, where more accumulators buy nothing, and on two threads
    // their extra loads in flight cost bandwidth (GCC's loop has the same
    // shape; the cpu_sum rows of bench/ measure it).
    if (parallel && !accumulators_.empty()) back->setMetadata(llvm::LLVMContext::MD_loop, interleave_once());
    b_.SetInsertPoint(exit);
    if (parallel) flush_accumulators(iterated);
  }

  // The loops of a parallel task that its launch spreads over a 2-D or 3-D
  // grid (ir::grid_nest), where the target does (TargetHooks::
  // grid_threads), and their block sizes (rt::grid_group_sizes).
  void find_grid(TaskCode& t) {
    grid_nest_.clear();
    const uint32_t threads = target_.grid_threads();
    if (parallel_loop_ == nullptr || threads == 0) return;
    ir::GridLayout layout = ir::grid_layout(parallel_loop_, threads);
    if (layout.nest.size() == 1) return;
    t.local_size = layout.sizes[0];
    t.grid = std::move(layout.axes);
    grid_nest_ = std::move(layout.nest);
  }

  // ---- unlikely blocks, out of line ----
  // An unlikely if's then-block of kOutOfLine statements or more (the
  // sparse runtime's allocation, about 60) is a call of a function that
  // runs it, made once per distinct block: a kernel activating at eight
  // neighbours (sparse_life's count) or 27 grid nodes (MPM's scatter)
  // carried that many copies of the allocator, which took most of LLVM's
  // time (docs/ir.md, `if unlikely`).
  static constexpr size_t kOutOfLine = 16;

  // What a block out of line takes: the values it uses that are defined
  // before it (constants are made again inside), in order of first use,
  // and the trees it accesses. A variable of the task function it uses
  // comes in as its value, and those it writes (`written`, in order of
  // first use) go back as the function's result: passing their addresses
  // would keep them in memory on the hot path too.
  struct OutOfLine {
    std::vector<const ir::Stmt*> free;
    std::vector<const ir::Stmt*> written;
    std::set<TreeKey> trees;
  };

  // Whether `block` can run as a function of its own: nothing in it leaves
  // it (a break or continue of a loop outside it, a stop), reads what only
  // the task's function has (arguments, the context buffer, the message
  // base) or feeds an accumulator. Counts its statements into `count`.
  bool can_run_out_of_line(const ir::Block* block, int loops, size_t& count) const {
    for (size_t i = 0; i < block->size(); ++i) {
      const ir::Stmt* s = block->at(i);
      ++count;
      if (reductions_.count(s) != 0) return false;
      if (ir::is_tree_access(s->kind()) && !ir::accesses_tree_buffer(s)) return false;  // the context
      switch (s->kind()) {
        case StmtKind::Arg:
        case StmtKind::Stop:
        case StmtKind::MessageBase:
          return false;
        case StmtKind::Break:
        case StmtKind::Continue:
          if (loops == 0) return false;
          break;
        case StmtKind::RangeFor:
        case StmtKind::While:
          if (s == parallel_loop_ || !can_run_out_of_line(s->body(), loops + 1, count)) return false;
          break;
        case StmtKind::If:
          if (!can_run_out_of_line(s->then_block(), loops, count) || !can_run_out_of_line(s->else_block(), loops, count))
            return false;
          break;
        default:
          break;
      }
    }
    return true;
  }

  void collect_out_of_line(const ir::Block* block, std::unordered_set<const ir::Stmt*>& defined, OutOfLine& out) const {
    for (size_t i = 0; i < block->size(); ++i) {
      const ir::Stmt* s = block->at(i);
      for (const ir::Stmt* op : s->operands())
        if (defined.count(op) == 0 && std::find(out.free.begin(), out.free.end(), op) == out.free.end())
          out.free.push_back(op);
      if (ir::is_tree_access(s->kind())) out.trees.insert({s->tree(), s->tree_param()});
      if (s->kind() == StmtKind::LocalStore && defined.count(s->ptr()) == 0 &&
          std::find(out.written.begin(), out.written.end(), s->ptr()) == out.written.end())
        out.written.push_back(s->ptr());
      defined.insert(s);
      for (const auto& inner : s->blocks()) collect_out_of_line(inner.get(), defined, out);
    }
  }

  // The block's shape: each statement's kind, type and attributes, and
  // its operands as constants (by value), statements of the block (by
  // position) or inputs (by their place in in.free, and their types): two
  // blocks with equal keys compute the same from corresponding inputs.
  std::string out_of_line_key(const ir::Block* block, const OutOfLine& in) const {
    std::unordered_map<const ir::Stmt*, size_t> local, input;
    for (const ir::Stmt* f : in.free)
      if (!f->is_const()) input.emplace(f, input.size());
    std::string key;
    const std::function<void(const ir::Block*)> add = [&](const ir::Block* b) {
      key += "{\n";
      for (size_t i = 0; i < b->size(); ++i) {
        const ir::Stmt* s = b->at(i);
        if (s->is_const()) continue;  // written where it is used
        key += ir::print_shape(kernel_, s);
        for (const ir::Stmt* op : s->operands()) {
          if (op->is_const()) {
            key += " c" + std::string(type_name(op->type())) + ":" + std::to_string(op->bits());
          } else if (auto l = local.find(op); l != local.end()) {
            key += " l" + std::to_string(l->second);
          } else {
            key += " f" + std::to_string(input.at(op));
          }
        }
        key += '\n';
        local.emplace(s, local.size());
        for (const auto& inner : s->blocks()) add(inner.get());
      }
      key += "}\n";
    };
    add(block);
    for (const ir::Stmt* f : in.free)
      if (!f->is_const())
        key += (f->kind() == StmtKind::Alloca ? " var " : " value ") + std::string(type_name(f->type()));
    return key;
  }

  // `block` as a call of its function (made on first use); false (nothing
  // emitted) when it stays inline.
  bool emit_out_of_line(const ir::Block* block) {
    size_t count = 0;
    if (!can_run_out_of_line(block, 0, count) || count < kOutOfLine) return false;
    OutOfLine in;
    std::unordered_set<const ir::Stmt*> defined;
    collect_out_of_line(block, defined, in);
    for (const ir::Stmt* f : in.free)  // a loop statement (the index of a loop outside) stays inline
      if (!f->is_const() && (f->kind() == StmtKind::Alloca ? variables_ : values_).count(f) == 0) return false;
    std::vector<llvm::Value*> args;  // inputs (variables by value), then the trees' base pointers
    for (const ir::Stmt* f : in.free) {
      if (f->is_const()) continue;
      args.push_back(f->kind() == StmtKind::Alloca ? b_.CreateLoad(type_of(f->type()), variables_.at(f)) : values_.at(f));
    }
    for (const TreeKey& k : in.trees) args.push_back(base_of(k));
    std::vector<llvm::Type*> params;
    for (llvm::Value* a : args) params.push_back(a->getType());
    llvm::Function*& fn = out_of_line_[out_of_line_key(block, in)];
    if (fn == nullptr) fn = make_out_of_line(block, in, params);
    llvm::Value* result = b_.CreateCall(fn, args);
    for (size_t w = 0; w < in.written.size(); ++w)
      b_.CreateStore(in.written.size() == 1 ? result : b_.CreateExtractValue(result, static_cast<unsigned>(w)),
                     variables_.at(in.written[w]));
    return true;
  }

  llvm::Function* make_out_of_line(const ir::Block* block, const OutOfLine& in, const std::vector<llvm::Type*>& params) {
    std::vector<llvm::Type*> results;
    for (const ir::Stmt* v : in.written) results.push_back(type_of(v->type()));
    llvm::Type* result = results.empty()       ? b_.getVoidTy()
                         : results.size() == 1 ? results[0]
                                               : static_cast<llvm::Type*>(llvm::StructType::get(c_, results));
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(result, params, false),
                                      llvm::Function::InternalLinkage,
                                      fn_->getName() + ".unlikely" + std::to_string(out_of_line_.size()), m_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr(llvm::Attribute::NoInline);
    fn->addFnAttr(llvm::Attribute::Cold);
    // The task function's state, put back when the block's function is made.
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    struct Saved {
      llvm::Function* fn;
      llvm::BasicBlock* entry;
      Bindings bound;
      const ir::Stmt* parallel_loop;
      std::unordered_map<const ir::Stmt*, llvm::Value*> values, variables, loop_index;
      std::vector<LoopTarget> loops;
      std::vector<Accumulator> accumulators;
      std::unordered_map<const ir::Stmt*, size_t> reductions;
      std::unordered_map<const ir::Stmt*, std::pair<llvm::Value*, llvm::BasicBlock*>> wide;
    } saved{fn_,
            entry_,
            std::move(bound_),
            parallel_loop_,
            std::move(values_),
            std::move(variables_),
            std::move(loop_index_),
            std::move(loops_),
            std::move(accumulators_),
            std::move(reductions_),
            std::move(wide_)};
    enter_function(fn);
    parallel_loop_ = nullptr;
    unsigned a = 0;
    for (const ir::Stmt* f : in.free) {
      if (f->is_const()) {
        values_[f] = constant(f->type(), f->bits());
      } else if (f->kind() == StmtKind::Alloca) {  // a variable of its own, from the caller's value
        llvm::AllocaInst* var = b_.CreateAlloca(type_of(f->type()));
        b_.CreateStore(fn->getArg(a++), var);
        variables_[f] = var;
      } else {
        values_[f] = fn->getArg(a++);
      }
    }
    for (const TreeKey& k : in.trees) bound_.trees[k] = fn->getArg(a++);
    emit_block(block);
    if (!b_.GetInsertBlock()->getTerminator()) {
      if (in.written.empty()) {
        b_.CreateRetVoid();
      } else {
        llvm::Value* out = in.written.size() == 1 ? nullptr : llvm::PoisonValue::get(result);
        for (size_t w = 0; w < in.written.size(); ++w) {
          llvm::Value* v = b_.CreateLoad(results[w], variables_.at(in.written[w]));
          out = in.written.size() == 1 ? v : b_.CreateInsertValue(out, v, static_cast<unsigned>(w));
        }
        b_.CreateRet(out);
      }
    }
    end_function();  // (the blocks left open are dead ones, after a break)
    fn_ = saved.fn;
    entry_ = saved.entry;
    bound_ = std::move(saved.bound);
    parallel_loop_ = saved.parallel_loop;
    values_ = std::move(saved.values);
    variables_ = std::move(saved.variables);
    loop_index_ = std::move(saved.loop_index);
    loops_ = std::move(saved.loops);
    accumulators_ = std::move(saved.accumulators);
    reductions_ = std::move(saved.reductions);
    wide_ = std::move(saved.wide);
    return fn;
  }

  // Loop metadata: do not interleave (one copy of each vector per iteration).
  llvm::MDNode* interleave_once() {
    llvm::Metadata* count[] = {llvm::MDString::get(c_, "llvm.loop.interleave.count"),
                               llvm::ConstantAsMetadata::get(b_.getInt32(1))};
    llvm::MDNode* loop = llvm::MDNode::getDistinct(c_, {nullptr, llvm::MDNode::get(c_, count)});
    loop->replaceOperandWith(0, loop);  // a loop ID names itself
    return loop;
  }

  // The sums mark_reductions found that nothing else in the loop touches
  // (Reduction::accumulate): one local per cell and type, summed over the
  // chunk's iterations and added with one atomic after them.
  struct Accumulator {
    TreeKey tree;
    uint32_t address;
    DataType type;
    llvm::AllocaInst* var;
  };
  void find_accumulators(const ir::Stmt* loop) {
    ir::AccumulatedCells found = ir::accumulated_cells(loop);
    accumulators_.clear();
    llvm::IRBuilder<> at_entry(entry_, entry_->begin());
    for (const ir::AccumulatedCells::Cell& c : found.cells) {
      accumulators_.push_back({{c.tree, c.tree_param}, c.address, c.type, at_entry.CreateAlloca(type_of(c.type))});
      b_.CreateStore(zero(c.type), accumulators_.back().var);
    }
    reductions_ = std::move(found.cell_of);
  }
  // `iterated`: whether this thread took an iteration (nullptr: it did).
  void flush_accumulators(llvm::Value* iterated) {
    for (const Accumulator& acc : accumulators_) {
      const TargetHooks::ThreadsSum total =
          target_.sum_across_threads(b_, *fn_, b_.CreateLoad(type_of(acc.type), acc.var), iterated);
      llvm::BasicBlock* merge = nullptr;
      if (total.adds != nullptr) {
        auto* adds = llvm::BasicBlock::Create(c_, "sum.add", fn_);
        merge = llvm::BasicBlock::Create(c_, "sum.added", fn_);
        b_.CreateCondBr(total.adds, adds, merge);
        b_.SetInsertPoint(adds);
      }
      llvm::Value* p = b_.CreateGEP(b_.getInt32Ty(), base_of(acc.tree), b_.getInt64(acc.address));
      const bool f = is_float(acc.type);
      b_.CreateAtomicRMW(f ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add, p, total.sum,
                         llvm::MaybeAlign(type_of(acc.type)->getPrimitiveSizeInBits() / 8),
                         llvm::AtomicOrdering::Monotonic);
      if (merge != nullptr) {
        b_.CreateBr(merge);
        b_.SetInsertPoint(merge);
      }
    }
    accumulators_.clear();
  }

  // ---- arithmetic ----
  llvm::Value* from_u64(llvm::Value* bits, DataType t) {
    switch (t) {
      case DataType::u1: return b_.CreateICmpNE(bits, b_.getInt64(0));
      case DataType::f32: case DataType::f16: return b_.CreateBitCast(b_.CreateTrunc(bits, b_.getInt32Ty()), b_.getFloatTy());
      case DataType::f64: return b_.CreateBitCast(bits, b_.getDoubleTy());
      default: return b_.CreateTrunc(bits, type_of(t));  // no-op for 64-bit
    }
  }

  llvm::Value* as_bool(llvm::Value* v, DataType t) {
    if (t == DataType::u1) return v;
    if (is_float(t)) return b_.CreateFCmpUNE(v, zero(t));
    return b_.CreateICmpNE(v, zero(t));
  }

  // A u1 result in the statement's type (u1 unless the IR says otherwise).
  llvm::Value* from_bool(llvm::Value* v, DataType result) {
    if (result == DataType::u1) return v;
    return cast(v, DataType::u1, result);
  }

  // A numeric conversion of a legal kernel: a float to integer cast sees a
  // value that fits (legalize saturates around it), and nothing converts to
  // or from u1 but the runtime's own loads and stores of it.
  llvm::Value* cast(llvm::Value* v, DataType from, DataType to) {
    if (compute_type(from) == compute_type(to)) return v;
    llvm::Type* target = type_of(to);
    if (to == DataType::u1) return as_bool(v, from);
    if (from == DataType::u1) return b_.CreateZExt(v, target);
    if (is_float(from) && is_float(to)) return b_.CreateFPCast(v, target);
    if (is_float(from)) return is_signed(to) ? b_.CreateFPToSI(v, target) : b_.CreateFPToUI(v, target);
    if (is_float(to)) return is_signed(from) ? b_.CreateSIToFP(v, target) : b_.CreateUIToFP(v, target);
    return b_.CreateIntCast(v, target, is_signed(from));
  }

  // A C math function: libm's on the CPU, libdevice's (__nv_sinf, ...) on
  // NVPTX, linked into the module before it is optimised (emit.h).
  llvm::Value* libm(const char* f32_name, const char* f64_name, DataType t, std::vector<llvm::Value*> args) {
    llvm::Type* ty = type_of(t);
    std::vector<llvm::Type*> params(args.size(), ty);
    std::string name = t == DataType::f64 ? f64_name : f32_name;
    name = target_.math_function(name);
    llvm::FunctionCallee f = m_.getOrInsertFunction(name, llvm::FunctionType::get(ty, params, false));
    return b_.CreateCall(f, args);
  }

  llvm::Value* intrinsic(llvm::Intrinsic::ID id, llvm::Value* x) { return b_.CreateUnaryIntrinsic(id, x); }

  llvm::Value* unary(UnaryOp op, DataType t, llvm::Value* x, DataType result) {
    if (op == UnaryOp::logic_not) return from_bool(b_.CreateNot(as_bool(x, t)), result);
    if (is_float(t)) {
      switch (op) {
        case UnaryOp::neg: return b_.CreateFNeg(x);
        case UnaryOp::sqrt: return intrinsic(llvm::Intrinsic::sqrt, x);
        case UnaryOp::sin: return libm("sinf", "sin", t, {x});
        case UnaryOp::cos: return libm("cosf", "cos", t, {x});
        case UnaryOp::tan: return libm("tanf", "tan", t, {x});
        case UnaryOp::asin: return libm("asinf", "asin", t, {x});
        case UnaryOp::acos: return libm("acosf", "acos", t, {x});
        case UnaryOp::atan: return libm("atanf", "atan", t, {x});
        case UnaryOp::exp: return libm("expf", "exp", t, {x});
        case UnaryOp::log: return libm("logf", "log", t, {x});
        case UnaryOp::tanh: return libm("tanhf", "tanh", t, {x});
        case UnaryOp::abs: return intrinsic(llvm::Intrinsic::fabs, x);
        case UnaryOp::floor: return intrinsic(llvm::Intrinsic::floor, x);
        case UnaryOp::ceil: return intrinsic(llvm::Intrinsic::ceil, x);
        case UnaryOp::round: return intrinsic(llvm::Intrinsic::round, x);  // half away from zero
        case UnaryOp::rsqrt: case UnaryOp::logic_not: case UnaryOp::bit_not: case UnaryOp::popcnt:
        case UnaryOp::clz: case UnaryOp::ctz: break;
      }
      throw InternalError(std::string("LLVM codegen: unary ") + ir::op_name(op) + " on a float in " + what_);
    }
    switch (op) {
      case UnaryOp::neg: return b_.CreateNeg(x);
      case UnaryOp::bit_not: return b_.CreateNot(x);
      case UnaryOp::popcnt: return intrinsic(llvm::Intrinsic::ctpop, x);
      // Of 0: the type's width (not poison).
      case UnaryOp::clz: return b_.CreateIntrinsic(llvm::Intrinsic::ctlz, {x->getType()}, {x, b_.getFalse()});
      case UnaryOp::ctz: return b_.CreateIntrinsic(llvm::Intrinsic::cttz, {x->getType()}, {x, b_.getFalse()});
      default: break;
    }
    throw InternalError(std::string("LLVM codegen: unary ") + ir::op_name(op) + " on an integer in " + what_);
  }

  llvm::Value* compare(BinaryOp op, DataType t, llvm::Value* a, llvm::Value* b) {
    if (is_float(t)) {
      switch (op) {
        case BinaryOp::cmp_lt: return b_.CreateFCmpOLT(a, b);
        case BinaryOp::cmp_le: return b_.CreateFCmpOLE(a, b);
        case BinaryOp::cmp_gt: return b_.CreateFCmpOGT(a, b);
        case BinaryOp::cmp_ge: return b_.CreateFCmpOGE(a, b);
        case BinaryOp::cmp_eq: return b_.CreateFCmpOEQ(a, b);
        default: return b_.CreateFCmpUNE(a, b);  // cmp_ne: true for NaN, as in C++
      }
    }
    const bool s = is_signed(t);
    switch (op) {
      case BinaryOp::cmp_lt: return s ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
      case BinaryOp::cmp_le: return s ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
      case BinaryOp::cmp_gt: return s ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
      case BinaryOp::cmp_ge: return s ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
      case BinaryOp::cmp_eq: return b_.CreateICmpEQ(a, b);
      default: return b_.CreateICmpNE(a, b);
    }
  }

  llvm::Value* binary(BinaryOp op, DataType t, llvm::Value* a, llvm::Value* b, DataType result) {
    switch (op) {
      case BinaryOp::cmp_lt: case BinaryOp::cmp_le: case BinaryOp::cmp_gt:
      case BinaryOp::cmp_ge: case BinaryOp::cmp_eq: case BinaryOp::cmp_ne:
        return from_bool(compare(op, t, a, b), result);
      case BinaryOp::logic_and: return from_bool(b_.CreateAnd(as_bool(a, t), as_bool(b, t)), result);
      case BinaryOp::logic_or: return from_bool(b_.CreateOr(as_bool(a, t), as_bool(b, t)), result);
      default: break;
    }
    if (is_float(t)) {
      switch (op) {
        case BinaryOp::add: return b_.CreateFAdd(a, b);
        case BinaryOp::sub: return b_.CreateFSub(a, b);
        case BinaryOp::mul: return b_.CreateFMul(a, b);
        case BinaryOp::div: return b_.CreateFDiv(a, b);
        case BinaryOp::mod:  // C's fmod: frem where the target computes it exactly
          return target_.exact_frem() ? b_.CreateFRem(a, b) : libm("fmodf", "fmod", t, {a, b});
        case BinaryOp::pow: return libm("powf", "pow", t, {a, b});
        case BinaryOp::atan2: return libm("atan2f", "atan2", t, {a, b});
        default: break;
      }
      throw InternalError(std::string("LLVM codegen: binary ") + ir::op_name(op) + " on floats in " + what_);
    }
    // Integers (not u1: legalize made its arithmetic logic), whose divisors
    // and shift counts legalize guarded.
    switch (op) {
      case BinaryOp::add: return b_.CreateAdd(a, b);
      case BinaryOp::sub: return b_.CreateSub(a, b);
      case BinaryOp::mul: return b_.CreateMul(a, b);
      case BinaryOp::bit_and: return b_.CreateAnd(a, b);
      case BinaryOp::bit_or: return b_.CreateOr(a, b);
      case BinaryOp::bit_xor: return b_.CreateXor(a, b);
      case BinaryOp::shl: return b_.CreateShl(a, b);
      case BinaryOp::shr: return is_signed(t) ? b_.CreateAShr(a, b) : b_.CreateLShr(a, b);
      case BinaryOp::div: return is_signed(t) ? b_.CreateSDiv(a, b) : b_.CreateUDiv(a, b);
      case BinaryOp::mod: return is_signed(t) ? b_.CreateSRem(a, b) : b_.CreateURem(a, b);
      default: break;
    }
    throw InternalError(std::string("LLVM codegen: binary ") + ir::op_name(op) + " on " + std::string(type_name(t)) +
                        " in " + what_ + " (legalize writes it in other operations)");
  }

  // ---- the context buffer (legalize writes its print and assert records; an
  // assertion failed in an earlier task, the message base) ----
  llvm::Value* context_word(uint32_t word) { return context_word(u32(word)); }
  llvm::Value* context_word(llvm::Value* word) {
    return b_.CreateGEP(b_.getInt32Ty(), context_base(), b_.CreateZExt(word, b_.getInt64Ty()));
  }
  llvm::Value* context_base() {  // buffers[0], loaded once in the entry block
    if (!bound_.context) {
      llvm::IRBuilder<> at_entry(entry_, entry_->getFirstInsertionPt());
      bound_.context = at_entry.CreateLoad(b_.getPtrTy(), bound_.buffers);
    }
    return bound_.context;
  }
  void return_if_an_assertion_failed() {
    llvm::LoadInst* flag = b_.CreateAlignedLoad(b_.getInt32Ty(), context_word(rt::context::kAssertFlag), llvm::Align(4));
    flag->setAtomic(llvm::AtomicOrdering::Monotonic);
    auto* stop = llvm::BasicBlock::Create(c_, "failed", fn_);
    auto* go = llvm::BasicBlock::Create(c_, "run", fn_);
    b_.CreateCondBr(b_.CreateICmpNE(flag, u32(0)), stop, go);
    b_.SetInsertPoint(stop);
    return_early();
    b_.SetInsertPoint(go);
  }

  // Leaves the function: a task function returns, a count function counts 0.
  void return_early() {
    if (fn_->getReturnType()->isVoidTy()) {
      b_.CreateRetVoid();
    } else {
      b_.CreateRet(u32(0));
    }
  }

  // ---- tree memory ----
  llvm::Value* base_of(const ir::Stmt* s) { return base_of(TreeKey{s->tree(), s->tree_param()}); }
  llvm::Value* base_of(const TreeKey& key) {
    if (key.first == ir::kContextTree) return context_base();
    auto it = bound_.trees.find(key);
    if (it != bound_.trees.end()) return it->second;
    // Loaded once, in the entry block.
    llvm::IRBuilder<> at_entry(entry_, entry_->getFirstInsertionPt());
    llvm::Value* slot = at_entry.CreateGEP(b_.getPtrTy(), bound_.buffers, u32(buffer_index_.at(key)));
    llvm::Value* base = at_entry.CreateLoad(b_.getPtrTy(), slot);
    bound_.trees[key] = base;
    return base;
  }

  // The word a tree access names, its address computed in 64 bits: the
  // adds and the multiplications by constants of Grove's address arithmetic
  // (a node's offset, a cell's number times its words, a field's place in
  // the cell) never wrap 32 bits for a valid address, and widened they let
  // LLVM's loop vectoriser see each access as the loop's index times a
  // stride (it gave up on mpm3d's particle loops, whose 27 words each
  // needed a runtime check that zext(9 i) does not wrap: "too many SCEV
  // assumptions"). Anything else (a mod, a load, an argument) is a u32
  // value widened where it stands, as are adds of constants of 2^31 or more
  // (a u32 subtraction written as an add).
  llvm::Value* word_pointer(const ir::Stmt* s, uint32_t plus = 0) {
    llvm::Value* address = wide_address(s->address(), 0);
    if (plus) address = b_.CreateAdd(address, b_.getInt64(plus));
    return b_.CreateGEP(b_.getInt32Ty(), base_of(s), address);
  }
  llvm::Value* wide_address(const ir::Stmt* a, int depth) {
    // Made once per basic block (where it is made, it dominates what follows).
    auto [it, fresh] = wide_.try_emplace(a, nullptr, nullptr);
    if (!fresh && it->second.second == b_.GetInsertBlock()) return it->second.first;
    llvm::Value* w = widen(a, depth);
    it = wide_.find(a);  // (widen may have added entries)
    it->second = {w, b_.GetInsertBlock()};
    return w;
  }
  llvm::Value* widen(const ir::Stmt* a, int depth) {
    static constexpr uint64_t kLarge = uint64_t{1} << 31;
    auto small_const = [](const ir::Stmt* x) { return x->is_const() && (x->bits() & 0xffffffffu) < kLarge; };
    if (a->is_const()) return b_.getInt64(a->bits() & 0xffffffffu);
    // (Into operands this function has: a block out of line takes a sum
    // made before it as one value.)
    if (depth < 32 && a->kind() == StmtKind::Binary && a->type() == DataType::u32 && values_.count(a->lhs()) != 0 &&
        values_.count(a->rhs()) != 0) {
      const ir::Stmt* l = a->lhs();
      const ir::Stmt* r = a->rhs();
      const bool wrapping = (l->is_const() && !small_const(l)) || (r->is_const() && !small_const(r));
      if (a->binary_op() == BinaryOp::add && !wrapping)
        return b_.CreateAdd(wide_address(l, depth + 1), wide_address(r, depth + 1));
      if (a->binary_op() == BinaryOp::mul && (small_const(l) || small_const(r)))
        return b_.CreateMul(wide_address(l, depth + 1), wide_address(r, depth + 1));
    }
    return b_.CreateZExt(value(a), b_.getInt64Ty());
  }
  // A u32 address as a value plus constant words (nested adds of constants).
  static std::pair<const ir::Stmt*, uint64_t> constant_offset(const ir::Stmt* a) {
    uint64_t words = 0;
    while (a->kind() == StmtKind::Binary && a->binary_op() == BinaryOp::add) {
      if (a->rhs()->kind() == StmtKind::Const) {
        words += static_cast<uint32_t>(a->rhs()->bits());
        a = a->lhs();
      } else if (a->lhs()->kind() == StmtKind::Const) {
        words += static_cast<uint32_t>(a->lhs()->bits());
        a = a->rhs();
      } else {
        break;
      }
    }
    return {a, words};
  }

  // ---- what tree words hold (Stmt::field): alias scopes ----
  // One scope per field whose elements the kernel accesses, and one for
  // the sparse runtime's words: an access of one is in its scope and
  // aliases none of the others' (their words are disjoint in every tree),
  // which lets LLVM reorder and vectorise a loop that reads one field and
  // writes another through the same buffer. An access of unknown words
  // (field() -1: stores that clear cells, the scratch tree) has no scope
  // and may alias anything.
  void make_scopes() {
    std::set<int> kinds;
    ir::walk(const_cast<ir::Block*>(kernel_.body()), [&](const ir::Stmt* s) {
      if (ir::is_tree_access(s->kind()) && s->field() != -1) kinds.insert(s->field());
    });
    if (kinds.size() < 2) return;
    llvm::MDBuilder md(c_);
    llvm::MDNode* domain = md.createAliasScopeDomain(kernel_.name() + ".words");
    std::map<int, llvm::MDNode*> scope;
    for (int k : kinds)
      scope[k] = md.createAliasScope(k == ir::kRuntimeWords ? "runtime" : "field " + std::to_string(k), domain);
    for (int k : kinds) {
      std::vector<llvm::Metadata*> others;
      for (int o : kinds)
        if (o != k) others.push_back(scope[o]);
      scopes_[k] = {llvm::MDNode::get(c_, {scope[k]}), llvm::MDNode::get(c_, others)};
    }
  }
  template <typename Inst>
  Inst* mark(Inst* access, const ir::Stmt* s) {
    if (auto it = scopes_.find(s->field()); it != scopes_.end()) {
      access->setMetadata(llvm::LLVMContext::MD_alias_scope, it->second.first);
      access->setMetadata(llvm::LLVMContext::MD_noalias, it->second.second);
    }
    return access;
  }

  llvm::Value* tree_load(const ir::Stmt* s) {
    const DataType st = s->storage();
    llvm::Value* p = word_pointer(s);
    llvm::Value* r = nullptr;
    switch (st) {
      case DataType::i64: case DataType::u64: case DataType::f64: {
        llvm::LoadInst* w = mark(b_.CreateAlignedLoad(type_of(st), p, llvm::Align(8)), s);
        if (s->atomic_load()) w->setAtomic(llvm::AtomicOrdering::Monotonic);
        r = w;
        break;
      }
      case DataType::f32:
        r = mark(b_.CreateAlignedLoad(b_.getFloatTy(), p, llvm::Align(4)), s);
        break;
      default: {
        llvm::LoadInst* w = mark(b_.CreateAlignedLoad(b_.getInt32Ty(), p, llvm::Align(4)), s);
        if (s->atomic_load()) w->setAtomic(llvm::AtomicOrdering::Monotonic);
        switch (st) {
          case DataType::u1: r = b_.CreateICmpNE(b_.CreateAnd(w, u32(1)), u32(0)); break;
          case DataType::f16:
            r = b_.CreateFPExt(b_.CreateBitCast(b_.CreateTrunc(w, b_.getInt16Ty()), b_.getHalfTy()), b_.getFloatTy());
            break;
          default: r = b_.CreateTrunc(w, type_of(st)); break;  // i32/u32: no-op
        }
      }
    }
    const DataType ct = compute_type(st);
    return ct == s->type() ? r : cast(r, ct, s->type());
  }

  void tree_store(const ir::Stmt* s) {
    const DataType st = s->storage();
    llvm::Value* v = cast(value(s->value()), s->value()->type(), compute_type(st));
    llvm::Value* p = word_pointer(s);
    switch (st) {
      case DataType::i64: case DataType::u64: case DataType::f64:
        mark(b_.CreateAlignedStore(v, p, llvm::Align(8)), s);
        return;
      case DataType::f32:
        mark(b_.CreateAlignedStore(v, p, llvm::Align(4)), s);
        return;
      case DataType::u1:
        mark(b_.CreateAlignedStore(b_.CreateZExt(v, b_.getInt32Ty()), p, llvm::Align(4)), s);
        return;
      case DataType::f16: {
        llvm::Value* h = b_.CreateBitCast(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getInt16Ty());
        mark(b_.CreateAlignedStore(b_.CreateZExt(h, b_.getInt32Ty()), p, llvm::Align(4)), s);
        return;
      }
      default:
        mark(b_.CreateAlignedStore(b_.CreateZExt(v, b_.getInt32Ty()), p, llvm::Align(4)), s);  // narrow: zero-extended
        return;
    }
  }

  llvm::Value* tree_atomic(const ir::Stmt* s) {
    const DataType t = s->type();
    llvm::Type* ty = type_of(t);
    llvm::Value* v = value(s->value());
    if (auto r = reductions_.find(s); r != reductions_.end()) {
      // Summed locally (find_accumulators); the old value is unused.
      llvm::AllocaInst* var = accumulators_[r->second].var;
      llvm::Value* old = b_.CreateLoad(ty, var);
      b_.CreateStore(is_float(t) ? b_.CreateFAdd(old, v) : b_.CreateAdd(old, v), var);
      return zero(t);
    }
    llvm::Value* p = word_pointer(s);
    const llvm::MaybeAlign align(ty->getPrimitiveSizeInBits() / 8);
    constexpr auto kOrder = llvm::AtomicOrdering::Monotonic;
    using RMW = llvm::AtomicRMWInst::BinOp;
    const bool f = is_float(t);
    if (!f && !ty->isIntegerTy(32) && !ty->isIntegerTy(64))
      throw InternalError("LLVM codegen: an atomic on a " + std::string(type_name(t)) + " in " + what_);
    if (ir::is_uniform_counter_add(s)) {
      auto add = [&](llvm::Value* amount) { return mark(b_.CreateAtomicRMW(RMW::Add, p, amount, align, kOrder), s); };
      if (llvm::Value* old = target_.counter_add(b_, *fn_, v, used_.count(s) != 0, add)) return old;
    }
    switch (s->atomic_op()) {
      case ir::AtomicOp::add: return mark(b_.CreateAtomicRMW(f ? RMW::FAdd : RMW::Add, p, v, align, kOrder), s);
      case ir::AtomicOp::sub: return mark(b_.CreateAtomicRMW(f ? RMW::FSub : RMW::Sub, p, v, align, kOrder), s);
      case ir::AtomicOp::exchange: return mark(b_.CreateAtomicRMW(RMW::Xchg, p, v, align, kOrder), s);
      case ir::AtomicOp::bit_and: return mark(b_.CreateAtomicRMW(RMW::And, p, v, align, kOrder), s);
      case ir::AtomicOp::bit_or: return mark(b_.CreateAtomicRMW(RMW::Or, p, v, align, kOrder), s);
      case ir::AtomicOp::bit_xor: return mark(b_.CreateAtomicRMW(RMW::Xor, p, v, align, kOrder), s);
      case ir::AtomicOp::min:
      case ir::AtomicOp::max: {
        // Integers only: legalize made float min/max compare-and-swap loops.
        if (f) break;
        const bool min = s->atomic_op() == ir::AtomicOp::min;
        const RMW op = is_signed(t) ? (min ? RMW::Min : RMW::Max) : (min ? RMW::UMin : RMW::UMax);
        return mark(b_.CreateAtomicRMW(op, p, v, align, kOrder), s);
      }
    }
    throw InternalError("LLVM codegen: an unknown atomic in " + what_);
  }

  const ir::Kernel& kernel_;
  CodegenOptions options_;
  const TargetHooks& target_;
  llvm::Module& m_;
  llvm::LLVMContext& c_;
  llvm::IRBuilder<> b_;
  std::string what_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  // The function's parameters as its target bound them, and the buffers
  // loaded from bound_.buffers in the entry block as they are first used.
  Bindings bound_;
  const ir::Stmt* parallel_loop_ = nullptr;
  std::vector<const ir::Stmt*> grid_nest_;  // find_grid
  std::map<TreeKey, uint32_t> buffer_index_;
  std::unordered_map<const ir::Stmt*, llvm::Value*> values_;
  std::unordered_map<const ir::Stmt*, llvm::Value*> variables_;
  std::unordered_map<const ir::Stmt*, llvm::Value*> loop_index_;
  std::vector<LoopTarget> loops_;
  std::vector<Accumulator> accumulators_;
  uint32_t iterations_per_sum_ = 1;  // the task's (TaskCode::iterations_per_invocation)
  std::map<std::string, TaskCode> shared_made_;  // shared tasks emitted, by entry
  std::unordered_map<const ir::Stmt*, size_t> reductions_;  // atomic -> accumulator
  std::unordered_set<const ir::Stmt*> used_;  // statements whose values another uses
  // Addresses widened to 64 bits (word_pointer), and the block each was made in.
  std::unordered_map<const ir::Stmt*, std::pair<llvm::Value*, llvm::BasicBlock*>> wide_;
  // Functions running unlikely blocks (emit_out_of_line), by key.
  std::map<std::string, llvm::Function*> out_of_line_;
  // By Stmt::field: the alias scope list an access is in, and those it aliases none of (make_scopes).
  std::map<int, std::pair<llvm::MDNode*, llvm::MDNode*>> scopes_;
};

// ThreadSanitizer builds: LLVM's pass turns memset, memcpy and memmove into
// calls of __tsan_memset and the like, which GCC's sanitizer runtime does
// not define. The module defines them (uninstrumented) as the plain
// functions, whose interceptors in the runtime check the same ranges.
void define_tsan_memory_functions(llvm::Module& m) {
  llvm::LLVMContext& c = m.getContext();
  llvm::Type* ptr = llvm::PointerType::get(c, 0);
  llvm::Type* size = llvm::Type::getInt64Ty(c);
  llvm::Type* i32 = llvm::Type::getInt32Ty(c);
  auto define = [&](const char* name, const char* plain, llvm::Type* second) {
    auto* type = llvm::FunctionType::get(ptr, {ptr, second, size}, false);
    llvm::FunctionCallee callee = m.getOrInsertFunction(plain, type);
    // weak_odr: kept until the sanitizer pass calls them, and the same in
    // each object a kernel is compiled into.
    auto* f = llvm::Function::Create(type, llvm::Function::WeakODRLinkage, name, m);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", f));
    b.CreateRet(b.CreateCall(callee, {f->getArg(0), f->getArg(1), f->getArg(2)}));
  };
  define("__tsan_memset", "memset", i32);
  define("__tsan_memcpy", "memcpy", ptr);
  define("__tsan_memmove", "memmove", ptr);
}

// Loop strength reduction, which every LLVM target's code generator runs,
// takes time far above linear in the number of operands of a sum it meets
// in a loop (its reassociation tries each operand split off the rest, three
// levels deep). A task summing 1,000 values kept from an earlier task spent
// 33 s of a 33.5 s compile there, and 9,000 values did not finish in
// minutes. Scalar evolution sees through adds, subtractions, products and
// integer casts, so a freeze is put after any such operation that gathers
// more than kMaxSummands leaves: it is the same value (a freeze changes
// only a poison value, and makes it defined), costs no instruction, and is
// an opaque leaf to scalar evolution. Smaller sums, which is every kernel
// of the examples and benchmarks, are left as they are.
void bound_sums(llvm::Function& f) {
  constexpr unsigned kMaxSummands = 64;
  std::unordered_map<const llvm::Value*, unsigned> leaves;
  auto leaves_of = [&](const llvm::Value* v) -> unsigned {
    const auto it = leaves.find(v);
    return it == leaves.end() ? 1u : it->second;
  };
  // Freezes change no block, so the traversal stays valid while they go in.
  for (llvm::BasicBlock* b : llvm::ReversePostOrderTraversal<llvm::Function*>(&f))
    for (llvm::Instruction& i : llvm::make_early_inc_range(*b)) {
      if (!i.getType()->isIntegerTy()) continue;
      unsigned n = 0;
      switch (i.getOpcode()) {
        case llvm::Instruction::Add:
        case llvm::Instruction::Sub:
        case llvm::Instruction::Mul:
          n = std::min(leaves_of(i.getOperand(0)) + leaves_of(i.getOperand(1)), 1u << 20);
          break;
        case llvm::Instruction::ZExt:
        case llvm::Instruction::SExt:
        case llvm::Instruction::Trunc:
          n = leaves_of(i.getOperand(0));
          break;
        default:
          continue;
      }
      if (n <= kMaxSummands) {
        if (n > 1) leaves[&i] = n;
        continue;
      }
      auto* frozen = new llvm::FreezeInst(&i, i.getName() + ".sum");
      frozen->insertAfter(&i);
      i.replaceUsesWithIf(frozen, [&](llvm::Use& u) { return u.getUser() != frozen; });
    }
}

}  // namespace

std::string to_text(const llvm::Module& m) {
  std::string out;
  llvm::raw_string_ostream os(out);
  m.print(os, nullptr);
  return out;
}

void complete_plan(rt::KernelPlan& plan, const std::vector<TaskCode>& tasks,
                   std::vector<rt::MessagePlan> messages) {
  GROVE_ASSERT(tasks.size() == plan.tasks.size(), "the LLVM code generator made a function per task");
  plan.arg_words = 2 * static_cast<uint32_t>(plan.args.size());
  for (size_t n = 0; n < plan.args.size(); ++n) {
    plan.args[n].word = 2 * static_cast<uint32_t>(n);
    plan.args[n].words = static_cast<uint32_t>(storage_words(compute_type(plan.args[n].type)));
  }
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    rt::TaskPlan& t = plan.tasks[i];
    t.entry_point = tasks[i].entry;
    t.count_entry_point = tasks[i].count_entry;
    t.grid = tasks[i].grid;
    if (!t.grid.empty()) t.local_size = tasks[i].local_size;
    t.iterations_per_invocation = tasks[i].iterations_per_invocation;
    for (const TreeKey& key : tasks[i].trees) t.slots.push_back(ir::slot_of(plan, key.first, key.second));
  }
  plan.messages = std::move(messages);
}

const ir::TargetOps& target_ops() {
  static const ir::TargetOps ops{
      .float_round = true, .float_pow = true, .f16_storage = true, .float_math = true, .f64_math = true,
      .exact_fmod = true, .int64 = true};
  return ops;
}

Emitted emit_kernel(const ir::Kernel& input, const CodegenOptions& options, const TargetHooks& target,
                    llvm::Module& module) {
  std::unique_ptr<ir::Kernel> copy;
  const ir::Kernel& kernel = ir::legal_form(input, target_ops(), copy);
  Emitter emitter(kernel, options, target, module);
  Emitted out;
  out.tasks = emitter.emit();
  out.messages = kernel.messages;
  std::string broken;
  llvm::raw_string_ostream why(broken);
  if (llvm::verifyModule(module, &why))
    throw InternalError("LLVM codegen: the module of kernel '" + kernel.name() + "' is invalid: " + broken);
  return out;
}

void optimize(llvm::Module& module, llvm::TargetMachine& machine, bool one_thread, bool quick) {
  // ThreadSanitizer instruments CPU code only.
  const bool tsan = GROVE_TSAN && !machine.getTargetTriple().isNVPTX();
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&machine);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  const std::string cpu = machine.getTargetCPU().str(), features = machine.getTargetFeatureString().str();
  for (llvm::Function& f : module)
    if (!f.isDeclaration()) {
      f.addFnAttr("target-cpu", cpu);
      if (!features.empty()) f.addFnAttr("target-features", features);
      if (tsan) f.addFnAttr(llvm::Attribute::SanitizeThread);
    }
  if (tsan) define_tsan_memory_functions(module);
  // As clang places it: after the optimisations, so that what is checked
  // is the code that runs (vector loads and stores included).
  if (tsan)
    pb.registerOptimizerLastEPCallback([](llvm::ModulePassManager& mpm, llvm::OptimizationLevel) {
      mpm.addPass(llvm::createModuleToFunctionPassAdaptor(llvm::ThreadSanitizerPass()));
    });
  if (one_thread) {
    // Before -O3, so that what were atomics are optimised as any load and
    // store (a P2G's scatter adds vectorise; a CAS loop of an f32 add is
    // gone).
    llvm::ModulePassManager lower;
    lower.addPass(llvm::createModuleToFunctionPassAdaptor(llvm::LowerAtomicPass()));
    lower.run(module, mam);
  }
  if (quick) {
    pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0).run(module, mam);
    return;
  }
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, mam);
  for (llvm::Function& f : module)
    if (!f.isDeclaration()) bound_sums(f);
}

}  // namespace grove::llvm_backend
