// src/ir/verifier.cpp — structural and type checks of a kernel (docs/ir.md, "Stages").
//
// One walk in program order keeps the set of values visible at the current
// point (defined earlier in this block or an enclosing one) and the stack of
// enclosing loops. Operand pointers are looked up in the set of the kernel's
// statements before they are dereferenced, so a dangling operand is reported
// instead of read.
#include "ir/verifier.h"

#include <unordered_set>

#include "ir/assert.h"
#include "ir/printer.h"
#include "ir/type_rules.h"

namespace grove::ir {

namespace {

// "{}" holes, read as format_print reads them: "{{" and "}}" are braces.
int count_placeholders(const std::string& text) {
  int n = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    const char c = text[i], next = text[i + 1];
    if ((c == '{' && next == '{') || (c == '}' && next == '}')) {
      ++i;
    } else if (c == '{' && next == '}') {
      ++n;
      ++i;
    }
  }
  return n;
}

std::string tn(DataType t) { return std::string(type_name(t)); }

class Verifier {
 public:
  Verifier(const Kernel& kernel, std::string_view pass) : kernel_(kernel), pass_(pass) {
    uint32_t n = 0;
    walk(kernel.body(), [&](Stmt* s) { numbers_.set(s, n++); });
    state_.assign(n, 0);
  }

  void run() {
    if (kernel_.body()->owner() != nullptr)
      fail(nullptr, "the kernel's body block has an owner statement");
    block(kernel_.body(), nullptr);
  }

 private:
  [[noreturn]] void fail(const Stmt* s, const std::string& problem) const {
    std::string msg = "IR verifier failed after pass '" + std::string(pass_) + "' in kernel '" +
                      kernel_.name() + "' (stage " + stage_name(kernel_.stage) + "): " + problem;
    if (s) msg += "\n  at: " + print_stmt(kernel_, s);
    msg += "\n  kernel:\n" + print_kernel(kernel_);
    throw InternalError(msg);
  }

  // Operand types are exact from the typed stage on (offloaded and lowered too).
  bool typed() const { return kernel_.stage != Stage::frontend; }

  std::string name(const Stmt* s) const { return print_stmt_ref(s); }
  std::string print_stmt_ref(const Stmt* s) const {
    // The `%N` of an operand as print_kernel shows it (its header line's prefix).
    std::string line = print_stmt(kernel_, s);
    size_t eq = line.find(" = ");
    return eq == std::string::npos ? "'" + std::string(kind_name(s->kind())) + "'"
                                   : line.substr(0, eq);
  }

  void block(const Block* b, const Stmt* owner) {
    if (b->owner() != owner) fail(owner, "a block's owner() is not the statement holding it");
    size_t mark = scope_.size();
    for (const auto& child : b->stmts()) {
      const Stmt* s = child.get();
      if (s->parent() != b) fail(s, "the statement's parent() is not the block holding it");
      placement(s, b);
      stmt(s);
      state(s) |= kDone;
      if (s->has_result()) {
        state(s) |= kVisible;
        scope_.push_back(s);
      }
    }
    while (scope_.size() > mark) {
      state(scope_.back()) &= static_cast<uint8_t>(~kVisible);
      scope_.pop_back();
    }
  }

  // ---- operands ----
  // Checks that `op` is a statement of this kernel defined before `s` in the
  // same or an enclosing block; returns it for further checks.
  const Stmt* defined(const Stmt* s, const Stmt* op, const char* role) const {
    if (op == nullptr) fail(s, std::string("its ") + role + " operand is null");
    if (!in_kernel(op))
      fail(s, std::string("its ") + role + " operand is not a statement of this kernel (removed?)");
    if (!(state(op) & kVisible)) {
      if (state(op) & kDone)
        fail(s, std::string("its ") + role + " operand " + name(op) +
                    " is defined in a block that does not enclose this use");
      fail(s, std::string("its ") + role + " operand " + name(op) + " is used before its definition");
    }
    if (op->kind() == StmtKind::TreeAtomic && op->reduction() != Reduction::none)
      fail(s, std::string("its ") + role + " operand " + name(op) + " is a tree_atomic marked '" +
                  reduction_name(op->reduction()) + "', whose old value is not kept");
    return op;
  }

