// src/ir/printer.cpp — writes kernels and modules in the textual form of docs/ir.md.
//
// Choices the parser mirrors (parser.cpp):
//  * Values and loops are numbered %0, %1, ... in program order, a statement
//    before the statements of its blocks; the numbers are recomputed at
//    every print, so they never depend on pointer values.
//  * Floats print in the shortest form that reads back to the same bits
//    (std::to_chars). A NaN prints as `nan` or `-nan`: its payload is not
//    kept (the parser makes the canonical quiet NaN of that sign).
//  * Names (`@field`, `@kernel`, argument names) print bare when they consist
//    of letters, digits, `_` and `.` (an argument name must not start with a
//    digit); anything else prints as a quoted string with C escapes.
//  * A module declares only the fields its kernels use, in field-id order.
//  * SNodes print as `$S<n>` (`$-1`: none), trees as `@t<n>`; tree_store
//    always prints `as <storage>`, tree_load only when the storage type
//    differs from its result type.
#include "ir/printer.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>

#include "ir/assert.h"

namespace grove::ir {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

void append_quoted(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

// `@name` of fields and kernels: bare when every character is a name character.
void append_global(std::string& out, std::string_view name) {
  out += '@';
  if (!name.empty() && std::all_of(name.begin(), name.end(), is_name_char)) {
    out += name;
  } else {
    append_quoted(out, name);
  }
}

// Argument names: bare when they look like an identifier.
void append_arg_name(std::string& out, std::string_view name) {
  bool bare = !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
              std::all_of(name.begin(), name.end(), is_name_char);
  if (bare) {
    out += name;
  } else {
    append_quoted(out, name);
  }
}

template <typename F>
void append_float(std::string& out, F value) {
  if (std::isnan(value)) {
    out += std::signbit(value) ? "-nan" : "nan";
    return;
  }
  char buf[64];
  std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, r.ptr);
}

void append_const(std::string& out, const Stmt* s) {
  DataType t = s->type();
  if (t == DataType::f64) {
    append_float(out, std::bit_cast<double>(s->bits()));
  } else if (t == DataType::f32) {
    append_float(out, std::bit_cast<float>(static_cast<uint32_t>(s->bits())));
  } else if (is_signed(t)) {
    out += std::to_string(s->const_int());
  } else if (is_integral(t)) {
    int w = bit_width(t);
    uint64_t v = w >= 64 ? s->bits() : s->bits() & ((uint64_t{1} << w) - 1);
    out += std::to_string(v);
  } else {
    // Not a value type (the builder never makes one); keep the bits visible.
    out += std::to_string(s->bits());
  }
}

// `$S<n>` names SNode n; a negative id (-1: none) prints as `$<n>`, e.g. `$-1`.
void append_snode(std::string& out, int id) {
  out += id >= 0 ? "$S" : "$";
  out += std::to_string(id);
}

// `@t<n>` names tree n; a negative id (invalid, the verifier reports it) is
// quoted, `@"t-1"`, so that it still reads back.
void append_tree(std::string& out, int id) {
  if (id == kContextTree) {
    out += "@context";
  } else if (id >= 0) {
    out += "@t" + std::to_string(id);
  } else {
    out += '@';
    append_quoted(out, "t" + std::to_string(id));
  }
}

class Printer {
 public:
  // `number`: number the kernel's values (else every value prints `%?`).
  explicit Printer(const Kernel& kernel, bool number = true) : kernel_(kernel) {
    if (!number) return;
    walk(kernel.body(), [&](Stmt* s) {
      if (numbered(s)) numbers_.set(s, next_++);
    });
  }

  static bool numbered(const Stmt* s) {
    return s->has_result() || s->kind() == StmtKind::RangeFor || s->kind() == StmtKind::StructFor;
  }

  void kernel(std::string& out) const {
    out += "kernel ";
    append_global(out, kernel_.name());
    out += '(';
    for (size_t i = 0; i < kernel_.args().size(); ++i) {
      if (i) out += ", ";
      append_arg_name(out, kernel_.args()[i].name);
      out += ": ";
      out += type_name(kernel_.args()[i].type);
    }
    for (size_t i = 0; i < kernel_.tree_params.size(); ++i) {
      if (i || !kernel_.args().empty()) out += ", ";
      append_arg_name(out, kernel_.tree_params[i].name);
      out += ": tree ";
      out += std::to_string(kernel_.tree_params[i].tree);
    }
    out += ") stage ";
    out += stage_name(kernel_.stage);
    for (const rt::MessagePlan& m : kernel_.messages) {
      out += "\n  message " + std::to_string(m.id) + (m.is_assert ? " assert " : " print ");
      append_quoted(out, m.format);
      for (DataType t : m.types) {
        out += ' ';
        out += type_name(t);
      }
    }
    out += kernel_.messages.empty() ? " {\n" : "\n{\n";
    block(out, kernel_.body(), 1);
    out += "}\n";
  }

