// src/ir/interpreter.cpp — executes IR statement by statement.
#include "ir/interpreter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/eval.h"
#include "ir/type_rules.h"
#include "runtime/core/context_records.h"

namespace grove::ir {

namespace {

enum class Flow { normal, brk, cont, stop };

// One operand: its slot and the conversion applied before use.
struct Operand {
  int slot = -1;
  DataType from = DataType::unknown;
  DataType to = DataType::unknown;
};

struct Instr {
  const Stmt* s = nullptr;
  int dst = -1;  // result slot (loops: first index slot)
  std::vector<Operand> ops;
  std::vector<std::vector<Instr>> blocks;
  DataType compute = DataType::unknown;  // the type the op works in
  // Fields:
  const FieldDecl* field = nullptr;
  int tree = -1;
  int ndim = 0;
  // Print:
  std::vector<DataType> print_types;
};

}  // namespace

struct Interpreter::Impl {
  const Kernel& kernel;
  std::vector<Instr> body;
  int num_slots = 0;
  std::unordered_map<const Stmt*, int> slots;
  // A legal kernel's primitives keep preconditions (legalize.h) that the
  // interpreter checks, as a test of legalize: it computes the defined
  // values anyway, where a target's primitive would not.
  const bool legal;

  explicit Impl(const Kernel& k) : kernel(k), legal(k.stage == Stage::legal) { body = compile_block(k.body()); }

  Operand operand(const Stmt* s, DataType to) {
    auto it = slots.find(s);
    GROVE_ASSERT(it != slots.end(), std::string("operand '") + kind_name(s->kind()) +
                                        "' used before it is defined in kernel '" + kernel.name() + "'");
    return {it->second, s->type(), to == DataType::unknown ? s->type() : to};
  }

  std::vector<Instr> compile_block(const Block* block) {
    std::vector<Instr> out;
    out.reserve(block->size());
    for (const auto& up : block->stmts()) out.push_back(compile(up.get()));
    return out;
  }

