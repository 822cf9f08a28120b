// src/ir/parser.cpp — reads the textual form of docs/ir.md back into kernels.
//
// A hand-written lexer and a recursive-descent parser. Statements are made
// only through ir::Builder; after a value statement is built its type is set
// to the printed one, so print(parse(text)) reproduces `text` exactly even
// where the printed type is not the one the builder would pick.
//
// The parser checks what the text alone decides (syntax, names, %N defined
// earlier in the text, index counts, constants in range, operands the builder
// insists on: allocas for local_load/store, loops for loop_index). Everything
// else, e.g. a value used outside the block that defines it, is left to the
// verifier, so broken kernels can be written as text in tests.
//
// SNodes are lexed as their own token (`$S<n>`, `$-1`); trees are globals
// named `t<n>`. snode_op's `%N =` depends on its op, so it is checked once
// the op is read.
//
// Leniencies (the printer always writes the full form): `else { }` and
// `stage <name>` may be left out (an empty else block, stage frontend), and
// %N numbers need not be consecutive.
#include "ir/parser.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/builder.h"

namespace grove::ir {

namespace {

enum class Tok : uint8_t {
  End,     // end of input
  Word,    // identifiers and keywords: [A-Za-z_][A-Za-z0-9_.]*
  Value,   // %N
  Global,  // @name or @"quoted name"
  Number,  // -?[0-9]... and -inf / -nan (inf and nan alone are words)
  String,  // "..." with C escapes, stored decoded
  Punct,   // one of { } [ ] ( ) , : =
  SNode,   // $S<n> or $-<n> (-1: none); the text is the number, e.g. "2" or "-1"
};

struct Token {
  Tok kind = Tok::End;
  std::string text;  // decoded text; for Value the digits, for Global the name
  int line = 1;
  int col = 1;
};

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

[[noreturn]] void fail_at(std::string_view source, int line, int col, const std::string& msg) {
  throw Error(std::string(source) + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " +
              msg);
}

class Lexer {
 public:
  Lexer(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      Token t;
      t.line = line_;
      t.col = col_;
      if (pos_ >= text_.size()) {
        out.push_back(std::move(t));
        return out;
      }
      char c = text_[pos_];
      if (c == '"') {
        t.kind = Tok::String;
        t.text = string_literal();
      } else if (c == '%') {
        advance();
        t.kind = Tok::Value;
        while (pos_ < text_.size() && is_digit(text_[pos_])) t.text += advance();
        if (t.text.empty()) fail_at(source_, t.line, t.col, "expected a value number after '%'");
      } else if (c == '$') {
        advance();
        t.kind = Tok::SNode;
        if (pos_ < text_.size() && text_[pos_] == 'S') {
          advance();
        } else if (pos_ < text_.size() && text_[pos_] == '-') {
          t.text += advance();
        } else {
          fail_at(source_, t.line, t.col, "expected an SNode ($S<n> or $-1) after '$'");
        }
        size_t digits = t.text.size();
        while (pos_ < text_.size() && is_digit(text_[pos_])) t.text += advance();
        if (t.text.size() == digits)
          fail_at(source_, t.line, t.col, "expected an SNode number ($S<n> or $-1)");
      } else if (c == '@') {
        advance();
        t.kind = Tok::Global;
        if (pos_ < text_.size() && text_[pos_] == '"') {
          t.text = string_literal();
        } else {
          while (pos_ < text_.size() && is_name_char(text_[pos_])) t.text += advance();
          if (t.text.empty()) fail_at(source_, t.line, t.col, "expected a name after '@'");
        }
      } else if (is_digit(c) || (c == '-' && pos_ + 1 < text_.size() &&
                                 (is_digit(text_[pos_ + 1]) || is_word_start(text_[pos_ + 1])))) {
        t.kind = Tok::Number;
        t.text += advance();
        while (pos_ < text_.size()) {
          char n = text_[pos_];
          char prev = t.text.back();
          bool exponent_sign = (n == '+' || n == '-') && (prev == 'e' || prev == 'E');
          if (!is_name_char(n) && !exponent_sign) break;
          t.text += advance();
        }
      } else if (is_word_start(c)) {
        t.kind = Tok::Word;
        while (pos_ < text_.size() && is_name_char(text_[pos_])) t.text += advance();
      } else if (c == '{' || c == '}' || c == '[' || c == ']' || c == '(' || c == ')' ||
                 c == ',' || c == ':' || c == '=') {
        t.kind = Tok::Punct;
        t.text += advance();
      } else {
        std::string shown = (c >= 0x20 && c < 0x7f) ? std::string("'") + c + "'"
                                                    : "byte " + std::to_string(static_cast<unsigned char>(c));
        fail_at(source_, t.line, t.col, "unexpected character " + shown);
      }
      out.push_back(std::move(t));
    }
  }