  // One statement and (when `nested`) its blocks, each line indented.
  void stmt(std::string& out, const Stmt* s, int depth, bool nested) const {
    out.append(static_cast<size_t>(depth) * 2, ' ');
    if (numbered(s)) {
      value(out, s);
      out += " = ";
    }
    out += kind_name(s->kind());
    switch (s->kind()) {
      case StmtKind::Const:
        type(out, s);
        out += ' ';
        append_const(out, s);
        break;
      case StmtKind::Arg:
        type(out, s);
        out += ' ';
        out += std::to_string(s->index());
        break;
      case StmtKind::Unary:
        out += ' ';
        out += op_name(s->unary_op());
        type(out, s);
        operand(out, s->operand());
        break;
      case StmtKind::Cast: case StmtKind::Bitcast: case StmtKind::SubgroupFirst:
        type(out, s);
        operand(out, s->operand());
        break;
      case StmtKind::Binary:
        out += ' ';
        out += op_name(s->binary_op());
        type(out, s);
        operand(out, s->lhs());
        operand(out, s->rhs());
        break;
      case StmtKind::Select:
        type(out, s);
        operand(out, s->cond());
        operand(out, s->true_value());
        operand(out, s->false_value());
        break;
      case StmtKind::Alloca:
        type(out, s);
        break;
      case StmtKind::LocalLoad:
        type(out, s);
        operand(out, s->ptr());
        break;
      case StmtKind::LocalStore:
        operand(out, s->ptr());
        operand(out, s->value());
        break;
      case StmtKind::FieldLoad:
        type(out, s);
        field_access(out, s);
        break;
      case StmtKind::FieldStore:
        field_access(out, s);
        operand(out, s->value());
        break;
      case StmtKind::FieldAtomic:
        out += ' ';
        out += op_name(s->atomic_op());
        type(out, s);
        field_access(out, s);
        operand(out, s->value());
        break;
      case StmtKind::RangeFor:
        if (s->grid()) out += " grid";
        operand(out, s->begin());
        operand(out, s->end());
        open_block(out, s->body(), depth, nested);
        break;
      case StmtKind::StructFor:
        out += ' ';
        if (s->field() == -1) {
          append_snode(out, s->snode());
        } else {
          field_name(out, s->field());
        }
        via(out, s);
        open_block(out, s->body(), depth, nested);
        break;
      case StmtKind::LoopIndex:
        type(out, s);
        operand(out, s->loop());
        out += ' ';
        out += std::to_string(s->index());
        break;
      case StmtKind::If:
        if (s->unlikely()) out += " unlikely";
        operand(out, s->cond());
        open_block(out, s->then_block(), depth, nested);
        out += " else";
        open_block(out, s->else_block(), depth, nested);
        break;
      case StmtKind::While:
        open_block(out, s->body(), depth, nested);
        break;
      case StmtKind::Break:
      case StmtKind::Continue:
      case StmtKind::Stop:
      case StmtKind::MessageBase:  // always u32
      case StmtKind::SubgroupElect:  // always u1
        break;
      case StmtKind::Print:
        out += ' ';
        append_quoted(out, s->text());
        for (Stmt* v : s->operands()) operand(out, v);
        break;
      case StmtKind::Assert:
        operand(out, s->cond());
        out += ' ';
        append_quoted(out, s->text());
        for (Stmt* v : s->operands().subspan(1)) operand(out, v);
        break;
      case StmtKind::SNodeOp: {
        SNodeOpKind op = s->snode_op();
        out += ' ';
        out += op_name(op);
        if (s->has_result()) type(out, s);
        out += ' ';
        append_snode(out, s->snode());
        index_list(out, s);
        if (op == SNodeOpKind::append)
          for (Stmt* v : s->values()) operand(out, v);
        break;
      }
      case StmtKind::TreeLoad:
        if (s->atomic_load()) out += " atomic";
        type(out, s);
        tree_access(out, s);
        if (s->storage() != s->type()) storage(out, s);
        break;
      case StmtKind::TreeStore:
        tree_access(out, s);
        operand(out, s->value());
        storage(out, s);
        break;
      case StmtKind::TreeAtomic:
        if (s->reduction() != Reduction::none) {
          out += ' ';
          out += reduction_name(s->reduction());
        }
        out += ' ';
        out += op_name(s->atomic_op());
        type(out, s);
        tree_access(out, s);
        operand(out, s->value());
        break;
      case StmtKind::TreeCas:
        type(out, s);
        tree_access(out, s);
        operand(out, s->expected());
        operand(out, s->desired());
        break;
      case StmtKind::Task:
        out += ' ';
        out += op_name(s->task_kind());
        out += ' ';
        append_snode(out, s->snode());
        out += ' ';
        append_quoted(out, s->text());
        via(out, s);
        open_block(out, s->body(), depth, nested);
        break;
    }
    if (is_tree_access(s->kind()) && s->field() == kRuntimeWords) out += " runtime";
    if (is_tree_access(s->kind()) && s->field() >= 0) {
      out += " field ";
      if (s->field() < kernel_.fields().size()) append_global(out, kernel_.fields().get(s->field()).name);
      else out += "@?";
    }
    if (is_tree_bound(s->kind()) && s->kind() != StmtKind::StructFor && s->kind() != StmtKind::Task) via(out, s);
    if (nested) out += '\n';
  }