  Instr compile(const Stmt* s) {
    Instr in;
    in.s = s;
    using K = StmtKind;
    switch (s->kind()) {
      case K::Const: case K::Arg: case K::Alloca: case K::Break: case K::Continue:
      case K::While: case K::Stop: case K::MessageBase:
        break;
      case K::Unary: {
        // logic_not tests its operand against zero in the operand's own type.
        DataType t = s->unary_op() == UnaryOp::logic_not ? s->operand()->type()
                                                        : unary_type(s->unary_op(), s->operand()->type());
        in.compute = t;
        in.ops.push_back(operand(s->operand(), t));
        break;
      }
      case K::Cast: case K::Bitcast: case K::SubgroupFirst:
        in.ops.push_back(operand(s->operand(), DataType::unknown));
        break;
      case K::SubgroupElect:
        break;
      case K::Binary: {
        DataType t = binary_operand_type(s->binary_op(), s->lhs()->type(), s->rhs()->type());
        in.compute = t;
        in.ops.push_back(operand(s->lhs(), t));
        in.ops.push_back(operand(s->rhs(), t));
        break;
      }
      case K::Select:
        in.ops.push_back(operand(s->cond(), DataType::u1));
        in.ops.push_back(operand(s->true_value(), s->type()));
        in.ops.push_back(operand(s->false_value(), s->type()));
        break;
      case K::LocalLoad:
        in.ops.push_back(operand(s->ptr(), DataType::unknown));
        break;
      case K::LocalStore:
        in.ops.push_back(operand(s->ptr(), DataType::unknown));
        in.ops.push_back(operand(s->value(), s->ptr()->type()));
        break;
      case K::FieldLoad: case K::FieldStore: case K::FieldAtomic: {
        in.field = &kernel.fields().get(s->field());
        in.ndim = in.field->ndim();
        in.compute = compute_type(in.field->dtype);
        for (const Stmt* idx : s->indices()) in.ops.push_back(operand(idx, DataType::i64));
        if (s->kind() != K::FieldLoad) in.ops.push_back(operand(s->value(), in.compute));
        break;
      }
      case K::RangeFor:
        in.ops.push_back(operand(s->begin(), DataType::i64));
        in.ops.push_back(operand(s->end(), DataType::i64));
        break;
      case K::StructFor:
        if (s->field() < 0)
          throw InternalError("kernel '" + kernel.name() + "': a struct_for over an SNode runs only after lowering");
        in.field = &kernel.fields().get(s->field());
        in.ndim = in.field->ndim();
        break;
      case K::LoopIndex:
        in.ops.push_back(operand(s->loop(), DataType::unknown));
        break;
      case K::If:
        in.ops.push_back(operand(s->cond(), DataType::u1));
        break;
      case K::TreeLoad:
        in.ops.push_back(operand(s->address(), DataType::u32));
        break;
      case K::TreeStore:
        in.ops.push_back(operand(s->address(), DataType::u32));
        in.ops.push_back(operand(s->value(), compute_type(s->storage())));
        break;
      case K::TreeAtomic:
        in.ops.push_back(operand(s->address(), DataType::u32));
        in.ops.push_back(operand(s->value(), s->type()));
        break;
      case K::TreeCas:
        in.ops.push_back(operand(s->address(), DataType::u32));
        in.ops.push_back(operand(s->expected(), s->type()));
        in.ops.push_back(operand(s->desired(), s->type()));
        break;
      case K::Task:
        break;
      case K::SNodeOp:
        throw InternalError("kernel '" + kernel.name() + "': snode_op runs only after lower_access");
      case K::Assert:
        in.ops.push_back(operand(s->cond(), DataType::u1));
        for (size_t n = 1; n < s->operands().size(); ++n) {
          in.ops.push_back(operand(s->operands()[n], DataType::unknown));
          in.print_types.push_back(s->operands()[n]->type());
        }
        break;
      case K::Print:
        for (const Stmt* v : s->operands()) {
          in.ops.push_back(operand(v, DataType::unknown));
          in.print_types.push_back(v->type());
        }
        break;
    }
    if (s->has_result() || s->kind() == K::RangeFor || s->kind() == K::StructFor) {
      in.dst = num_slots;
      int width = s->kind() == K::StructFor ? std::max(1, in.ndim) : 1;
      num_slots += width;
      slots[s] = in.dst;
    }
    for (const auto& b : s->blocks()) in.blocks.push_back(compile_block(b.get()));
    return in;
  }
};

namespace {

struct Frame {
  const Interpreter::Impl* impl;
  std::span<const uint64_t> args;
  InterpreterEnv* env;
  std::vector<uint64_t> slots;
  size_t task_counter = 0;
  // A legal kernel's context buffer (its print and assert records): the
  // header, then the print ring.
  std::vector<uint32_t> context;

  uint64_t get(const Operand& op) const {
    uint64_t v = slots[static_cast<size_t>(op.slot)];
    return op.from == op.to ? v : eval_cast(op.from, op.to, v);
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw KernelError("kernel '" + impl->kernel.name() + "': " + message);
  }

  // Word address of a field element; checks bounds in debug mode.
  int64_t address(const Instr& in, std::span<uint32_t>& words) {
    int64_t index[kMaxAxes] = {};
    bool bad = false;  // checked only in debug mode
    for (int a = 0; a < in.ndim; ++a) {
      index[a] = bits_to_int(DataType::i64, get(in.ops[static_cast<size_t>(a)]));
      const int64_t v = index[a] - in.field->offset_of(a);
      if (v < 0 || v >= in.field->shape[static_cast<size_t>(a)]) bad = true;
    }
    int place = env->snodes->place_of(in.field->id);
    GROVE_ASSERT(place >= 0, "field '" + in.field->name + "' is not placed");
    const SNodeDecl& leaf = env->snodes->snode(place);
    // The indices written (one per axis the path splits, offset included)
    // onto the physical axes the tree is addressed by.
    int64_t physical[kMaxAxes] = {};
    const std::vector<int> axes = leaf.axes();
    for (int a = 0; a < in.ndim; ++a)
      physical[axes[static_cast<size_t>(a)]] = index[a] - in.field->offset_of(a);
    words = env->buffer(leaf.tree, in.s->tree_param());
    // Without debug mode an out-of-bounds index wraps inside the field's
    // outermost node (dense_address reduces every local index modulo its
    // extent), so it never leaves the tree's buffer.
    if (bad && env->debug) {
      std::ostringstream os;
      os << "field '" << in.field->name << "' has shape (";
      for (int a = 0; a < in.ndim; ++a) os << (a ? ", " : "") << in.field->shape[static_cast<size_t>(a)];
      os << ")";
      if (in.field->has_offset()) {
        os << " and offset (";
        for (int a = 0; a < in.ndim; ++a) os << (a ? ", " : "") << in.field->offset_of(a);
        os << ")";
      }
      os << "; index (";
      for (int a = 0; a < in.ndim; ++a) os << (a ? ", " : "") << index[a];
      os << ") is out of bounds";
      for (int a = 0; a < in.ndim; ++a)
        if (index[a] - in.field->offset_of(a) < 0 ||
            index[a] - in.field->offset_of(a) >= in.field->shape[static_cast<size_t>(a)]) {
          os << " on axis " << a;
          break;
        }
      fail(os.str() + " (debug mode)");
    }
    const std::span<uint32_t> w = words;
    return env->snodes->find_element(in.field->id, physical, [&w](int64_t a) { return w[static_cast<size_t>(a)]; });
  }