  // A value operand: defined before, and a value (not a loop, not a variable).
  const Stmt* value(const Stmt* s, const Stmt* op, const char* role) const {
    if (op && in_kernel(op) && op->kind() == StmtKind::Alloca)
      fail(s, std::string("its ") + role + " operand " + name(op) +
                  " is an alloca (a variable), not a value; read it with local_load");
    if (op && in_kernel(op) && !op->has_result())
      fail(s, std::string("its ") + role + " operand " + name(op) + " is a '" +
                  kind_name(op->kind()) + "', which has no value");
    return defined(s, op, role);
  }

  const Stmt* alloca_operand(const Stmt* s, const Stmt* op) const {
    defined(s, op, "ptr");
    if (op->kind() != StmtKind::Alloca)
      fail(s, "its ptr operand " + name(op) + " is a '" + kind_name(op->kind()) +
                  "', not an alloca");
    return op;
  }

  // Typed stage: the operand has exactly type `t`.
  void expect_type(const Stmt* s, const Stmt* op, DataType t, const char* role) const {
    if (typed() && op->type() != t)
      fail(s, std::string("its ") + role + " operand " + name(op) + " has type " + tn(op->type()) +
                  " but must be " + tn(t));
  }

  const FieldDecl& field(const Stmt* s) const {
    int id = s->field();
    if (id < 0 || id >= kernel_.fields().size())
      fail(s, "field id " + std::to_string(id) + " is not in the kernel's field table (" +
                  std::to_string(kernel_.fields().size()) + " fields)");
    return kernel_.fields().get(id);
  }

  // Field indices (and, for stores and atomics, the value operand).
  const FieldDecl& field_access(const Stmt* s, bool has_value) {
    const FieldDecl& f = field(s);
    size_t want = static_cast<size_t>(f.ndim()) + (has_value ? 1 : 0);
    if (s->operands().size() != want)
      fail(s, "field @" + f.name + " has " + std::to_string(f.ndim()) + " dimension(s) but " +
                  std::to_string(s->operands().size() - (has_value ? 1 : 0)) +
                  " index(es) are given");
    for (const Stmt* i : s->indices()) {
      value(s, i, "index");
      expect_type(s, i, DataType::i32, "index");
    }
    return f;
  }

  void result_type(const Stmt* s, DataType want, const char* why) const {
    if (s->type() != want)
      fail(s, "its type is " + tn(s->type()) + " but must be " + tn(want) + " (" + why + ")");
  }

  // ---- stages and tasks ----
  // The stages run frontend -> typed -> offloaded (the `offload` pass: the
  // body becomes tasks) -> lowered (`lower_access`: field accesses and SNode
  // operations become tree memory), as ir.h orders them. So:
  //  * field_load/store/atomic and snode_op: every stage but lowered;
  //  * struct_for: frontend and typed; at offloaded only as the parallel loop
  //    of a struct_for task (lower_access turns it into a range_for);
  //  * tree_*: offloaded (the runtime's tasks, scratch values) and lowered;
  //  * from offloaded on, the kernel's body holds only tasks, and a task
  //    stands nowhere else.
  static bool before_lowering(Stage st) { return !is_lowered(st); }
  static bool before_offload(Stage st) { return st == Stage::frontend || st == Stage::typed; }

  // Whether `s` is the last statement of a parallel task (its parallel loop).
  static const Stmt* parallel_task_of_loop(const Stmt* s) {
    const Block* b = s->parent();
    const Stmt* owner = b ? b->owner() : nullptr;
    if (!owner || owner->kind() != StmtKind::Task || !is_parallel(owner->task_kind())) return nullptr;
    return b->at(b->size() - 1) == s ? owner : nullptr;
  }