 private:
  static void via(std::string& out, const Stmt* s) {
    if (s->tree_param() < 0) return;
    out += " via tree_param ";
    out += std::to_string(s->tree_param());
  }

  void block(std::string& out, const Block* b, int depth) const {
    for (const auto& s : b->stmts()) stmt(out, s.get(), depth, true);
  }

  // ` {` + the block's lines + the closing brace (without its newline), or
  // ` { ... }` when only the header is wanted.
  void open_block(std::string& out, const Block* b, int depth, bool nested) const {
    if (!nested) {
      out += " { ... }";
      return;
    }
    out += " {\n";
    block(out, b, depth + 1);
    out.append(static_cast<size_t>(depth) * 2, ' ');
    out += '}';
  }

  void value(std::string& out, const Stmt* s) const {
    if (s == nullptr || !numbers_.has(s)) {
      out += "%?";
      return;
    }
    char digits[16];
    digits[0] = '%';
    const auto [end, ec] = std::to_chars(digits + 1, digits + sizeof digits, numbers_.get(s));
    out.append(digits, end);
  }

  void operand(std::string& out, const Stmt* s) const {
    out += ' ';
    value(out, s);
  }

  static void type(std::string& out, const Stmt* s) {
    out += ' ';
    out += type_name(s->type());
  }

  void field_name(std::string& out, int id) const {
    if (id >= 0 && id < kernel_.fields().size()) {
      append_global(out, kernel_.fields().get(id).name);
    } else {
      out += "@?" + std::to_string(id);  // an invalid id (the verifier reports it)
    }
  }

  void field_access(std::string& out, const Stmt* s) const {
    out += ' ';
    field_name(out, s->field());
    index_list(out, s);
  }

  // `[%i, %j]`: the indices of a field access or an SNode operation.
  void index_list(std::string& out, const Stmt* s) const {
    out += '[';
    bool first = true;
    for (Stmt* i : s->indices()) {
      if (!first) out += ", ";
      first = false;
      value(out, i);
    }
    out += ']';
  }

  // ` @t<n>[%address]` of the tree statements.
  void tree_access(std::string& out, const Stmt* s) const {
    out += ' ';
    append_tree(out, s->tree());
    out += '[';
    value(out, s->address());
    out += ']';
  }

  // ` as <storage>` of tree_load and tree_store.
  static void storage(std::string& out, const Stmt* s) {
    out += " as ";
    out += type_name(s->storage());
  }

  const Kernel& kernel_;
  Numbering numbers_;
  uint32_t next_ = 0;
};

int field_of(const Stmt* s) {
  return is_field_access(s->kind()) || is_tree_access(s->kind()) || s->kind() == StmtKind::StructFor ? s->field()
                                                                                                      : -1;
}

}  // namespace

std::string print_kernel(const Kernel& kernel) {
  std::string out;
  Printer(kernel).kernel(out);
  return out;
}

std::string print_stmt(const Kernel& kernel, const Stmt* stmt) {
  std::string out;
  Printer(kernel).stmt(out, stmt, 0, false);
  return out;
}

std::string print_shape(const Kernel& kernel, const Stmt* stmt) {
  std::string out;
  Printer(kernel, false).stmt(out, stmt, 0, false);
  return out;
}

std::string print_module(const std::vector<const Kernel*>& kernels) {
  std::string out;
  if (kernels.empty()) return out;
  const FieldTable& fields = kernels.front()->fields();
  std::vector<bool> used(static_cast<size_t>(fields.size()), false);
  for (const Kernel* k : kernels) {
    GROVE_ASSERT(&k->fields() == &fields,
                 "print_module: kernel '" + k->name() + "' uses a different field table");
    walk(k->body(), [&](Stmt* s) {
      int id = field_of(s);
      if (id >= 0 && id < fields.size()) used[static_cast<size_t>(id)] = true;
    });
  }
  bool any = false;
  for (int id = 0; id < fields.size(); ++id) {
    if (!used[static_cast<size_t>(id)]) continue;
    const FieldDecl& f = fields.get(id);
    out += "field ";
    append_global(out, f.name);
    out += " : ";
    out += type_name(f.dtype);
    out += '[';
    for (size_t i = 0; i < f.shape.size(); ++i) {
      if (i) out += ", ";
      out += std::to_string(f.shape[i]);
    }
    out += "]";
    if (f.has_offset()) {
      out += " offset [";
      for (size_t i = 0; i < f.offset.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(f.offset[i]);
      }
      out += "]";
    }
    out += "\n";
    any = true;
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (any || i > 0) out += '\n';
    Printer(*kernels[i]).kernel(out);
  }
  return out;
}

}  // namespace grove::ir