 private:
  char advance() {
    char c = text_[pos_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else {
        break;
      }
    }
  }

  // At the opening quote; returns the decoded contents.
  std::string string_literal() {
    int line = line_, col = col_;
    advance();
    std::string out;
    for (;;) {
      if (pos_ >= text_.size() || text_[pos_] == '\n')
        fail_at(source_, line, col, "unterminated string (a string ends on its line)");
      char c = advance();
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      int eline = line_, ecol = col_ - 1;
      if (pos_ >= text_.size()) fail_at(source_, line, col, "unterminated string");
      char e = advance();
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case '\\': out += '\\'; break;
        case '"': out += '"'; break;
        case '\'': out += '\''; break;
        case 'x': {
          int hi = pos_ < text_.size() ? hex_value(text_[pos_]) : -1;
          int lo = pos_ + 1 < text_.size() ? hex_value(text_[pos_ + 1]) : -1;
          if (hi < 0 || lo < 0)
            fail_at(source_, eline, ecol, "expected two hex digits after '\\x'");
          advance();
          advance();
          out += static_cast<char>(hi * 16 + lo);
          break;
        }
        default:
          fail_at(source_, eline, ecol,
                  std::string("unknown escape '\\") + e + "' (use \\n \\t \\\\ \\\" or \\xNN)");
      }
    }
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::End: return "end of input";
    case Tok::Word: return "'" + t.text + "'";
    case Tok::Value: return "'%" + t.text + "'";
    case Tok::Global: return "'@" + t.text + "'";
    case Tok::Number: return "'" + t.text + "'";
    case Tok::String: return "a string";
    case Tok::Punct: return "'" + t.text + "'";
    case Tok::SNode: return t.text[0] == '-' ? "'$" + t.text + "'" : "'$S" + t.text + "'";
  }
  return "?";
}

// Whether statements of this kind are written `%N = ...` (the printer's rule).
// For snode_op it depends on the op (is_active, append and length are), which
// the statement checks itself once the op is read.
bool numbered_kind(StmtKind k) {
  switch (k) {
    case StmtKind::Const: case StmtKind::Arg: case StmtKind::Unary: case StmtKind::Cast: case StmtKind::Bitcast:
    case StmtKind::Binary: case StmtKind::Select: case StmtKind::Alloca: case StmtKind::LocalLoad:
    case StmtKind::FieldLoad: case StmtKind::FieldAtomic: case StmtKind::RangeFor:
    case StmtKind::StructFor: case StmtKind::LoopIndex: case StmtKind::TreeLoad:
    case StmtKind::TreeAtomic: case StmtKind::TreeCas: case StmtKind::MessageBase:
    case StmtKind::SubgroupFirst: case StmtKind::SubgroupElect:
      return true;
    case StmtKind::LocalStore: case StmtKind::FieldStore: case StmtKind::If: case StmtKind::While:
    case StmtKind::Break: case StmtKind::Continue: case StmtKind::Print: case StmtKind::Assert:
    case StmtKind::TreeStore: case StmtKind::Stop:
    case StmtKind::Task: case StmtKind::SNodeOp:
      return false;
  }
  return false;
}