  void placement(const Stmt* s, const Block* b) const {
    Stage st = kernel_.stage;
    auto misplaced = [&](const char* allowed) {
      fail(s, std::string("a '") + kind_name(s->kind()) + "' at stage " + stage_name(st) +
                  " (allowed only at stages " + allowed + ")");
    };
    if (s->tree_param() != -1) {
      const int p = s->tree_param();
      if (!is_tree_bound(s->kind())) fail(s, "a tree parameter on a statement that names no tree");
      if (p < 0 || p >= static_cast<int>(kernel_.tree_params.size()))
        fail(s, "tree parameter " + std::to_string(p) + ", but the kernel has " +
                    std::to_string(kernel_.tree_params.size()));
      if (is_tree_access(s->kind()) && kernel_.tree_params[static_cast<size_t>(p)].tree != s->tree())
        fail(s, "it names tree " + std::to_string(s->tree()) + " through tree parameter " + std::to_string(p) +
                    ", whose type is tree " + std::to_string(kernel_.tree_params[static_cast<size_t>(p)].tree));
    }
    // Legalize writes print and assert as records in the context, ended
    // by a stop (docs/ir.md, "Print and assert").
    const StmtKind k = s->kind();
    if ((k == StmtKind::Stop || k == StmtKind::MessageBase) && st != Stage::legal) misplaced("legal");
    if ((k == StmtKind::Print || k == StmtKind::Assert) && st == Stage::legal)
      misplaced("frontend, typed, offloaded and lowered");
    if ((k == StmtKind::SubgroupFirst || k == StmtKind::SubgroupElect) && before_lowering(st))
      misplaced("lowered and legal (the sparse runtime makes them)");
    switch (kind_category(s->kind())) {
      case StmtCategory::field:
      case StmtCategory::snode:
        if (!before_lowering(st)) misplaced("frontend, typed and offloaded");
        break;
      case StmtCategory::control:
        if (s->kind() != StmtKind::StructFor || before_offload(st)) break;
        if (const Stmt* task = parallel_task_of_loop(s);
            st != Stage::offloaded || !task || task->task_kind() != TaskKind::struct_for)
          misplaced("frontend and typed, and at offloaded as the loop of a struct_for task");
        break;
      case StmtCategory::tree:
      case StmtCategory::task:
        if (before_offload(st)) misplaced("offloaded and lowered");
        break;
      case StmtCategory::value:
      case StmtCategory::local:
      case StmtCategory::effect:
        break;
    }
    bool top = b == kernel_.body();
    if (s->kind() == StmtKind::Task) {
      if (!top) fail(s, "a 'task' nested in another statement (tasks stand only in the kernel's body)");
    } else if (top && !before_offload(st)) {
      fail(s, std::string("a '") + kind_name(s->kind()) + "' in the kernel's body at stage " +
                  stage_name(st) + " (the body holds only tasks)");
    }
  }

  // A parallel task: side-effect-free statements, then exactly one range_for,
  // last (before lowering, a struct_for task's loop is still its struct_for).
  void task_body(const Stmt* s) const {
    TaskKind kind = s->task_kind();
    if (!is_parallel(kind)) return;
    const Block* body = s->body();
    std::string what = std::string("a parallel '") + op_name(kind) + "' task";
    const Stmt* last = body->empty() ? nullptr : body->at(body->size() - 1);
    bool loop = last && (last->kind() == StmtKind::RangeFor ||
                         (last->kind() == StmtKind::StructFor && kind == TaskKind::struct_for &&
                          kernel_.stage == Stage::offloaded));
    if (!loop) fail(s, what + " must end with its range_for (the parallel loop)");
    const bool legal = kernel_.stage == Stage::legal;
    for (size_t i = 0; i + 1 < body->size(); ++i) {
      const Stmt* t = body->at(i);
      if (t->has_side_effects() && !(legal && local_only(t)))
        fail(t, what + " holds only side-effect-free statements before its range_for" +
                    std::string(legal ? " (and loops over local variables)" : "") + ", not a '" +
                    kind_name(t->kind()) + "'");
    }
  }

  // At stage legal, what legalize writes before a parallel loop may loop
  // (exact fmod): statements that change nothing but local variables.
  static bool local_only(const Stmt* s) {
    switch (s->kind()) {
      case StmtKind::LocalStore: case StmtKind::Break: case StmtKind::Continue:
      case StmtKind::While: case StmtKind::If:
        break;
      default:
        if (s->has_side_effects()) return false;
    }
    for (const auto& b : s->blocks())
      for (const auto& inner : b->stmts())
        if (!local_only(inner.get())) return false;
    return true;
  }