  [[noreturn]] void broken(const Stmt* s, const std::string& what) const {
    throw InternalError("kernel '" + impl->kernel.name() + "' at stage legal: a '" + kind_name(s->kind()) + "' " + what +
                        ", which legalize should have guarded (legalize.h)");
  }

  void check_binary(const Stmt* s, DataType t, uint64_t a, uint64_t b) const {
    if (!is_integral(t) || t == DataType::u1) return;
    const BinaryOp op = s->binary_op();
    const int64_t sb = bits_to_int(t, b);
    if (op == BinaryOp::div || op == BinaryOp::mod) {
      const bool is_min = is_signed(t) && a == (uint64_t{1} << (bit_width(t) - 1));
      if (b == 0) broken(s, std::string(op_name(op)) + " by 0");
      if (is_signed(t) && sb == -1 && (op == BinaryOp::mod || is_min)) broken(s, std::string(op_name(op)) + " by -1");
    }
    if ((op == BinaryOp::shl || op == BinaryOp::shr) && b >= static_cast<uint64_t>(bit_width(t)))
      broken(s, "shift by " + std::to_string(b) + " of a " + std::string(type_name(t)));
  }

  void check_cast(const Stmt* s, uint64_t x) const {
    const DataType from = s->operand()->type(), to = s->type();
    if (!is_float(from) || is_float(to) || to == DataType::u1) return;
    const double v = std::trunc(bits_to_double(from, x));
    const bool fits = is_signed(to) ? v >= -std::ldexp(1.0, bit_width(to) - 1) && v < std::ldexp(1.0, bit_width(to) - 1)
                                    : v >= 0.0 && v < std::ldexp(1.0, bit_width(to));
    if (!fits) broken(s, "cast of " + format_value(from, x) + " to " + std::string(type_name(to)));
  }

  std::span<uint32_t> tree(const Stmt* s, int64_t address, int words) {
    std::span<uint32_t> w = s->tree() == kContextTree ? std::span<uint32_t>(context)
                                                      : env->buffer(s->tree(), s->tree_param());
    if (address < 0 || static_cast<size_t>(address + words) > w.size())
      throw InternalError("kernel '" + impl->kernel.name() + "' accessed word " + std::to_string(address) +
                          " of tree " + std::to_string(s->tree()) + ", which has " +
                          std::to_string(w.size()) + " words");
    return w;
  }

  Flow exec_block(const std::vector<Instr>& block) {
    for (const Instr& in : block) {
      Flow f = exec(in);
      if (f != Flow::normal) return f;
    }
    return Flow::normal;
  }

