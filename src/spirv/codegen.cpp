// src/spirv/codegen.cpp — lowered IR to SPIR-V (see codegen.h): tasks and
// their entry points, structured control flow, tree memory and atomics,
// print and assert through the context buffer.
#include "spirv/codegen.h"

#include <cstdlib>
#include <set>
#include <string_view>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/passes/reductions.h"
#include "ir/plan_builder.h"
#include "ir/type_rules.h"
#include "spirv/codegen_internal.h"
#include "spirv/validate.h"

namespace grove::spirv {

bool validation_requested() {
#ifndef NDEBUG
  return true;
#else
  const char* v = std::getenv("GROVE_VALIDATE_SPIRV");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
#endif
}

namespace detail {

using spv::Op;
using ir::StmtKind;

namespace {

constexpr spv::Scope kScope = spv::Scope::Device;
constexpr spv::MemorySemanticsMask kRelaxed = spv::MemorySemanticsMask::MaskNone;

Op integer_atomic(ir::AtomicOp op, bool is_signed) {
  switch (op) {
    case ir::AtomicOp::add: return Op::OpAtomicIAdd;
    case ir::AtomicOp::sub: return Op::OpAtomicISub;
    case ir::AtomicOp::min: return is_signed ? Op::OpAtomicSMin : Op::OpAtomicUMin;
    case ir::AtomicOp::max: return is_signed ? Op::OpAtomicSMax : Op::OpAtomicUMax;
    case ir::AtomicOp::bit_and: return Op::OpAtomicAnd;
    case ir::AtomicOp::bit_or: return Op::OpAtomicOr;
    case ir::AtomicOp::bit_xor: return Op::OpAtomicXor;
    case ir::AtomicOp::exchange: return Op::OpAtomicExchange;
  }
  return Op::OpAtomicIAdd;
}

}  // namespace

TaskEmitter::TaskEmitter(const ir::Kernel& kernel, const ir::SNodeForest& forest, const CodegenOptions& options,
                         KernelModules& out)
    : kernel_(kernel), forest_(forest), options_(options), out_(out) {}

TaskModule TaskEmitter::emit(const ir::Stmt* task, size_t index) {
  TaskModule tm;
  tm.kind = task->task_kind();
  tm.label = task->text();
  tm.parallel = ir::is_parallel(tm.kind);
  tm.local_size = tm.parallel ? options_.local_size : 1;
  // The sparse runtime's tasks are named by their node alone: their code
  // depends on the node, not on the kernel, so that kernels over the same
  // node make the same module and the device compiles it once (VulkanDevice).
  tm.entry_point = ir::is_runtime_task(tm.kind) ? std::string(ir::op_name(tm.kind)) + ".S" + std::to_string(task->snode())
                                : kernel_.name() + ".t" + std::to_string(index) + "." + ir::op_name(tm.kind);
  what_ = "task " + std::to_string(index) + " ('" + tm.label + "') of kernel '" + kernel_.name() + "'";

  std::set<TreeKey> used;
  ir::walk(task->body(), [&](ir::Stmt* s) {
    if (ir::accesses_tree_buffer(s)) used.insert(key_of(s));
  });
  uint32_t binding = 1;
  for (const TreeKey& t : used) {
    trees_[t].binding = binding++;
    tm.trees.push_back(t);
  }

  static_iterations_ = -1;
  count_on_device_ = flat_grid_ = false;
  accumulators_.clear();
  reductions_.clear();
  if (tm.parallel) {
    const ir::Block* body = task->body();
    if (body->empty() || body->at(body->size() - 1)->kind() != StmtKind::RangeFor)
      throw InternalError("SPIR-V codegen: " + what_ + " is parallel but does not end in its range_for");
    parallel_loop_ = body->at(body->size() - 1);
    tm.static_iterations = ir::constant_iterations(parallel_loop_);
    static_iterations_ = tm.static_iterations;
    find_reductions(parallel_loop_);
    if (!reductions_.empty()) tm.iterations_per_invocation = kReductionIterations;
    count_on_device_ = tm.static_iterations < 0 && counts_on_device(task);
    flat_grid_ = count_on_device_ && reductions_.empty() && !has_continue(parallel_loop_);
  }
  grid_.clear();
  if (tm.parallel) find_grid(tm);

  task_index_ = index;
  task_label_ = tm.label;
  const Id fn = m_.begin_function(m_.type_void());
  begin_task_function(fn, tm.entry_point);
  if (options_.max_loop_iterations > 0) {
    back_edges_ = m_.local_variable(u32_type());
    m_.store(back_edges_, u32c(0));
  }
  if (options_.debug) emit_assert_check();
  stopped_ = 0;
  bool stops = false;
  ir::walk(task->body(), [&](ir::Stmt* s) { stops = stops || s->kind() == StmtKind::Stop; });
  counted_loops_ = false;
  if (stops) begin_stoppable_body();
  emit_block(task->body());
  if (stops) end_once();
  report_loop_limit();
  if (m_.in_block()) m_.ret();
  m_.end_function();
  m_.entry_point(spv::ExecutionModel::GLCompute, fn, tm.entry_point, m_.global_variables());
  if (grid_.empty()) {
    m_.local_size(fn, tm.local_size);
  } else {  // the innermost axis on x
    uint32_t size[3] = {1, 1, 1};
    for (size_t a = 0; a < grid_.size(); ++a) size[grid_.size() - 1 - a] = grid_[a].local_size;
    m_.local_size(fn, size[0], size[1], size[2]);
  }
  declare_float_controls(fn, tm);
  tm.subgroup_operations = subgroup_operations_;
  if (count_on_device_) emit_count_entry(task, tm);
  tm.words = m_.finish();
  if (options_.max_task_words > 0 && tm.words.size() > options_.max_task_words)
    throw Error(what_ + " is " + std::to_string(tm.words.size()) + " words of SPIR-V, more than the " +
                std::to_string(options_.max_task_words) + " this Vulkan driver (lavapipe) compiles in reasonable "
                "time (its compile time grows much faster than the code); split the kernel into several kernels, "
                "or run it with Arch::Cpu or on a GPU");
  if (options_.validate) validate_spirv(tm.words, what_);
  return tm;
}

// ---- values ------------------------------------------------------------------

Id TaskEmitter::value(const ir::Stmt* s) {
  auto it = values_.find(s);
  if (it == values_.end())
    throw InternalError(std::string("SPIR-V codegen: a '") + ir::kind_name(s->kind()) +
                        "' is used before it is defined (or defines no value) in " + what_);
  return it->second;
}

Id TaskEmitter::value_as(const ir::Stmt* s, DataType t) {
  Id v = value(s);
  return s->type() == t ? v : cast(v, s->type(), t);
}

// ---- resources ----------------------------------------------------------------

Id TaskEmitter::buffer_variable(Id element, uint32_t stride, uint32_t binding, const std::string& name) {
  const Id block = m_.type_block({m_.type_runtime_array(element, stride)}, {0});
  const Id var = m_.storage_buffer(block, 0, binding);
  m_.name(var, name);
  return var;
}

// "tree3", or "tree3.p0" through tree parameter 0; "scratch".
std::string TaskEmitter::buffer_name(const TreeKey& key) const {
  const int tree = key.first;
  if (tree < forest_.num_trees() && forest_.tree(tree).root < 0) return "scratch";
  return "tree" + std::to_string(tree) + (key.second >= 0 ? ".p" + std::to_string(key.second) : "");
}

Id TaskEmitter::word_pointer(const TreeKey& tree, Id address) {
  if (tree.first == ir::kContextTree) return context_pointer(address);
  TreeBinding& b = trees_.at(tree);
  if (b.words == 0) b.words = buffer_variable(u32_type(), 4, b.binding, buffer_name(tree));
  return m_.access_chain(b.words, {u32c(0), address});
}

Id TaskEmitter::float_pointer(const TreeKey& tree, Id address) {
  TreeBinding& b = trees_.at(tree);
  if (b.floats == 0) b.floats = buffer_variable(m_.type_float(32), 4, b.binding, buffer_name(tree) + ".f32");
  return m_.access_chain(b.floats, {u32c(0), address});
}

Id TaskEmitter::u64_pointer(const TreeKey& tree, Id address) {
  TreeBinding& b = trees_.at(tree);
  if (b.doubles == 0) b.doubles = buffer_variable(m_.type_uint(64), 8, b.binding, buffer_name(tree) + ".u64");
  // 64-bit values sit at even words (the layout aligns them).
  return m_.access_chain(b.doubles, {u32c(0), op2(Op::OpShiftRightLogical, address, u32c(1))});
}

Id TaskEmitter::context_pointer(Id word) {
  if (context_ == 0) context_ = buffer_variable(u32_type(), 4, 0, "context");
  return m_.access_chain(context_, {u32c(0), word});
}

Id TaskEmitter::global_invocation_x() { return global_invocation(0); }

Id TaskEmitter::global_invocation(uint32_t axis) {
  const Id v = m_.builtin_input(spv::BuiltIn::GlobalInvocationId, m_.type_vector(u32_type(), 3));
  return m_.composite_extract(u32_type(), m_.load(v), {axis});
}

Id TaskEmitter::num_workgroups_x() { return num_workgroups(0); }

Id TaskEmitter::num_workgroups(uint32_t axis) {
  const Id v = m_.builtin_input(spv::BuiltIn::NumWorkgroups, m_.type_vector(u32_type(), 3));
  return m_.composite_extract(u32_type(), m_.load(v), {axis});
}

// ---- statements ---------------------------------------------------------------

void TaskEmitter::emit_block(const ir::Block* block) {
  for (const auto& s : block->stmts()) {
    // After a break, continue or return the rest of the block is dead.
    if (!m_.in_block()) return;
    emit_stmt(s.get());
  }
}

void TaskEmitter::emit_stmt(const ir::Stmt* s) {
  switch (s->kind()) {
    case StmtKind::Const:
      values_[s] = constant(s->type(), s->bits());
      return;
    case StmtKind::Arg:
      values_[s] = emit_arg(s);
      return;
    // type_check made every conversion an explicit cast: an operation
    // computes in its operands' type (the verifier checks it from the typed
    // stage on), so nothing here derives a promotion.
    case StmtKind::Unary:
      values_[s] = unary(s->unary_op(), s->operand()->type(), value(s->operand()));
      return;
    case StmtKind::Cast:
      values_[s] = cast(value(s->operand()), s->operand()->type(), s->type());
      return;
    case StmtKind::Bitcast: {  // i32 and u32 (i64 and u64) are one SPIR-V type
      const Id x = value(s->operand());
      values_[s] = type_of(s->type()) == type_of(s->operand()->type()) ? x : m_.convert(Op::OpBitcast, type_of(s->type()), x);
      return;
    }
    case StmtKind::Binary:
      GROVE_ASSERT(s->lhs()->type() == s->rhs()->type(), "SPIR-V codegen: a binary op on operands of two types");
      values_[s] = binary(s->binary_op(), s->lhs()->type(), value(s->lhs()), value(s->rhs()));
      return;
    case StmtKind::Select: {
      Id if_true = value_as(s->true_value(), s->type());
      Id if_false = value_as(s->false_value(), s->type());
      if (is_float(s->type())) {
        // A literal zero chosen by a select is folded into what uses it
        // (x / select(c, 0.0, -1.0) lost its x / 0.0), like one used directly.
        if_true = opaque_zero(if_true, s->type());
        if_false = opaque_zero(if_false, s->type());
      }
      values_[s] = m_.select(value_as(s->cond(), DataType::u1), if_true, if_false);
      return;
    }
    case StmtKind::Alloca: {
      // A Function variable (declared in the entry block), zeroed here: the
      // interpreter zeroes it each time the alloca runs (e.g. per iteration).
      const Id var = m_.local_variable(type_of(s->type()));
      m_.store(var, zero(s->type()));
      variables_[s] = var;
      return;
    }
    case StmtKind::LocalLoad:
      values_[s] = m_.load(variables_.at(s->ptr()));
      return;
    case StmtKind::LocalStore:
      m_.store(variables_.at(s->ptr()), value_as(s->value(), s->ptr()->type()));
      return;
    case StmtKind::RangeFor:
      if (s == parallel_loop_) {
        emit_parallel_loop(s);
      } else {
        emit_serial_range_for(s);
      }
      return;
    case StmtKind::LoopIndex: {
      auto it = loop_index_.find(s->loop());
      if (it == loop_index_.end() || s->index() != 0)
        throw InternalError("SPIR-V codegen: loop_index outside its range_for (or of an axis other than 0) in " + what_);
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
    case StmtKind::Continue:
      if (loops_.empty()) throw InternalError("SPIR-V codegen: break/continue outside a loop in " + what_);
      m_.branch(s->kind() == StmtKind::Break ? loops_.back().merge : loops_.back().continue_target);
      return;
    case StmtKind::MessageBase:
      values_[s] = push_word(out_.arg_words);
      return;
    case StmtKind::SubgroupFirst:
    case StmtKind::SubgroupElect:
      values_[s] = emit_subgroup(s);
      return;
    // A stop (after a failed assertion's record) leaves the task's body (a
    // break out of each loop around it, down to the one-pass loop of
    // begin_stoppable_body): what follows never runs.
    case StmtKind::Stop:
      m_.store(stopped_, m_.constant_bool(true));
      m_.branch(loops_.back().merge);
      return;
    case StmtKind::TreeLoad:
      values_[s] = emit_tree_load(s);
      return;
    case StmtKind::TreeStore:
      emit_tree_store(s);
      return;
    case StmtKind::TreeAtomic:
      values_[s] = emit_tree_atomic(s);
      return;
    case StmtKind::TreeCas:
      values_[s] = emit_tree_cas(s);
      return;
    case StmtKind::Print:  // legalize wrote them as records
    case StmtKind::Assert:
    case StmtKind::FieldLoad:
    case StmtKind::FieldStore:
    case StmtKind::FieldAtomic:
    case StmtKind::StructFor:
    case StmtKind::SNodeOp:
    case StmtKind::Task:
      break;
  }
  throw InternalError(std::string("SPIR-V codegen: '") + ir::kind_name(s->kind()) + "' in " + what_ +
                      "; the code generator takes kernels at the lowered stage");
}

Id TaskEmitter::push_word(uint32_t k) {
  if (args_ == 0) {
    // The arguments' words, then the message base (and a grid's bases).
    const auto count = static_cast<uint32_t>(context::push_constant_bytes(out_.arg_words, !grid_.empty()) / 4);
    const Id words = m_.type_array(u32_type(), u32c(count), 4);
    args_ = m_.global_variable(m_.type_block({words}, {0}), spv::StorageClass::PushConstant);
    m_.name(args_, "args");
  }
  return m_.load(m_.access_chain(args_, {u32c(0), u32c(k)}));
}

Id TaskEmitter::message_id(uint32_t number) { return op2(Op::OpIAdd, push_word(out_.arg_words), u32c(number)); }

Id TaskEmitter::emit_arg(const ir::Stmt* s) {
  const uint32_t first = out_.arg_offsets.at(static_cast<size_t>(s->index()));
  auto word = [&](uint32_t k) { return push_word(first + k); };
  const DataType t = s->type();
  if (bit_width(t) == 64) return join_words(word(0), word(1), t);
  if (t == DataType::f32) return m_.convert(Op::OpBitcast, type_of(t), word(0));
  if (t == DataType::u1) return m_.compare(Op::OpINotEqual, word(0), u32c(0));
  return wrap(word(0), t);
}

// ---- control flow ----------------------------------------------------------------

void TaskEmitter::emit_if(const ir::Stmt* s) {
  const Id cond = value_as(s->cond(), DataType::u1);
  const bool has_else = !s->else_block()->empty();
  const Id then_label = m_.new_label(), merge = m_.new_label();
  const Id else_label = has_else ? m_.new_label() : merge;
  m_.selection_merge(merge);
  m_.branch_conditional(cond, then_label, else_label);
  bool reached = !has_else;
  m_.begin_block(then_label);
  emit_block(s->then_block());
  if (m_.in_block()) {
    m_.branch(merge);
    reached = true;
  }
  if (has_else) {
    m_.begin_block(else_label);
    emit_block(s->else_block());
    if (m_.in_block()) {
      m_.branch(merge);
      reached = true;
    }
  }
  m_.begin_block(merge);
  // Both branches left the construct (break, continue, return): nothing
  // after the if runs, and the emit_block loop stops here.
  if (!reached) m_.unreachable();
}

void TaskEmitter::emit_while(const ir::Stmt* s) {
  const Id header = m_.new_label(), body = m_.new_label(), cont = m_.new_label(), merge = m_.new_label();
  m_.branch(header);
  m_.begin_block(header);
  m_.loop_merge(merge, cont);
  m_.branch(body);
  m_.begin_block(body);
  loops_.push_back({merge, cont});
  emit_block(s->body());
  loops_.pop_back();
  if (m_.in_block()) m_.branch(cont);
  m_.begin_block(cont);
  loop_back_edge(header, merge);
  m_.begin_block(merge);
  after_loop();
  stop_after_loop();
}

// for (i = begin; i < end; ++i), in order; i + 1 never overflows since i < end.
void TaskEmitter::emit_serial_range_for(const ir::Stmt* s) {
  const Id begin = value_as(s->begin(), DataType::i32);
  const Id end = value_as(s->end(), DataType::i32);
  const Id counter = m_.local_variable(u32_type());
  m_.store(counter, begin);
  const Id header = m_.new_label(), body = m_.new_label(), cont = m_.new_label(), merge = m_.new_label();
  m_.branch(header);
  m_.begin_block(header);
  const Id i = m_.load(counter);
  const Id more = m_.compare(Op::OpSLessThan, i, end);
  m_.loop_merge(merge, cont);
  m_.branch_conditional(more, body, merge);
  m_.begin_block(body);
  loop_index_[s] = i;
  loops_.push_back({merge, cont});
  emit_block(s->body());
  loops_.pop_back();
  if (m_.in_block()) m_.branch(cont);
  m_.begin_block(cont);
  m_.store(counter, op2(Op::OpIAdd, i, u32c(1)));
  loop_back_edge(header, merge);
  m_.begin_block(merge);
  after_loop();
  stop_after_loop();
}

// max(end - begin, 0) of i32 bounds, as a u32.
Id TaskEmitter::iteration_count(Id begin, Id end) {
  return m_.select(m_.compare(Op::OpSGreaterThan, end, begin), op2(Op::OpISub, end, begin), u32c(0));
}

// The parallel loop: a grid-stride loop over k in [0, end - begin), index begin + k.
// When the count is a constant the backend launches one invocation per
// iteration (every Vulkan device takes 65535 groups), so there is no loop:
// invocation k runs iteration k, if k < count.
void TaskEmitter::emit_parallel_loop(const ir::Stmt* s) {
  const Id begin = value_as(s->begin(), DataType::i32);
  const Id end = value_as(s->end(), DataType::i32);
  const Id count = iteration_count(begin, end);
  for (Accumulator& a : accumulators_) {  // the function is open now
    a.var = m_.local_variable(type_of(a.type));
    m_.store(a.var, constant(a.type, 0));
  }
  if (!grid_.empty()) {
    emit_grid_axis(0);
    flush_accumulators();
    return;
  }
  // A `continue` of the parallel loop needs the loop's continue target, so
  // such a body keeps the loop form.
  const bool continues = has_continue(s);
  if ((static_iterations_ >= 0 && static_iterations_ <= int64_t{65535} * options_.local_size &&
       reductions_.empty() && !continues) ||
      flat_grid_) {
    // A device count: the count entry point launched groups in x and y, and
    // invocation (x, y) runs iteration y * (groups in x * local size) + x.
    const Id k = flat_grid_ ? op2(Op::OpIAdd, op2(Op::OpIMul, global_invocation(1),
                                                  op2(Op::OpIMul, num_workgroups_x(), u32c(options_.local_size))),
                                  global_invocation_x())
                            : global_invocation_x();
    const Id body = m_.new_label(), merge = m_.new_label();
    const Id in_range = m_.compare(Op::OpULessThan, k, count);
    m_.selection_merge(merge);
    m_.branch_conditional(in_range, body, merge);
    m_.begin_block(body);
    loop_index_[s] = op2(Op::OpIAdd, begin, k);
    emit_block(s->body());
    if (m_.in_block()) m_.branch(merge);
    m_.begin_block(merge);
    return;
  }
  const Id stride = op2(Op::OpIMul, num_workgroups_x(), u32c(options_.local_size));
  const Id k_var = m_.local_variable(u32_type());
  m_.store(k_var, global_invocation_x());
  const Id header = m_.new_label(), body = m_.new_label(), cont = m_.new_label(), merge = m_.new_label();
  m_.branch(header);
  m_.begin_block(header);
  const Id k = m_.load(k_var);
  const Id more = m_.compare(Op::OpULessThan, k, count);
  m_.loop_merge(merge, cont);
  m_.branch_conditional(more, body, merge);
  m_.begin_block(body);
  loop_index_[s] = op2(Op::OpIAdd, begin, k);
  loops_.push_back({merge, cont});
  emit_block(s->body());
  loops_.pop_back();
  if (m_.in_block()) m_.branch(cont);
  m_.begin_block(cont);
  const Id next = op2(Op::OpIAdd, k, stride);
  m_.store(k_var, m_.select(m_.compare(Op::OpULessThan, next, k), count, next));  // no wrap-around
  loop_back_edge(header, merge);
  m_.begin_block(merge);
  after_loop();
  stop_after_loop();
  flush_accumulators();
}

// Finds the grid loops the task spreads (codegen.h) and their group sizes
// (rt::grid_group_sizes).
void TaskEmitter::find_grid(TaskModule& tm) {
  if (!options_.grid || count_on_device_) return;
  ir::GridLayout layout = ir::grid_layout(parallel_loop_, options_.local_size);
  if (layout.nest.size() == 1) return;
  for (size_t a = 0; a < layout.nest.size(); ++a) {
    const int64_t count = layout.counts[a];
    const uint32_t size = layout.sizes[a];
    grid_.push_back({layout.nest[a], size, !(count >= 0 && (count + size - 1) / size <= 65535)});
  }
  tm.grid = std::move(layout.axes);
  tm.local_size = layout.sizes[0];
  tm.iterations_per_invocation = 1;  // a point per invocation; its sums are added once a subgroup
}

// Axis a of the grid (and the ones inside it): invocation coordinate k
// along it (plus the dispatch's base along it, where the axis may need more
// groups than a device launches at once) runs iteration begin + k.
// Side-effect-free statements before an inner grid loop run in every
// invocation that reaches them.
void TaskEmitter::emit_grid_axis(size_t a) {
  const GridLoop& g = grid_[a];
  const auto dim = static_cast<uint32_t>(grid_.size() - 1 - a);
  const Id begin = value_as(g.loop->begin(), DataType::i32);
  const Id end = value_as(g.loop->end(), DataType::i32);
  const Id count = iteration_count(begin, end);
  Id k = global_invocation(dim);
  if (g.based) k = op2(Op::OpIAdd, k, push_word(context::grid_base_word(out_.arg_words, dim)));
  const Id in_range = m_.compare(Op::OpULessThan, k, count);
  const Id inside = m_.new_label(), merge = m_.new_label();
  m_.selection_merge(merge);
  m_.branch_conditional(in_range, inside, merge);
  m_.begin_block(inside);
  loop_index_[g.loop] = op2(Op::OpIAdd, begin, k);
  const ir::Block* body = g.loop->body();
  if (a + 1 == grid_.size()) {
    emit_point(body);
  } else {
    for (size_t i = 0; i + 1 < body->size(); ++i) emit_stmt(body->at(i));
    emit_grid_axis(a + 1);
  }
  if (m_.in_block()) m_.branch(merge);
  m_.begin_block(merge);
}

// The innermost body of a grid: a `continue` in it ends the invocation's
// point, a break out of a loop that runs once around the body.
void TaskEmitter::emit_point(const ir::Block* body) {
  if (!has_continue(body->owner())) {
    emit_block(body);
    return;
  }
  begin_once(true);
  emit_block(body);
  end_once();
  after_loop();
  stop_after_loop();
}

// A dynamic-count task's loop bounds are computed by the statements before
// its range_for. When those only compute (constants, arguments, arithmetic
// and tree loads, at least one: else the host knows the count), they are
// emitted again as a one-invocation entry point that writes the number of
// groups the task needs, ceil(count / (local size * iterations per
// invocation)), at most 65535 (every device takes that many; the grid-stride
// loop covers a larger count), for an indirect dispatch. The task's own
// invocations then do about one iteration each, and no group is launched
// idle: a fixed grid either leaves most of a large loop to few invocations
// or launches many that find nothing to do.
bool TaskEmitter::has_continue(const ir::Stmt* loop) {
  bool continues = false;
  auto find_continue = [&](auto&& self, const ir::Block* b) -> void {
    for (const auto& st : b->stmts()) {
      if (st->kind() == StmtKind::Continue) continues = true;
      if (st->kind() == StmtKind::While || st->kind() == StmtKind::RangeFor) continue;  // its own continues
      for (const auto& inner : st->blocks()) self(self, inner.get());
    }
  };
  find_continue(find_continue, loop->body());
  return continues;
}

bool TaskEmitter::counts_on_device(const ir::Stmt* task) {
  const ir::Block* body = task->body();
  bool reads_tree = false;
  for (size_t i = 0; i + 1 < body->size(); ++i) {
    const StmtKind k = body->at(i)->kind();
    if (k == StmtKind::TreeLoad) {
      reads_tree = true;
    } else if (!ir::is_value(k)) {
      return false;
    }
  }
  return reads_tree;
}

// Names the function and, where the driver must not see float constants,
// loads the context's zero word in its entry block, which dominates every use.
void TaskEmitter::begin_task_function(Id fn, const std::string& name) {
  m_.name(fn, name);
  zero_word_ = options_.opaque_float_zero ? m_.load(context_at(context::kZero)) : 0;
}

// Float controls (SPV_KHR_float_controls, core in SPIR-V 1.4), each where
// the device offers it:
// - IEEE signed zeros, infinities and NaN for the float widths the task
//   computes in: without the mode a driver may fold x * 0.0 to +0.0 and
//   -inf * 0.0 to 0, which docs/ir.md does not allow. f32 is declared
//   whenever the task computes in floats: lavapipe keeps f64's signed zeros
//   only when f32's are kept too.
// - f32 denormals kept (DenormPreserve): Vulkan lets a driver flush them to
//   zero otherwise, and NVIDIA's driver 580 did (denorm_min == 0 held).
//   (f64 computes with denormals on the devices seen; lavapipe keeps f32's
//   without the mode too, and does not offer it.)
void TaskEmitter::declare_float_controls(Id entry, TaskModule& tm) {
  const bool f32 = m_.has_type_float(32), f64 = m_.has_type_float(64);
  tm.signed_zero_inf_nan_preserve = options_.features.signed_zero_inf_nan_preserve && (f32 || f64);
  tm.denorm_preserve = options_.features.denorm_preserve && f32;
  if (!tm.signed_zero_inf_nan_preserve && !tm.denorm_preserve) return;
  if (m_.version() < spirv::version_word(1, 4)) m_.require_extension("SPV_KHR_float_controls");
  if (tm.signed_zero_inf_nan_preserve) {
    m_.require_capability(spv::Capability::SignedZeroInfNanPreserve);
    m_.execution_mode(entry, spv::ExecutionMode::SignedZeroInfNanPreserve, {32});
    if (f64) m_.execution_mode(entry, spv::ExecutionMode::SignedZeroInfNanPreserve, {64});
  }
  if (tm.denorm_preserve) {
    m_.require_capability(spv::Capability::DenormPreserve);
    m_.execution_mode(entry, spv::ExecutionMode::DenormPreserve, {32});
  }
}

void TaskEmitter::emit_count_entry(const ir::Stmt* task, TaskModule& tm) {
  const ir::Block* body = task->body();
  // Values are per function: the statements are emitted afresh.
  values_.clear();
  variables_.clear();
  loop_index_.clear();
  tm.count_entry_point = tm.entry_point + ".count";
  const Id fn = m_.begin_function(m_.type_void());
  begin_task_function(fn, tm.count_entry_point);
  for (size_t i = 0; i + 1 < body->size(); ++i) emit_stmt(body->at(i));
  const ir::Stmt* loop = body->at(body->size() - 1);
  const Id begin = value_as(loop->begin(), DataType::i32);
  const Id end = value_as(loop->end(), DataType::i32);
  const Id count = iteration_count(begin, end);
  // count < 2^31 (an i32 loop) and per_group <= 2^16 * 2^6: the sums below
  // cannot wrap.
  const uint32_t per_group = tm.local_size * tm.iterations_per_invocation;
  const Id groups = op2(Op::OpUDiv, op2(Op::OpIAdd, count, u32c(per_group - 1)), u32c(per_group));
  const Id x = m_.select(m_.compare(Op::OpULessThan, groups, u32c(65535)), groups, u32c(65535));
  // A flat grid takes the groups past 65535 in y (every device takes
  // 65535 in each); a grid-stride loop covers them in x.
  const Id y = flat_grid_ ? op2(Op::OpUDiv, op2(Op::OpIAdd, groups, u32c(65534)), u32c(65535))
                          : m_.select(m_.compare(Op::OpIEqual, groups, u32c(0)), u32c(0), u32c(1));
  m_.store(context_at(context::kGroupCounts), x);
  m_.store(context_at(context::kGroupCounts + 1), y);
  m_.store(context_at(context::kGroupCounts + 2), u32c(1));
  m_.ret();
  m_.end_function();
  m_.entry_point(spv::ExecutionModel::GLCompute, fn, tm.count_entry_point, m_.global_variables());
  m_.local_size(fn, 1);
}

// The sums mark_reductions found that nothing else in the loop touches
// (Reduction::accumulate): one register per cell of an instance and type.
void TaskEmitter::find_reductions(const ir::Stmt* loop) {
  ir::AccumulatedCells found = ir::accumulated_cells(loop);
  for (const ir::AccumulatedCells::Cell& c : found.cells)
    accumulators_.push_back({{c.tree, c.tree_param}, c.address, c.type, 0});
  reductions_ = std::move(found.cell_of);
}

void TaskEmitter::flush_accumulators() {
  for (const Accumulator& a : accumulators_) {
    const Id sum = m_.load(a.var);
    if (subgroup_sum(a.type)) {
      add_once_per_subgroup(a.type, a.tree, u32c(a.address), sum);
    } else {
      atomic_value(ir::AtomicOp::add, a.type, a.tree, u32c(a.address), sum);
    }
  }
}

// The subgroup sums `v` and one elected invocation adds the sum: one atomic
// per subgroup instead of one per invocation. Works in divergent code
// (non-uniform operations).
void TaskEmitter::add_once_per_subgroup(DataType t, const TreeKey& tree, Id address, Id v) {
  subgroup_operations_ = true;
  m_.require_capability(spv::Capability::GroupNonUniform);
  m_.require_capability(spv::Capability::GroupNonUniformArithmetic);
  const Id scope = u32c(static_cast<uint32_t>(spv::Scope::Subgroup));
  const Id sum = m_.emit(is_float(t) ? Op::OpGroupNonUniformFAdd : Op::OpGroupNonUniformIAdd, type_of(t),
                         {scope, static_cast<uint32_t>(spv::GroupOperation::Reduce), v});
  const Id elected = m_.emit(Op::OpGroupNonUniformElect, m_.type_bool(), {scope});
  const Id add = m_.new_label(), merge = m_.new_label();
  m_.selection_merge(merge);
  m_.branch_conditional(elected, add, merge);
  m_.begin_block(add);
  atomic_value(ir::AtomicOp::add, t, tree, address, sum);
  if (m_.in_block()) m_.branch(merge);
  m_.begin_block(merge);
}

// subgroup_first and subgroup_elect: the non-uniform operations where the
// device has them (the plan's subgroup feature), else each invocation
// a subgroup of one.
Id TaskEmitter::emit_subgroup(const ir::Stmt* s) {
  const bool first = s->kind() == StmtKind::SubgroupFirst;
  if (!options_.features.subgroup_arithmetic) return first ? value(s->operand()) : m_.constant_bool(true);
  subgroup_operations_ = true;
  m_.require_capability(spv::Capability::GroupNonUniform);
  const Id scope = u32c(static_cast<uint32_t>(spv::Scope::Subgroup));
  if (!first) return m_.emit(Op::OpGroupNonUniformElect, m_.type_bool(), {scope});
  m_.require_capability(spv::Capability::GroupNonUniformBallot);
  return m_.emit(Op::OpGroupNonUniformBroadcastFirst, type_of(s->type()), {scope, value(s->operand())});
}

// The loop limit's report (legalize writes the assertions' records).
void TaskEmitter::claim_error_record(uint32_t message) {
  const Id old = m_.atomic_compare_exchange(context_at(context::kAssertFlag), kScope, kRelaxed, kRelaxed,
                                            u32c(1), u32c(0));
  const Id first = m_.compare(Op::OpIEqual, old, u32c(0));
  const Id record = m_.new_label(), done = m_.new_label();
  m_.selection_merge(done);
  m_.branch_conditional(first, record, done);
  m_.begin_block(record);
  m_.store(context_at(context::kAssertMessage), message_id(message));
  m_.branch(done);
  m_.begin_block(done);
}

uint32_t TaskEmitter::loop_limit_message() {
  if (loop_limit_message_ < 0) {
    Message msg;
    msg.id = static_cast<uint32_t>(out_.messages.size());
    msg.is_assert = true;
    msg.format = "one invocation of task " + std::to_string(task_index_) + " ('" + task_label_ + "') reached " +
                 std::to_string(options_.max_loop_iterations) +
                 " loop iterations, where this Vulkan driver (lavapipe) silently stops every loop, so its "
                 "results would be wrong (it counts every pass of every loop the invocation runs, two more "
                 "per loop started, and the compare-and-swap loops of float atomics the device has no "
                 "instruction for); run the kernel with Arch::Interp, Arch::Cpu or on a GPU, or move the "
                 "long loop into a parallel for_range";
    loop_limit_message_ = static_cast<int64_t>(out_.messages.size());
    out_.messages.push_back(std::move(msg));
  }
  return static_cast<uint32_t>(loop_limit_message_);
}

// llvmpipe's limiter counts every pass through a loop's end and two more
// per loop instance: back-edges here, and two per loop in after_loop(). One
// per instance was too few: deep nests stopped at llvmpipe's limit while
// this count was still below it, silently (tests/vulkan/backend_test.cpp,
// NestedLoopsAtLavapipesLimitAreRightOrAnError, pins the count both ways).
// At the limit the loop is left, and report_loop_limit() reports it where
// the task ends: llvmpipe runs the body of every `if` under a lane mask
// whether or not any lane takes it, so a report inside the loop would cost
// every iteration.
// The invocation then goes on (the launch fails with the report, and every
// later loop leaves after one pass, the count being past the limit): a
// return there would be worse. Mesa lowers a return inside control flow by
// putting all the code after it into an `if`, so each loop would nest the
// rest of the task one level deeper, and llvmpipe silently mis-compiles
// code nested more than 80 levels deep (its condition stack): a task of 80
// f64 atomic adds (compare-and-swap loops) stopped after the 79th without a
// word, or reported the limit falsely when they were inside `if`s.
void TaskEmitter::loop_back_edge(Id header, Id merge) {
  if (options_.max_loop_iterations == 0) {
    m_.branch(header);
    return;
  }
  const Id n = op2(Op::OpIAdd, m_.load(back_edges_), u32c(1));
  m_.store(back_edges_, n);
  const Id over = m_.compare(Op::OpUGreaterThanEqual, n, u32c(options_.max_loop_iterations));
  m_.branch_conditional(over, merge, header);
}

void TaskEmitter::after_loop() {
  if (options_.max_loop_iterations == 0) return;
  m_.store(back_edges_, op2(Op::OpIAdd, m_.load(back_edges_), u32c(2)));
  counted_loops_ = true;
}

// The count only grows, so one look at it where the task ends finds every
// loop that reached the limit: a report after each loop put a branch and a
// compare-and-swap at every loop's end (the sparse runtime's two loops at
// each activation site among them), a tenth of lavapipe's time to compile
// sparse_life's count.
void TaskEmitter::report_loop_limit() {
  if (options_.max_loop_iterations == 0 || !counted_loops_ || !m_.in_block()) return;
  const Id over = m_.compare(Op::OpUGreaterThanEqual, m_.load(back_edges_), u32c(options_.max_loop_iterations));
  const Id report = m_.new_label(), done = m_.new_label();
  m_.selection_merge(done);
  m_.branch_conditional(over, report, done);
  m_.begin_block(report);
  claim_error_record(loop_limit_message());
  m_.branch(done);
  m_.begin_block(done);
}

// ---- stopping after a failed assertion ----------------------------------------

// Why not a return: Mesa lowers a return inside control flow by moving all
// the code after it into an `if`, so every assert nested the rest of the
// task one level deeper, and llvmpipe silently mis-compiles code nested more
// than 80 levels deep (its condition stack): in debug mode, a task with 78
// bounds-checked accesses reported an index out of bounds that was not. A
// break nests nothing.
void TaskEmitter::begin_stoppable_body() {
  stopped_ = m_.local_variable(m_.type_bool());
  m_.store(stopped_, m_.constant_bool(false));
  // llvmpipe counts two passes for this loop too.
  if (options_.max_loop_iterations > 0) m_.store(back_edges_, u32c(2));
  begin_once(false);
}

void TaskEmitter::begin_once(bool continue_leaves) {
  const Id header = m_.new_label(), body = m_.new_label(), cont = m_.new_label(), merge = m_.new_label();
  m_.branch(header);
  m_.begin_block(header);
  m_.loop_merge(merge, cont);
  m_.branch(body);
  m_.begin_block(body);
  loops_.push_back({merge, continue_leaves ? merge : cont, header, cont});
}

void TaskEmitter::end_once() {
  const LoopTarget body = loops_.back();
  loops_.pop_back();
  if (m_.in_block()) m_.branch(body.merge);
  // The continue block is never reached: the body runs once.
  m_.begin_block(body.unreached);
  m_.branch(body.header);
  m_.begin_block(body.merge);
}

void TaskEmitter::stop_after_loop() {
  if (stopped_ == 0) return;
  const Id stop = m_.new_label(), go_on = m_.new_label(), stopped = m_.load(stopped_);
  m_.selection_merge(go_on);
  m_.branch_conditional(stopped, stop, go_on);
  m_.begin_block(stop);
  m_.branch(loops_.back().merge);
  m_.begin_block(go_on);
}

void TaskEmitter::emit_assert_check() {
  const Id failed = m_.compare(Op::OpINotEqual, m_.load(context_at(context::kAssertFlag)), u32c(0));
  const Id stop = m_.new_label(), merge = m_.new_label();
  m_.selection_merge(merge);
  m_.branch_conditional(failed, stop, merge);
  m_.begin_block(stop);
  m_.ret();
  m_.begin_block(merge);
}

// ---- tree memory ----------------------------------------------------------------

Id TaskEmitter::emit_tree_load(const ir::Stmt* s) {
  const DataType st = s->storage();
  const TreeKey tree = key_of(s);
  const Id address = value_as(s->address(), DataType::u32);
  // Runtime words other invocations change with atomics are read with an
  // atomic load (relaxed, device scope: docs/memory.md, "Memory ordering").
  const bool wide = bit_width(st) == 64;
  if (s->atomic_load() && wide) {  // one 64-bit atomic load (the verifier allows i64 and u64)
    const Id whole = m_.atomic_load(u64_pointer(tree, address), kScope, kRelaxed);
    const Id r = st == DataType::f64 ? m_.convert(Op::OpBitcast, type_of(st), whole) : whole;
    const DataType ct = compute_type(st);
    return ct == s->type() ? r : cast(r, ct, s->type());
  }
  const Id w = s->atomic_load() ? m_.atomic_load(word_pointer(tree, address), kScope, kRelaxed)
                                : m_.load(word_pointer(tree, address));
  Id r = 0;
  switch (st) {
    case DataType::u1:
      r = m_.compare(Op::OpINotEqual, op2(Op::OpBitwiseAnd, w, u32c(1)), u32c(0));
      break;
    case DataType::i8: case DataType::i16: case DataType::u8: case DataType::u16:
    case DataType::i32: case DataType::u32:
      r = wrap(w, st);
      break;
    case DataType::f32:
      r = m_.convert(Op::OpBitcast, m_.type_float(32), w);
      break;
    case DataType::f16:  // legalize made f16 storage u16 words
      throw InternalError("SPIR-V codegen: an f16 tree_load in " + what_ + " (legalize writes it as a u16 word)");
    case DataType::i64: case DataType::u64: case DataType::f64: {
      const Id hi = m_.load(word_pointer(tree, op2(Op::OpIAdd, address, u32c(1))));
      r = join_words(w, hi, st);
      break;
    }
    case DataType::unknown:
      throw InternalError("SPIR-V codegen: tree_load of unknown type in " + what_);
  }
  const DataType ct = compute_type(st);
  return ct == s->type() ? r : cast(r, ct, s->type());
}

void TaskEmitter::emit_tree_store(const ir::Stmt* s) {
  const DataType st = s->storage();
  const TreeKey tree = key_of(s);
  const Id address = value_as(s->address(), DataType::u32);
  const Id v = value_as(s->value(), compute_type(st));
  Id w = 0;
  switch (st) {
    case DataType::u1: w = m_.select(v, u32c(1), u32c(0)); break;
    case DataType::i8: case DataType::u8: w = op2(Op::OpBitwiseAnd, v, u32c(0xffu)); break;
    case DataType::i16: case DataType::u16: w = op2(Op::OpBitwiseAnd, v, u32c(0xffffu)); break;
    case DataType::i32: case DataType::u32: w = v; break;
    case DataType::f32: w = m_.convert(Op::OpBitcast, u32_type(), v); break;
    case DataType::f16:  // legalize made f16 storage u16 words
      throw InternalError("SPIR-V codegen: an f16 tree_store in " + what_ + " (legalize writes it as a u16 word)");
    case DataType::i64: case DataType::u64: case DataType::f64: {
      auto [lo, hi] = split_words(v);
      m_.store(word_pointer(tree, address), lo);
      m_.store(word_pointer(tree, op2(Op::OpIAdd, address, u32c(1))), hi);
      return;
    }
    case DataType::unknown:
      throw InternalError("SPIR-V codegen: tree_store of unknown type in " + what_);
  }
  m_.store(word_pointer(tree, address), w);
}

Id TaskEmitter::float_atomic_loop(ir::AtomicOp op, DataType t, Id pointer, Id value) {
  const Id word_type = m_.pointee_type(m_.type_of(pointer));
  const Id current = m_.local_variable(word_type);
  m_.store(current, m_.load(pointer));
  const Id header = m_.new_label(), body = m_.new_label(), cont = m_.new_label(), merge = m_.new_label();
  m_.branch(header);
  m_.begin_block(header);
  m_.loop_merge(merge, cont);
  m_.branch(body);
  m_.begin_block(body);
  const Id old_word = m_.load(current);
  const Id old = m_.convert(Op::OpBitcast, type_of(t), old_word);
  Id updated = 0;
  switch (op) {
    case ir::AtomicOp::add: updated = binary(ir::BinaryOp::add, t, old, value); break;
    case ir::AtomicOp::sub: updated = binary(ir::BinaryOp::sub, t, old, value); break;
    case ir::AtomicOp::exchange: updated = value; break;
    case ir::AtomicOp::min: case ir::AtomicOp::max:  // legalize made them compare-and-swap loops
    case ir::AtomicOp::bit_and: case ir::AtomicOp::bit_or: case ir::AtomicOp::bit_xor:
      throw InternalError(std::string("SPIR-V codegen: a float atomic ") + ir::op_name(op) + " in " + what_);
  }
  const Id new_word = m_.convert(Op::OpBitcast, word_type, updated);
  const Id seen = m_.atomic_compare_exchange(pointer, kScope, kRelaxed, kRelaxed, new_word, old_word);
  m_.store(current, seen);
  m_.branch_conditional(m_.compare(Op::OpIEqual, seen, old_word), merge, cont);
  m_.begin_block(cont);
  loop_back_edge(header, merge);
  m_.begin_block(merge);
  after_loop();
  return m_.convert(Op::OpBitcast, type_of(t), m_.load(current));
}

Id TaskEmitter::emit_tree_atomic(const ir::Stmt* s) {
  const DataType t = s->type();
  const ir::AtomicOp op = s->atomic_op();
  const TreeKey tree = key_of(s);
  const Id address = value_as(s->address(), DataType::u32);
  const Id v = value_as(s->value(), t);
  if (auto r = reductions_.find(s); r != reductions_.end()) {
    const Accumulator& a = accumulators_[r->second];
    const Id sum = is_float(a.type) ? op2(Op::OpFAdd, m_.load(a.var), v) : op2(Op::OpIAdd, m_.load(a.var), v);
    m_.store(a.var, sum);
    return constant(t, 0);  // unused
  }
  // A sum into one cell (Taichi's `total[None] += x`) that is not kept in a
  // register (the task also reads the cell, say).
  if (subgroup_sum(t) && s->reduction() != ir::Reduction::none) {
    add_once_per_subgroup(t, tree, address, v);
    return constant(t, 0);  // unused
  }
  return atomic_value(op, t, tree, address, v);
}

Id TaskEmitter::atomic_value(ir::AtomicOp op, DataType t, const TreeKey& tree, Id address, Id v) {
  switch (t) {
    case DataType::i32: case DataType::u32:
      return m_.atomic(integer_atomic(op, is_signed(t)), word_pointer(tree, address), kScope, kRelaxed, v);
    case DataType::i64: case DataType::u64:
      return m_.atomic(integer_atomic(op, is_signed(t)), u64_pointer(tree, address), kScope, kRelaxed, v);
    case DataType::f32: {
      if (op == ir::AtomicOp::exchange) {
        const Id old = m_.atomic(Op::OpAtomicExchange, word_pointer(tree, address), kScope, kRelaxed,
                                 m_.convert(Op::OpBitcast, u32_type(), v));
        return m_.convert(Op::OpBitcast, m_.type_float(32), old);
      }
      if (options_.features.atomic_float32_add && (op == ir::AtomicOp::add || op == ir::AtomicOp::sub)) {
        const Id addend = op == ir::AtomicOp::add ? v : m_.unary(Op::OpFNegate, v);
        return m_.atomic(Op::OpAtomicFAddEXT, float_pointer(tree, address), kScope, kRelaxed, addend);
      }
      return float_atomic_loop(op, t, word_pointer(tree, address), v);
    }
    case DataType::f64: {
      if (op == ir::AtomicOp::exchange) {
        const Id old = m_.atomic(Op::OpAtomicExchange, u64_pointer(tree, address), kScope, kRelaxed,
                                 m_.convert(Op::OpBitcast, m_.type_uint(64), v));
        return m_.convert(Op::OpBitcast, m_.type_float(64), old);
      }
      return float_atomic_loop(op, t, u64_pointer(tree, address), v);
    }
    default:
      break;
  }
  throw InternalError("SPIR-V codegen: tree_atomic of type " + std::string(type_name(t)) + " in " + what_);
}

Id TaskEmitter::emit_tree_cas(const ir::Stmt* s) {
  const DataType t = s->type();
  const Id address = value_as(s->address(), DataType::u32);
  const Id pointer = bit_width(t) == 64 ? u64_pointer(key_of(s), address) : word_pointer(key_of(s), address);
  if (!is_integral(t) || t == DataType::u1 || bit_width(t) < 32)
    throw InternalError("SPIR-V codegen: tree_cas of type " + std::string(type_name(t)) + " in " + what_);
  return m_.atomic_compare_exchange(pointer, kScope, kRelaxed, kRelaxed, value_as(s->desired(), t),
                                    value_as(s->expected(), t));
}

}  // namespace detail

// ---- the kernel ----------------------------------------------------------------

namespace {

// Raises the user error for the first value type or atomic the device lacks.
void check_features(const ir::Kernel& kernel, const DeviceFeatures& f, const std::string& target) {
  const std::string who = "kernel '" + kernel.name() + "'";
  DataType int64 = DataType::unknown;
  bool float64 = false;
  const ir::Stmt* atomic64 = nullptr;
  ir::walk(kernel.body(), [&](ir::Stmt* s) {
    for (DataType t : {s->type(), s->storage()}) {
      if ((t == DataType::i64 || t == DataType::u64) && int64 == DataType::unknown) int64 = t;
      if (t == DataType::f64) float64 = true;
    }
    const bool wide_atomic = s->kind() == ir::StmtKind::TreeAtomic || s->kind() == ir::StmtKind::TreeCas ||
                             (s->kind() == ir::StmtKind::TreeLoad && s->atomic_load());
    if (wide_atomic && bit_width(s->type()) == 64 && atomic64 == nullptr)
      atomic64 = s;
  });
  if (int64 != DataType::unknown && !f.shader_int64)
    throw Error(who + " uses " + std::string(type_name(int64)) +
                " values, which " + target + " does not support (shaderInt64)");
  if (float64 && !f.shader_float64)
    throw Error(who + " uses f64 values, which " + target + " does not support (shaderFloat64)");
  if (atomic64 != nullptr && !f.atomic_int64) {
    std::string what = atomic64->kind() == ir::StmtKind::TreeCas    ? "compare-and-swap"
                       : atomic64->kind() == ir::StmtKind::TreeLoad ? "atomic load"
                                                                    : "atomic " + std::string(ir::op_name(atomic64->atomic_op()));
    throw Error(who + " uses 64-bit atomics (" + what + " on " + std::string(type_name(atomic64->type())) +
                "), which " + target + " does not support (shaderBufferInt64Atomics)");
  }
}

}  // namespace

const ir::TargetOps& target_ops(bool int64) {
  // Nothing beyond the primitives, and 64-bit integers where the device has them.
  static const ir::TargetOps with_int64{.int64 = true}, without;
  return int64 ? with_int64 : without;
}

KernelModules generate_kernel(const ir::Kernel& input, const ir::SNodeForest& forest,
                              const CodegenOptions& options, uint32_t max_push_constant_bytes) {
  if (!ir::is_lowered(input.stage))
    throw InternalError("SPIR-V codegen: kernel '" + input.name() + "' is at stage " +
                        ir::stage_name(input.stage) + "; it takes lowered kernels");
  std::unique_ptr<ir::Kernel> copy;
  const ir::Kernel& kernel = ir::legal_form(input, target_ops(options.features.shader_int64), copy);
  check_features(kernel, options.features, options.target_name);
  KernelModules out;
  out.messages = kernel.messages;
  for (const ir::KernelArg& a : kernel.args()) {
    out.arg_offsets.push_back(out.arg_words);
    out.arg_words += static_cast<uint32_t>(storage_words(compute_type(a.type)));
  }
  // Grid bases need three more words.
  CodegenOptions task_options = options;
  task_options.grid = options.grid && context::push_constant_bytes(out.arg_words, true) <= max_push_constant_bytes;
  if (context::push_constant_bytes(out.arg_words) > max_push_constant_bytes)
    throw Error("kernel '" + kernel.name() + "' takes " + std::to_string(out.arg_words * 4) +
                " bytes of arguments (and 4 for its message base); this Vulkan device passes at most " +
                std::to_string(max_push_constant_bytes) +
                " (maxPushConstantsSize): pass fewer or smaller arguments, or pass the values in a field");
  const ir::Block* body = kernel.body();
  for (size_t i = 0; i < body->size(); ++i) {
    const ir::Stmt* task = body->at(i);
    if (task->kind() != ir::StmtKind::Task)
      throw InternalError("SPIR-V codegen: kernel '" + kernel.name() + "' has a '" + ir::kind_name(task->kind()) +
                          "' outside a task");
    detail::TaskEmitter emitter(kernel, forest, task_options, out);
    out.tasks.push_back(emitter.emit(task, i));
  }
  return out;
}

}  // namespace grove::spirv