  // ---- statements ----
  void stmt(const Stmt* s) {
    StmtKind k = s->kind();
    int n = kind_operand_count(k);
    if (n >= 0 && static_cast<int>(s->operands().size()) != n)
      fail(s, std::string("'") + kind_name(k) + "' takes " + std::to_string(n) + " operand(s) but has " +
                  std::to_string(s->operands().size()));
    if (static_cast<int>(s->blocks().size()) != kind_block_count(k))
      fail(s, std::string("'") + kind_name(k) + "' must own " + std::to_string(kind_block_count(k)) +
                  " block(s) but owns " + std::to_string(s->blocks().size()));
    if (typed() && s->has_result() && (s->type() == DataType::unknown || s->type() == DataType::f16))
      fail(s, "a value of type " + tn(s->type()) + " at stage " + stage_name(kernel_.stage) +
                  " (values are never unknown or f16)");

    const bool known = value_stmt(s, k) || memory_stmt(s, k) || control_stmt(s, k);
    GROVE_ASSERT(known, std::string("the verifier checks no statement kind '") + kind_name(k) + "'");
  }

  // Values, locals and loop indices; false for another kind.
  bool value_stmt(const Stmt* s, StmtKind k) {
    switch (k) {
      case StmtKind::Const:
        if (s->type() == DataType::unknown || s->type() == DataType::f16)
          fail(s, "a constant of type " + tn(s->type()));
        break;
      case StmtKind::MessageBase:
        result_type(s, DataType::u32, "u32");
        break;
      case StmtKind::Arg: {
        int i = s->index();
        int count = static_cast<int>(kernel_.args().size());
        if (i < 0 || i >= count)
          fail(s, "argument index " + std::to_string(i) + " but the kernel has " +
                      std::to_string(count) + " argument(s)");
        result_type(s, compute_type(kernel_.args()[static_cast<size_t>(i)].type),
                    "the compute type of the argument's type");
        break;
      }
      case StmtKind::Unary: {
        const Stmt* x = value(s, s->operand(), "x");
        if (typed()) {
          UnaryOp op = s->unary_op();
          expect_type(s, x, s->type(), "x");
          result_type(s, unary_type(op, x->type()), "unary_type of its operand");
          if (needs_integers(op) && !is_integral(x->type()))
            fail(s, std::string("'") + op_name(op) + "' needs an integer operand");
        }
        break;
      }
      case StmtKind::Cast:
        value(s, s->operand(), "x");
        break;
      case StmtKind::Bitcast: {
        const Stmt* x = value(s, s->operand(), "x");
        const int width = bit_width(s->type());
        if ((width != 32 && width != 64) || s->type() == DataType::unknown)
          fail(s, "bitcast to " + std::string(type_name(s->type())) + "; it takes 32- and 64-bit types");
        else if (typed() && bit_width(x->type()) != width)
          fail(s, "bitcast of a " + std::string(type_name(x->type())) + " to " + std::string(type_name(s->type())) +
                      ", of another width");
        break;
      }
      case StmtKind::Binary: {
        const Stmt* a = value(s, s->lhs(), "lhs");
        const Stmt* b = value(s, s->rhs(), "rhs");
        if (typed()) {
          BinaryOp op = s->binary_op();
          DataType t = binary_operand_type(op, a->type(), b->type());
          expect_type(s, a, t, "lhs");
          expect_type(s, b, t, "rhs");
          result_type(s, binary_result_type(op, t, t), "binary_result_type of its operands");
          if (needs_integers(op) && !is_integral(t))
            fail(s, std::string("'") + op_name(op) + "' needs integer operands");
        }
        break;
      }
      case StmtKind::Select: {
        expect_type(s, value(s, s->cond(), "cond"), DataType::u1, "cond");
        expect_type(s, value(s, s->true_value(), "true_value"), s->type(), "true_value");
        expect_type(s, value(s, s->false_value(), "false_value"), s->type(), "false_value");
        break;
      }
      case StmtKind::Alloca:
        if (s->type() == DataType::f16) fail(s, "an alloca of the storage type f16 (use f32)");
        break;
      case StmtKind::LocalLoad:
        result_type(s, alloca_operand(s, s->ptr())->type(), "the alloca's type");
        break;
      case StmtKind::LocalStore: {
        const Stmt* ptr = alloca_operand(s, s->ptr());
        expect_type(s, value(s, s->value(), "value"), ptr->type(), "value");
        break;
      }
      case StmtKind::LoopIndex: {
        const Stmt* loop = s->loop();
        bool enclosing = false;
        for (const Stmt* l : loops_) enclosing = enclosing || l == loop;
        if (!enclosing || loop == nullptr ||
            (loop->kind() != StmtKind::RangeFor && loop->kind() != StmtKind::StructFor)) {
          std::string what = loop && in_kernel(loop) ? name(loop) : "operand";
          fail(s, "its loop " + what + " is not a range_for or struct_for enclosing it");
        }
        // A struct_for over an SNode: its own index space, at most 8 axes
        // (the forest is not consulted; the text form has none).
        int dim = loop->kind() == StmtKind::RangeFor ? 1
                  : loop->field() == -1              ? kMaxSNodeAxes
                                                     : field(loop).ndim();
        if (s->index() < 0 || s->index() >= dim)
          fail(s, "axis " + std::to_string(s->index()) + " but the loop has " + std::to_string(dim) +
                      " dimension(s)");
        result_type(s, DataType::i32, "loop indices are i32");
        break;
      }
      default:
        return false;
    }
    return true;
  }