bool parse_kind(std::string_view word, StmtKind* out) {
  static constexpr StmtKind kAll[] = {
#define GROVE_STMT(Kind, mnemonic, operands, blocks, category) StmtKind::Kind,
#include "ir/statements.def"
  };
  for (StmtKind k : kAll) {
    if (word == kind_name(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

struct FieldRef {
  const FieldDecl* field;
  std::vector<Stmt*> indices;
};

class Parser {
 public:
  Parser(std::vector<Token> tokens, std::string_view source)
      : toks_(std::move(tokens)), source_(source) {}

  ParsedModule module() {
    ParsedModule m;
    m.fields = std::make_unique<FieldTable>();
    fields_ = m.fields.get();
    while (peek().kind != Tok::End) {
      if (is_word("field")) {
        field_decl();
      } else if (is_word("kernel")) {
        m.kernels.push_back(kernel());
      } else {
        expected("'field' or 'kernel'");
      }
    }
    return m;
  }

 private:
  // ---- tokens ----
  const Token& peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, toks_.size() - 1);
    return toks_[i];
  }
  Token take() {
    Token t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool is_word(std::string_view w, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::Word && peek(ahead).text == w;
  }
  bool is_punct(char c, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::Punct && peek(ahead).text[0] == c;
  }

  [[noreturn]] void fail(const Token& at, const std::string& msg) const {
    fail_at(source_, at.line, at.col, msg);
  }
  [[noreturn]] void expected(const std::string& what) const {
    fail(peek(), "expected " + what + " but found " + describe(peek()));
  }
  Token expect_kind(Tok kind, const std::string& what) {
    if (peek().kind != kind) expected(what);
    return take();
  }
  void expect_punct(char c) {
    if (!is_punct(c)) expected(std::string("'") + c + "'");
    take();
  }
  void expect_word(std::string_view w) {
    if (!is_word(w)) expected("'" + std::string(w) + "'");
    take();
  }

  // ---- pieces ----
  // A type name. `unknown` is accepted only where `allow_unknown`.
  DataType type(bool allow_unknown) {
    Token t = expect_kind(Tok::Word, "a type");
    if (allow_unknown && t.text == "unknown") return DataType::unknown;
    DataType d = parse_type(t.text);
    if (d == DataType::unknown) fail(t, "unknown type '" + t.text + "'");
    return d;
  }

  int64_t non_negative(const std::string& what, int64_t max) {
    Token t = expect_kind(Tok::Number, what);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size() || v < 0)
      fail(t, "expected " + what + " but found " + describe(t));
    if (v > max) fail(t, what + " " + t.text + " is too large");
    return v;
  }

  // A signed i32 (field offsets).
  int64_t signed_int(const std::string& what) {
    Token t = expect_kind(Tok::Number, what);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size() || v < std::numeric_limits<int32_t>::min() ||
        v > std::numeric_limits<int32_t>::max())
      fail(t, "expected " + what + " (an i32) but found " + describe(t));
    return v;
  }

  Stmt* operand() {
    Token t = expect_kind(Tok::Value, "a value (%N)");
    auto it = values_.find(t.text);
    if (it == values_.end()) fail(t, "unknown value %" + t.text + " (not defined earlier)");
    return it->second.stmt;
  }

  void define(const Token& def, Stmt* s) {
    auto [it, inserted] = values_.try_emplace(def.text, Defined{s, def.line});
    if (!inserted)
      fail(def, "%" + def.text + " is defined twice (first on line " +
                    std::to_string(it->second.line) + ")");
  }

  const FieldDecl& field_name() {
    Token t = expect_kind(Tok::Global, "a field (@name)");
    const FieldDecl* f = fields_->find(t.text);
    if (!f) fail(t, "unknown field @" + t.text + " (declare it with a `field` line)");
    return *f;
  }

  FieldRef field_ref() {
    Token at = peek();
    FieldRef r{&field_name(), {}};
    expect_punct('[');
    if (!is_punct(']')) {
      r.indices.push_back(operand());
      while (is_punct(',')) {
        take();
        r.indices.push_back(operand());
      }
    }
    expect_punct(']');
    if (static_cast<int>(r.indices.size()) != r.field->ndim())
      fail(at, "wrong number of indices for field @" + r.field->name + ": it has " +
                   std::to_string(r.field->ndim()) + " dimension(s) but " +
                   std::to_string(r.indices.size()) + " index(es) were given");
    return r;
  }

  template <typename Op>
  Op op(const char* family) {
    Token t = expect_kind(Tok::Word, std::string("a ") + family + " op");
    Op o{};
    if (!parse_op(t.text, &o)) fail(t, std::string("unknown ") + family + " op '" + t.text + "'");
    return o;
  }

  // The literal of a `const` of type t, as a bit pattern.
  uint64_t literal(DataType t) {
    const Token& tok = peek();
    if (tok.kind != Tok::Number && tok.kind != Tok::Word)
      expected(std::string("a constant of type ") + std::string(type_name(t)));
    std::string_view s = tok.text;
    const char* first = s.data();
    const char* last = s.data() + s.size();
    uint64_t bits = 0;
    if (is_float(t)) {
      bool ok;
      if (t == DataType::f64) {
        double d = 0;
        auto r = std::from_chars(first, last, d);
        ok = r.ec == std::errc() && r.ptr == last;
        if (ok && std::isnan(d)) d = std::copysign(std::numeric_limits<double>::quiet_NaN(), d);
        bits = std::bit_cast<uint64_t>(d);
      } else {
        float f = 0;
        auto r = std::from_chars(first, last, f);
        ok = r.ec == std::errc() && r.ptr == last;
        if (ok && std::isnan(f)) f = std::copysign(std::numeric_limits<float>::quiet_NaN(), f);
        bits = std::bit_cast<uint32_t>(f);
      }
      if (!ok) expected(std::string("a constant of type ") + std::string(type_name(t)));
    } else {
      bool negative = !s.empty() && s[0] == '-';
      uint64_t mag = 0;
      auto r = std::from_chars(first + (negative ? 1 : 0), last, mag);
      if (r.ptr != last || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range) ||
          s.size() == (negative ? 1u : 0u))
        expected(std::string("an integer constant of type ") + std::string(type_name(t)));
      int w = bit_width(t);
      uint64_t max_pos = is_signed(t) ? (uint64_t{1} << (w - 1)) - 1
                                      : (w >= 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1);
      uint64_t max_neg = is_signed(t) ? (uint64_t{1} << (w - 1)) : 0;
      if (r.ec == std::errc::result_out_of_range || (negative ? mag > max_neg : mag > max_pos))
        fail(tok, "constant " + tok.text + " is out of range for " + std::string(type_name(t)));
      bits = negative ? uint64_t{0} - mag : mag;
    }
    take();
    return bits;
  }

  // ---- declarations ----
  void field_decl() {
    expect_word("field");
    Token name = expect_kind(Tok::Global, "a field name (@name)");
    if (fields_->find(name.text)) fail(name, "field @" + name.text + " is declared twice");
    expect_punct(':');
    DataType dtype = type(false);
    expect_punct('[');
    std::vector<int64_t> shape;
    if (!is_punct(']')) {
      shape.push_back(non_negative("an extent", std::numeric_limits<int64_t>::max()));
      while (is_punct(',')) {
        take();
        shape.push_back(non_negative("an extent", std::numeric_limits<int64_t>::max()));
      }
    }
    expect_punct(']');
    std::vector<int64_t> offset;
    if (is_word("offset")) {
      take();
      expect_punct('[');
      for (size_t d = 0; d < shape.size(); ++d) {
        if (d) expect_punct(',');
        offset.push_back(signed_int("an offset"));
      }
      expect_punct(']');
    }
    const int id = fields_->add(name.text, dtype, std::move(shape)).id;
    fields_->get_mutable(id).offset = std::move(offset);
  }

  std::unique_ptr<Kernel> kernel() {
    expect_word("kernel");
    Token name = expect_kind(Tok::Global, "a kernel name (@name)");
    expect_punct('(');
    std::vector<KernelArg> args;
    std::vector<TreeParam> trees;
    if (!is_punct(')')) {
      for (;;) {
        if (peek().kind != Tok::Word && peek().kind != Tok::String) expected("an argument name");
        std::string arg_name = take().text;
        expect_punct(':');
        if (is_word("tree")) {  // `name: tree <n>`, a tree parameter of the tree type n
          take();
          trees.push_back({arg_name, static_cast<int>(non_negative("a tree number", 1 << 20))});
        } else {
          args.push_back({arg_name, type(false)});
        }
        if (!is_punct(',')) break;
        take();
      }
    }
    expect_punct(')');
    auto k = std::make_unique<Kernel>(name.text, std::move(args), fields_);
    k->tree_params = std::move(trees);
    if (is_word("stage")) {
      take();
      Token st = expect_kind(Tok::Word, "a stage name");
      if (!parse_stage(st.text, &k->stage)) fail(st, "unknown stage '" + st.text + "'");
    }
    while (is_word("message")) k->messages.push_back(message(k->messages.size()));
    values_.clear();
    block(k->body());
    return k;
  }

  // `message <n> print|assert "<format>" <type>...`, the n-th message.
  rt::MessagePlan message(size_t n) {
    take();
    rt::MessagePlan m;
    m.id = static_cast<uint32_t>(n);
    const Token number = peek();
    if (non_negative("a message number", 1 << 30) != static_cast<int64_t>(n))
      fail(number, "messages are numbered 0, 1, ... in order; expected message " + std::to_string(n));
    Token what = expect_kind(Tok::Word, "print or assert");
    if (what.text != "print" && what.text != "assert") fail(what, "expected print or assert, found " + describe(what));
    m.is_assert = what.text == "assert";
    m.format = expect_kind(Tok::String, "a format string").text;
    while (peek().kind == Tok::Word && !is_word("message")) m.types.push_back(type(false));
    return m;
  }

  // `{` statements `}`
  void block(Block* b) {
    const Token open = peek();
    expect_punct('{');
    if (++depth_ > kMaxNesting)
      fail(open, "blocks nested more than " + std::to_string(kMaxNesting) + " deep; Grove takes at most that many");
    Builder builder(b);
    while (!is_punct('}')) stmt(builder);
    take();
    --depth_;
  }

  // ---- statements ----
  void stmt(Builder& b) {
    std::optional<Token> def;
    if (peek().kind == Tok::Value && is_punct('=', 1)) {
      def = take();
      take();
    }
    if (peek().kind != Tok::Word) expected(def ? "a statement after '='" : "a statement or '}'");
    Token word = take();
    StmtKind kind{};
    if (!parse_kind(word.text, &kind)) fail(word, "unknown statement '" + word.text + "'");
    if (kind != StmtKind::SNodeOp) check_def(word, word.text, numbered_kind(kind), def);

    DataType t = DataType::unknown;  // the printed result type, for value statements
    Stmt* s = value_stmt(b, kind, t);
    if (s == nullptr) s = memory_stmt(b, kind, def, t);
    if (s == nullptr) s = control_stmt(b, kind, def);
    GROVE_ASSERT(s != nullptr, "the parser reads no statement kind '" + word.text + "'");
    if (is_tree_access(kind)) {
      if (is_word("runtime")) {
        take();
        s->set_field(kRuntimeWords);
      } else if (is_word("field")) {
        take();
        s->set_field(field_name().id);
      }
    }
    if (is_tree_bound(kind) && kind != StmtKind::StructFor && kind != StmtKind::Task) s->set_tree_param(via());
    if (s->has_result()) {
      if (s->type() != t) s->set_type(t);
      define(*def, s);
    }
  }

  // Values, locals and loop indices; null for another kind.
  Stmt* value_stmt(Builder& b, StmtKind kind, DataType& t) {
    Stmt* s = nullptr;
    switch (kind) {
      case StmtKind::Const: {
        Token at = peek();
        t = type(false);
        if (t == DataType::f16) fail(at, "f16 is a storage type; constants are f32 or f64");
        s = b.const_bits(t, literal(t));
        break;
      }
      case StmtKind::Arg: {
        t = type(true);
        int index = static_cast<int>(non_negative("an argument index", std::numeric_limits<int>::max()));
        s = b.arg(t, index);
        break;
      }
      case StmtKind::MessageBase:
        t = DataType::u32;
        s = b.message_base();
        break;
      case StmtKind::SubgroupElect:
        t = DataType::u1;
        s = b.subgroup_elect();
        break;
      case StmtKind::SubgroupFirst: {
        Token at = peek();
        t = type(true);
        Stmt* x = operand();
        if (x->type() != t) fail(at, "subgroup_first yields its operand's type");
        s = b.subgroup_first(x);
        break;
      }
      case StmtKind::Unary: {
        UnaryOp o = op<UnaryOp>("unary");
        t = type(true);
        s = b.unary_typed(o, t, operand());
        break;
      }
      case StmtKind::Cast: {
        t = type(true);
        s = b.cast(t, operand());
        break;
      }
      case StmtKind::Bitcast: {
        t = type(true);
        s = b.bitcast(t, operand());
        break;
      }
      case StmtKind::Binary: {
        BinaryOp o = op<BinaryOp>("binary");
        t = type(true);
        Stmt* lhs = operand();
        Stmt* rhs = operand();
        s = b.binary_typed(o, t, lhs, rhs);
        break;
      }
      case StmtKind::Select: {
        t = type(true);
        Stmt* c = operand();
        Stmt* x = operand();
        Stmt* y = operand();
        s = b.select_typed(t, c, x, y);
        break;
      }
      case StmtKind::Alloca: {
        t = type(true);
        s = b.alloca_var(t);
        break;
      }
      case StmtKind::LocalLoad: {
        t = type(true);
        s = b.local_load(alloca_operand());
        break;
      }
      case StmtKind::LocalStore: {
        Stmt* ptr = alloca_operand();
        s = b.local_store(ptr, operand());
        break;
      }
      case StmtKind::LoopIndex: {
        t = type(true);
        Token at = peek();
        Stmt* loop = operand();
        if (loop->kind() != StmtKind::RangeFor && loop->kind() != StmtKind::StructFor)
          fail(at, "%" + at.text + " is not a range_for or struct_for");
        int axis = static_cast<int>(non_negative("an axis", std::numeric_limits<int>::max()));
        s = b.loop_index(loop, axis);
        break;
      }
      default:
        return nullptr;
    }
    return s;
  }

  // Field, SNode and tree operations; null for another kind.
  Stmt* memory_stmt(Builder& b, StmtKind kind, const std::optional<Token>& def, DataType& t) {
    Stmt* s = nullptr;
    switch (kind) {
      case StmtKind::FieldLoad: {
        t = type(true);
        FieldRef r = field_ref();
        s = b.field_load(*r.field, std::move(r.indices));
        break;
      }
      case StmtKind::FieldStore: {
        FieldRef r = field_ref();
        s = b.field_store(*r.field, std::move(r.indices), operand());
        break;
      }
      case StmtKind::FieldAtomic: {
        AtomicOp o = op<AtomicOp>("atomic");
        t = type(true);
        FieldRef r = field_ref();
        s = b.field_atomic(o, *r.field, std::move(r.indices), operand());
        break;
      }
      case StmtKind::SNodeOp: {
        Token at = peek();
        SNodeOpKind o = op<SNodeOpKind>("snode");
        bool result = o == SNodeOpKind::is_active || o == SNodeOpKind::append || o == SNodeOpKind::length;
        check_def(at, "snode_op " + at.text, result, def);
        if (result) t = type(true);
        int id = snode_ref();
        std::vector<Stmt*> indices = index_list();
        std::vector<Stmt*> values;
        if (o == SNodeOpKind::append) {
          values.push_back(operand());  // then any more, up to the next statement (which may start with %N)
          while (peek().kind == Tok::Value && !is_punct('=', 1)) values.push_back(operand());
        }
        s = b.snode_op(o, id, std::move(indices), std::move(values));
        break;
      }
      case StmtKind::TreeLoad: {
        const bool atomic = is_word("atomic");
        if (atomic) take();
        t = type(true);
        int tree = tree_ref();
        Stmt* address = bracketed_operand();
        DataType storage = t;
        if (is_word("as")) {
          take();
          storage = type(true);
        }
        s = b.tree_load(tree, storage, address, atomic);
        break;
      }
      case StmtKind::TreeStore: {
        int tree = tree_ref();
        Stmt* address = bracketed_operand();
        Stmt* v = operand();
        expect_word("as");
        s = b.tree_store(tree, type(true), address, v);
        break;
      }
      case StmtKind::TreeAtomic: {
        Reduction r = Reduction::none;
        for (Reduction c : {Reduction::one_cell, Reduction::accumulate}) {
          if (is_word(reduction_name(c))) {
            take();
            r = c;
          }
        }
        AtomicOp o = op<AtomicOp>("atomic");
        t = type(true);
        int tree = tree_ref();
        Stmt* address = bracketed_operand();
        s = b.tree_atomic(o, tree, t, address, operand());
        s->set_reduction(r);
        break;
      }
      case StmtKind::TreeCas: {
        t = type(true);
        int tree = tree_ref();
        Stmt* address = bracketed_operand();
        Stmt* expected_value = operand();
        Stmt* desired = operand();
        s = b.tree_cas(tree, t, address, expected_value, desired);
        break;
      }
      default:
        return nullptr;
    }
    return s;
  }

  // Loops, branches, print, assert and tasks; null for another kind.
  Stmt* control_stmt(Builder& b, StmtKind kind, const std::optional<Token>& def) {
    Stmt* s = nullptr;
    switch (kind) {
      case StmtKind::RangeFor: {
        const bool grid = is_word("grid");
        if (grid) take();
        Stmt* begin = operand();
        Stmt* end = operand();
        s = b.range_for(begin, end);
        s->set_grid(grid);
        define(*def, s);
        block(s->body());
        break;
      }
      case StmtKind::StructFor: {
        if (peek().kind == Tok::SNode) {
          s = b.struct_for_snode(snode_ref());
        } else {
          s = b.struct_for(field_name());
        }
        s->set_tree_param(via());
        define(*def, s);
        block(s->body());
        break;
      }
      case StmtKind::If: {
        const bool unlikely = is_word("unlikely");
        if (unlikely) take();
        s = b.if_stmt(operand());
        s->set_unlikely(unlikely);
        block(s->then_block());
        if (is_word("else")) {
          take();
          block(s->else_block());
        }
        break;
      }
      case StmtKind::While: {
        s = b.while_loop();
        block(s->body());
        break;
      }
      case StmtKind::Break:
        s = b.break_stmt();
        break;
      case StmtKind::Continue:
        s = b.continue_stmt();
        break;
      case StmtKind::Stop:
        s = b.stop();
        break;
      case StmtKind::Print: {
        Token text = expect_kind(Tok::String, "a format string");
        std::vector<Stmt*> values;
        // The operands run up to the next statement, which may itself start with %N.
        while (peek().kind == Tok::Value && !is_punct('=', 1)) values.push_back(operand());
        s = b.print(text.text, std::move(values));
        break;
      }
      case StmtKind::Assert: {
        Stmt* c = operand();
        Token text = expect_kind(Tok::String, "a message string");
        std::vector<Stmt*> values;
        while (peek().kind == Tok::Value && !is_punct('=', 1)) values.push_back(operand());
        s = b.assert_stmt(c, text.text, std::move(values));
        break;
      }
      case StmtKind::Task: {
        TaskKind o = op<TaskKind>("task");
        int id = snode_ref();
        Token label = expect_kind(Tok::String, "a task label (a string)");
        s = b.task(o, id, label.text);
        s->set_tree_param(via());
        block(s->body());
        break;
      }
      default:
        return nullptr;
    }
    return s;
  }

  // ` via tree_param <n>`, or nothing (-1): the kernel's tree parameter a
  // statement works on.
  int via() {
    if (!is_word("via")) return -1;
    take();
    expect_word("tree_param");
    return static_cast<int>(non_negative("a tree parameter number", 1 << 20));
  }

  // Whether `%N =` is present exactly when the statement defines a value.
  void check_def(const Token& at, const std::string& what, bool numbered,
                 const std::optional<Token>& def) const {
    if (numbered && !def) fail(at, "expected '%N = ' before '" + what + "' (it defines a value)");
    if (!numbered && def)
      fail(at, "'" + what + "' does not define a value; remove '%" + def->text + " ='");
  }

  // `$S<n>` or `$-1`.
  int snode_ref() {
    Token t = expect_kind(Tok::SNode, "an SNode ($S<n> or $-1)");
    int v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size())
      fail(t, "SNode number " + t.text + " is out of range");
    return v;
  }

  // `@t<n>` (a negative, invalid id prints quoted: `@"t-1"`), or
  // `@context` (kContextTree).
  int tree_ref() {
    Token t = expect_kind(Tok::Global, "a tree (@t<n>)");
    if (t.text == "context") return kContextTree;
    int v = 0;
    bool ok = t.text.size() > 1 && t.text[0] == 't';
    if (ok) {
      const char* first = t.text.data() + 1;
      const char* last = t.text.data() + t.text.size();
      auto [p, ec] = std::from_chars(first, last, v);
      ok = ec == std::errc() && p == last;
    }
    if (!ok) fail(t, "expected a tree (@t<n>) but found " + describe(t));
    return v;
  }

  // `[%N]`: a tree address.
  Stmt* bracketed_operand() {
    expect_punct('[');
    Stmt* v = operand();
    expect_punct(']');
    return v;
  }

  // `[%a, %b, ...]` (possibly empty).
  std::vector<Stmt*> index_list() {
    std::vector<Stmt*> out;
    expect_punct('[');
    if (!is_punct(']')) {
      out.push_back(operand());
      while (is_punct(',')) {
        take();
        out.push_back(operand());
      }
    }
    expect_punct(']');
    return out;
  }

  Stmt* alloca_operand() {
    Token at = peek();
    Stmt* s = operand();
    if (s->kind() != StmtKind::Alloca) fail(at, "expected an alloca but found %" + at.text +
                                                    ", a '" + kind_name(s->kind()) + "'");
    return s;
  }

  struct Defined {
    Stmt* stmt;
    int line;
  };

  std::vector<Token> toks_;
  size_t pos_ = 0;
  std::string_view source_;
  FieldTable* fields_ = nullptr;
  std::unordered_map<std::string, Defined> values_;  // %N of the current kernel
  int depth_ = 0;                                     // blocks open (kMaxNesting)
};

}  // namespace

ParsedModule parse_module(std::string_view text, std::string_view source_name) {
  Parser p(Lexer(text, source_name).run(), source_name);
  return p.module();
}

}  // namespace grove::ir