  Flow exec(const Instr& in) {
    const Stmt* s = in.s;
    auto set = [&](uint64_t v) { slots[static_cast<size_t>(in.dst)] = v; };
    using K = StmtKind;
    switch (s->kind()) {
      case K::Const: set(s->bits()); break;
      case K::Arg: set(args[static_cast<size_t>(s->index())]); break;
      case K::Unary: {
        uint64_t r = eval_unary(s->unary_op(), in.compute, get(in.ops[0]));
        DataType rt = s->unary_op() == UnaryOp::logic_not ? DataType::u1 : in.compute;
        set(rt == s->type() ? r : eval_cast(rt, s->type(), r));
        break;
      }
      case K::Cast:
        if (impl->legal) check_cast(s, get(in.ops[0]));
        set(eval_cast(in.ops[0].from, s->type(), get(in.ops[0])));
        break;
      case K::Bitcast: set(eval_bitcast(s->type(), get(in.ops[0]))); break;
      case K::Binary: {
        if (impl->legal) check_binary(s, in.compute, get(in.ops[0]), get(in.ops[1]));
        uint64_t r = eval_binary(s->binary_op(), in.compute, get(in.ops[0]), get(in.ops[1]));
        DataType rt = binary_result_type(s->binary_op(), in.compute, in.compute);
        set(rt == s->type() ? r : eval_cast(rt, s->type(), r));
        break;
      }
      case K::Select: set(get(in.ops[0]) ? get(in.ops[1]) : get(in.ops[2])); break;
      case K::Alloca: set(0); break;
      case K::LocalLoad: set(get(in.ops[0])); break;
      case K::LocalStore: slots[static_cast<size_t>(in.ops[0].slot)] = get(in.ops[1]); break;
      case K::FieldLoad: {
        // The frontend stage reads through the host reader (inactive: 0).
        std::span<uint32_t> words;
        int64_t a = address(in, words);
        set(a < 0 ? 0 : load_element(words, a, in.field->dtype));
        break;
      }
      case K::FieldStore: {
        std::span<uint32_t> words;
        int64_t a = address(in, words);
        if (a < 0) fail("writing an inactive sparse cell needs the lowered IR (the frontend-stage interpreter cannot activate)");
        store_element(words, a, in.field->dtype, get(in.ops.back()));
        break;
      }
      case K::FieldAtomic: {
        std::span<uint32_t> words;
        int64_t a = address(in, words);
        if (a < 0) fail("an atomic on an inactive sparse cell needs the lowered IR");
        uint64_t old = load_element(words, a, in.field->dtype);
        store_element(words, a, in.field->dtype,
                      eval_atomic(s->atomic_op(), in.compute, old, get(in.ops.back())));
        set(old);
        break;
      }
      case K::RangeFor: {
        int64_t b = bits_to_int(DataType::i64, get(in.ops[0]));
        int64_t e = bits_to_int(DataType::i64, get(in.ops[1]));
        for (int64_t v = b; v < e; ++v) {
          set(int_to_bits(DataType::i32, v));
          const Flow f = exec_block(in.blocks[0]);
          if (f == Flow::stop) return f;
          if (f == Flow::brk) break;
        }
        break;
      }
      case K::StructFor: {
        // Dense trees: every cell of the field's index space, row-major.
        const auto& shape = in.field->shape;
        int64_t total = 1;
        for (int64_t e : shape) total *= e;
        std::vector<int64_t> idx(shape.size(), 0);
        for (int64_t n = 0; n < total; ++n) {
          for (size_t a = 0; a < idx.size(); ++a)
            slots[static_cast<size_t>(in.dst) + a] =
                int_to_bits(DataType::i32, idx[a] + in.field->offset_of(static_cast<int>(a)));
          if (exec_block(in.blocks[0]) == Flow::stop) return Flow::stop;
          for (size_t a = idx.size(); a-- > 0;) {
            if (++idx[a] < shape[a]) break;
            idx[a] = 0;
          }
        }
        break;
      }
      case K::LoopIndex:
        set(slots[static_cast<size_t>(in.ops[0].slot + s->index())]);
        break;
      case K::If: {
        Flow f = exec_block(in.blocks[get(in.ops[0]) ? 0 : 1]);
        if (f != Flow::normal) return f;
        break;
      }
      case K::While:
        for (;;) {
          const Flow f = exec_block(in.blocks[0]);
          if (f == Flow::stop) return f;
          if (f == Flow::brk) break;
        }
        break;
      case K::Break: return Flow::brk;
      case K::Continue: return Flow::cont;
      // The failed assertion's record is in the context: the run ends
      // (Interpreter::run reports it).
      case K::Stop: return Flow::stop;
      case K::MessageBase: set(0); break;  // the run registers its messages from id 0
      // One invocation at a time: a subgroup of one.
      case K::SubgroupFirst: set(get(in.ops[0])); break;
      case K::SubgroupElect: set(1); break;
      case K::TreeLoad: {
        int64_t a = static_cast<int64_t>(get(in.ops[0]));
        set(load_element(tree(s, a, storage_words(s->storage())), a, s->storage()));
        break;
      }
      case K::TreeStore: {
        int64_t a = static_cast<int64_t>(get(in.ops[0]));
        store_element(tree(s, a, storage_words(s->storage())), a, s->storage(), get(in.ops[1]));
        break;
      }
      case K::TreeAtomic: {
        int64_t a = static_cast<int64_t>(get(in.ops[0]));
        std::span<uint32_t> w = tree(s, a, storage_words(s->type()));
        uint64_t old = load_element(w, a, s->type());
        store_element(w, a, s->type(), eval_atomic(s->atomic_op(), s->type(), old, get(in.ops[1])));
        set(old);
        break;
      }
      case K::TreeCas: {
        int64_t a = static_cast<int64_t>(get(in.ops[0]));
        std::span<uint32_t> w = tree(s, a, storage_words(s->type()));
        uint64_t old = load_element(w, a, s->type());
        if (old == get(in.ops[1])) store_element(w, a, s->type(), get(in.ops[2]));
        set(old);
        break;
      }
      case K::Task: {
        size_t index = task_counter++;
        if (env->run_task && !env->run_task(index)) break;
        if (!env->task_time) return exec_block(in.blocks[0]) == Flow::stop ? Flow::stop : Flow::normal;
        const auto start = std::chrono::steady_clock::now();
        const Flow f = exec_block(in.blocks[0]);
        env->task_time(index, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        if (f == Flow::stop) return f;
        break;
      }
      case K::SNodeOp:
        break;  // rejected when the kernel was prepared
      case K::Assert:
        if (!get(in.ops[0])) {
          std::vector<std::string> values;
          for (size_t n = 1; n < in.ops.size(); ++n)
            values.push_back(format_value(in.print_types[n - 1], get(in.ops[n])));
          fail(format_print(s->text(), values));
        }
        break;
      case K::Print: {
        std::vector<std::string> values;
        for (size_t n = 0; n < in.ops.size(); ++n)
          values.push_back(format_value(in.print_types[n], get(in.ops[n])));
        std::string text = format_print(s->text(), values);
        if (env->print) env->print(text);
        break;
      }
    }
    return Flow::normal;
  }
};

}  // namespace

Interpreter::Interpreter(const Kernel& kernel) : impl_(std::make_unique<Impl>(kernel)) {}
Interpreter::~Interpreter() = default;

void Interpreter::run(std::span<const uint64_t> args, InterpreterEnv& env) const {
  GROVE_ASSERT(args.size() == impl_->kernel.args().size(), "argument count mismatch");
  Frame frame{impl_.get(), args, &env, std::vector<uint64_t>(static_cast<size_t>(impl_->num_slots), 0), 0, {}};
  const Kernel& k = impl_->kernel;
  if (k.messages.empty()) {
    frame.exec_block(impl_->body);
    return;
  }
  // A legal kernel writes its prints and assertions as records (legalize):
  // the host side every device shares formats them.
  namespace ctx = rt::context;
  frame.context.assign(ctx::kHeaderWords + rt::kInitialPrintRingWords, 0);
  frame.context[ctx::kPrintCapacity] = rt::kInitialPrintRingWords;
  frame.exec_block(impl_->body);
  rt::ContextRecords records("the interpreter", env.print);
  rt::KernelPlan plan;
  plan.name = k.name();
  plan.prints = true;
  plan.messages = k.messages;
  records.add(plan);
  records.launched(plan);
  const uint32_t* header = frame.context.data();
  const size_t used = std::min<size_t>(header[ctx::kPrintHead], rt::kInitialPrintRingWords);
  records.print(header, std::span<const uint32_t>(header + ctx::kHeaderWords, used), rt::kInitialPrintRingWords);
  records.raise_assertion(header);
}

}  // namespace grove::ir