  // Field, SNode and tree operations; false for another kind.
  bool memory_stmt(const Stmt* s, StmtKind k) {
    switch (k) {
      case StmtKind::FieldLoad: {
        const FieldDecl& f = field_access(s, false);
        result_type(s, compute_type(f.dtype), "the compute type of the field");
        break;
      }
      case StmtKind::FieldStore: {
        const FieldDecl& f = field_access(s, true);
        expect_type(s, value(s, s->value(), "value"), compute_type(f.dtype), "value");
        break;
      }
      case StmtKind::FieldAtomic: {
        const FieldDecl& f = field_access(s, true);
        result_type(s, compute_type(f.dtype), "the compute type of the field");
        expect_type(s, value(s, s->value(), "value"), compute_type(f.dtype), "value");
        if (typed() && needs_integers(s->atomic_op()) && !is_integral(f.dtype))
          fail(s, std::string("atomic '") + op_name(s->atomic_op()) + "' needs an integer field");
        break;
      }
      case StmtKind::SNodeOp: {
        snode_id(s, false);
        for (const Stmt* i : s->indices()) expect_type(s, value(s, i, "index"), DataType::i32, "index");
        switch (s->snode_op()) {
          case SNodeOpKind::is_active:
            result_type(s, DataType::u1, "is_active yields u1");
            break;
          case SNodeOpKind::append:
            if (s->values().empty()) fail(s, "append needs at least one value");
            for (const Stmt* v : s->values()) value(s, v, "value");
            result_type(s, DataType::i32, "append yields the i32 index it wrote");
            break;
          case SNodeOpKind::length:
            result_type(s, DataType::i32, "length yields i32");
            break;
          case SNodeOpKind::activate: case SNodeOpKind::deactivate:
            break;
        }
        break;
      }
      case StmtKind::TreeLoad:
        tree_address(s);
        storage_type(s);
        if (s->atomic_load() && s->storage() != DataType::i32 && s->storage() != DataType::u32 &&
            s->storage() != DataType::i64 && s->storage() != DataType::u64)
          fail(s, "an atomic tree_load of " + tn(s->storage()) + " (atomic loads are i32, u32, i64 or u64)");
        result_type(s, compute_type(s->storage()), "the compute type of its storage type");
        break;
      case StmtKind::TreeStore:
        tree_address(s);
        storage_type(s);
        expect_type(s, value(s, s->value(), "value"), compute_type(s->storage()), "value");
        break;
      case StmtKind::TreeAtomic: {
        tree_address(s);
        DataType t = s->type();
        if (t != DataType::i32 && t != DataType::u32 && t != DataType::i64 && t != DataType::u64 &&
            t != DataType::f32 && t != DataType::f64)
          fail(s, "a tree_atomic of type " + tn(t) + " (it must be i32, u32, i64, u64, f32 or f64)");
        if (needs_integers(s->atomic_op()) && !is_integral(t))
          fail(s, std::string("atomic '") + op_name(s->atomic_op()) + "' needs an integer type");
        expect_type(s, value(s, s->value(), "value"), t, "value");
        if (s->reduction() != Reduction::none &&
            (s->atomic_op() != AtomicOp::add || !s->address()->is_const()))
          fail(s, std::string("a tree_atomic marked '") + reduction_name(s->reduction()) +
                      "' must be an add to a constant address");
        break;
      }
      case StmtKind::TreeCas: {
        tree_address(s);
        DataType t = s->type();
        if (t != DataType::i32 && t != DataType::u32 && t != DataType::i64 && t != DataType::u64)
          fail(s, "a tree_cas of type " + tn(t) + " (it must be i32, u32, i64 or u64)");
        expect_type(s, value(s, s->expected(), "expected"), t, "expected");
        expect_type(s, value(s, s->desired(), "desired"), t, "desired");
        break;
      }
      default:
        return false;
    }
    return true;
  }

  // Loops, branches, print, assert and tasks; false for another kind.
  bool control_stmt(const Stmt* s, StmtKind k) {
    switch (k) {
      case StmtKind::RangeFor:
        expect_type(s, value(s, s->begin(), "begin"), DataType::i32, "begin");
        expect_type(s, value(s, s->end(), "end"), DataType::i32, "end");
        if (s->grid()) grid_loop(s);
        loop_body(s);
        break;
      case StmtKind::StructFor:
        if (s->field() == -1) {
          snode_id(s, false);
        } else {
          field(s);
        }
        loop_body(s);
        break;
      case StmtKind::If:
        expect_type(s, value(s, s->cond(), "cond"), DataType::u1, "cond");
        block(s->then_block(), s);
        block(s->else_block(), s);
        break;
      case StmtKind::While:
        loop_body(s);
        break;
      case StmtKind::Break:
      case StmtKind::Continue:
        check_jump(s);
        break;
      case StmtKind::Stop:
        break;
      case StmtKind::Print: {
        int holes = count_placeholders(s->text());
        if (holes != static_cast<int>(s->operands().size()))
          fail(s, "the format has " + std::to_string(holes) + " '{}' but there are " +
                      std::to_string(s->operands().size()) + " operand(s)");
        for (const Stmt* v : s->operands()) value(s, v, "printed");
        break;
      }
      case StmtKind::Assert: {
        if (s->operands().empty()) fail(s, "'assert' needs a condition operand");
        std::span<Stmt* const> values = s->operands().subspan(1);
        int holes = count_placeholders(s->text());
        if (holes != static_cast<int>(values.size()))
          fail(s, "the message has " + std::to_string(holes) + " '{}' but there are " +
                      std::to_string(values.size()) + " value(s)");
        expect_type(s, value(s, s->cond(), "cond"), DataType::u1, "cond");
        for (const Stmt* v : values) value(s, v, "reported");
        break;
      }
      case StmtKind::SubgroupFirst:
        result_type(s, value(s, s->operand(), "operand")->type(), "its operand's type");
        break;
      case StmtKind::SubgroupElect:
        result_type(s, DataType::u1, "u1");
        break;
      case StmtKind::Task:
        snode_id(s, true);
        task_body(s);
        block(s->body(), s);
        break;
      default:
        return false;
    }
    return true;
  }

  static constexpr int kMaxSNodeAxes = 8;

  // The SNode attribute: an id, or -1 where `none_ok`. (The forest is not
  // consulted: the text form has none.)
  void snode_id(const Stmt* s, bool none_ok) const {
    int id = s->snode();
    if (id < (none_ok ? -1 : 0))
      fail(s, "SNode id " + std::to_string(id) + " is not an SNode" + (none_ok ? " (nor -1, none)" : ""));
  }

  // The tree id and the u32 word address of a tree statement.
  void tree_address(const Stmt* s) const {
    if (s->tree() == kContextTree) {
      if (kernel_.stage != Stage::legal) fail(s, "the context (@context) is written only at stage legal");
      if (s->tree_param() != -1) fail(s, "the context (@context) through a tree parameter");
    } else if (s->tree() < 0) {
      fail(s, "tree id " + std::to_string(s->tree()) + " is not a tree");
    }
    if (s->field() < kRuntimeWords || s->field() >= kernel_.fields().size())
      fail(s, "it accesses field " + std::to_string(s->field()) + ", which the kernel's field table lacks");
    expect_type(s, value(s, s->address(), "address"), DataType::u32, "address");
  }

  void storage_type(const Stmt* s) const {
    if (s->storage() == DataType::unknown) fail(s, "a storage type of unknown");
  }

  void loop_body(const Stmt* s) {
    loops_.push_back(s);
    block(s->body(), s);
    loops_.pop_back();
  }

  // A parallel range_for: at the kernel's top level before offload, else the
  // range_for of a parallel task.
  bool parallel_range_for(const Stmt* s) const {
    if (s->kind() != StmtKind::RangeFor) return false;
    return before_offload(kernel_.stage) ? s->parent() == kernel_.body() : parallel_task_of_loop(s) != nullptr;
  }

  // A grid range_for (Stmt::grid): last in the body of a parallel or grid
  // range_for, after side-effect-free statements only.
  void grid_loop(const Stmt* s) const {
    const Block* b = s->parent();
    const Stmt* owner = b ? b->owner() : nullptr;
    if (!owner || owner->kind() != StmtKind::RangeFor || !(owner->grid() || parallel_range_for(owner)))
      fail(s, "a grid range_for outside the body of a parallel range_for (or of another grid range_for); "
              "a grid loop is an axis of a parallel loop");
    if (b->at(b->size() - 1) != s) fail(s, "a grid range_for must be the last statement of its loop's body");
    for (size_t i = 0; i + 1 < b->size(); ++i)
      if (b->at(i)->has_side_effects())
        fail(b->at(i), std::string("a '") + kind_name(b->at(i)->kind()) +
                           "' before a grid range_for (only side-effect-free statements may stand before it)");
  }

  // break/continue: the innermost loop must be a while or a serial range_for.
  // `continue` ends an iteration of any loop (a parallel one too, as in
  // Taichi); `break` cannot leave a loop whose iterations run in parallel.
  void check_jump(const Stmt* s) const {
    const char* what = kind_name(s->kind());
    if (loops_.empty()) fail(s, std::string("'") + what + "' outside any loop");
    if (s->kind() == StmtKind::Continue) return;
    const Stmt* loop = loops_.back();
    if (loop->kind() == StmtKind::StructFor)
      fail(s, std::string("'") + what + "' directly inside a struct_for, which runs in parallel");
    if (loop->kind() == StmtKind::RangeFor && loop->parent() == kernel_.body())
      fail(s, std::string("'") + what +
                  "' directly inside a top-level range_for, which runs in parallel");
    if (loop->kind() == StmtKind::RangeFor && loop->grid())
      fail(s, std::string("'") + what + "' directly inside a grid range_for, whose iterations run in parallel");
    const Stmt* task = parallel_task_of_loop(loop);
    if (loop->kind() == StmtKind::RangeFor && task)
      fail(s, std::string("'") + what + "' directly inside the range_for of a parallel '" +
                  op_name(task->task_kind()) + "' task, which runs in parallel");
  }

  const Kernel& kernel_;
  std::string_view pass_;
  // Every statement of the kernel, numbered in program order (without a
  // map: the verifier runs after every pass in tests, on kernels of
  // thousands of statements), and its state by number. Printing renumbers,
  // which only a failure does, after its last use of these.
  Numbering numbers_;
  std::vector<uint8_t> state_;
  static constexpr uint8_t kDone = 1;     // checked
  static constexpr uint8_t kVisible = 2;  // a value usable at this point
  std::vector<const Stmt*> scope_;        // the visible values in definition order, to pop blocks
  bool in_kernel(const Stmt* s) const { return numbers_.has(s); }
  uint8_t state(const Stmt* s) const { return state_[numbers_.get(s)]; }
  uint8_t& state(const Stmt* s) { return state_[numbers_.get(s)]; }
  std::vector<const Stmt*> loops_;           // enclosing loops, innermost last
};

}  // namespace

void verify(const Kernel& kernel, std::string_view after_pass) {
  Verifier(kernel, after_pass).run();
}

}  // namespace grove::ir
