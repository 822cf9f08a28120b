// tests/ir/text_test.cpp — the textual form of docs/ir.md: printing, parsing, round trips.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "grove/error.h"
#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir/visitor.h"

namespace grove::ir {
namespace {

std::string print(const ParsedModule& m) {
  std::vector<const Kernel*> ks;
  for (const auto& k : m.kernels) ks.push_back(k.get());
  return print_module(ks);
}

// print(parse(text)); for canonical text this must be `text` itself.
std::string reprint(std::string_view text) { return print(parse_module(text, "test.ir")); }

// The grove::Error message of parsing `text`, or "(no error)".
std::string parse_error(std::string_view text) {
  try {
    parse_module(text, "test.ir");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// The constants of a parsed kernel, in program order.
std::vector<const Stmt*> consts(const Kernel& k) {
  std::vector<const Stmt*> out;
  walk(k.body(), [&](Stmt* s) {
    if (s->is_const()) out.push_back(s);
  });
  return out;
}

// The example of docs/ir.md, built with the builder, prints exactly as documented.
TEST(TextTest, PrintsTheDocumentedExample) {
  FieldTable fields;
  fields.add("x", f32, {512, 512});
  fields.add("total", f32, {});
  fields.add("unused", i32, {4});
  // (add() returns a reference into the table that the next add() may move.)
  const FieldDecl& x = fields.get(0);
  const FieldDecl& total = fields.get(1);
  Kernel k("paint", {{"value", f32}, {"n", i32}}, &fields);
  Builder b(k.body());
  Stmt* value = b.arg(f32, 0);
  Stmt* zero = b.const_int(i32, 0);
  Stmt* n = b.const_int(i32, 512);
  Stmt* loop = b.range_for(zero, n);
  {
    Builder in(loop->body());
    Stmt* i = in.loop_index(loop, 0);
    in.field_store(x, {i, i}, value);
    in.field_atomic(AtomicOp::add, total, {}, value);
  }
  Stmt* c = b.const_float(f32, 1.5);
  Stmt* sum = b.binary(BinaryOp::add, c, value);
  Stmt* root = b.unary(UnaryOp::sqrt, sum);
  Stmt* as_int = b.cast(i32, root);
  Stmt* less = b.binary(BinaryOp::cmp_lt, as_int, n);
  Stmt* sel = b.select(less, as_int, n);
  Stmt* var = b.alloca_var(f32);
  b.local_store(var, sum);
  Stmt* loaded = b.local_load(var);
  b.field_load(x, {sel, sel});
  Stmt* sf = b.struct_for(x);
  Builder(sf->body()).loop_index(sf, 0);
  Stmt* cond = b.if_stmt(less);
  Builder(cond->then_block()).print("x = {}\n", {loaded});
  Stmt* w = b.while_loop();
  Builder(w->body()).break_stmt();

  const std::string expected = R"(field @x : f32[512, 512]
field @total : f32[]

kernel @paint(value: f32, n: i32) stage frontend {
  %0 = arg f32 0
  %1 = const i32 0
  %2 = const i32 512
  %3 = range_for %1 %2 {
    %4 = loop_index i32 %3 0
    field_store @x[%4, %4] %0
    %5 = field_atomic add f32 @total[] %0
  }
  %6 = const f32 1.5
  %7 = binary add f32 %6 %0
  %8 = unary sqrt f32 %7
  %9 = cast i32 %8
  %10 = binary cmp_lt u1 %9 %2
  %11 = select i32 %10 %9 %2
  %12 = alloca f32
  local_store %12 %7
  %13 = local_load f32 %12
  %14 = field_load f32 @x[%11, %11]
  %15 = struct_for @x {
    %16 = loop_index i32 %15 0
  }
  if %10 {
    print "x = {}\n" %13
  } else {
  }
  while {
    break
  }
}
)";
  EXPECT_EQ(print_module({&k}), expected);
  EXPECT_EQ(reprint(expected), expected);
  // print_kernel is the kernel alone.
  EXPECT_EQ(print_kernel(k), expected.substr(expected.find("kernel")));
  // print_stmt numbers like print_kernel and elides blocks.
  EXPECT_EQ(print_stmt(k, sum), "%7 = binary add f32 %6 %0");
  EXPECT_EQ(print_stmt(k, loop), "%3 = range_for %1 %2 { ... }");
  EXPECT_EQ(print_stmt(k, cond), "if %10 { ... } else { ... }");
}

constexpr std::string_view kEveryKind = R"(field @a : f32[16, 16]
field @n : i32[]
field @h : f16[8]

kernel @all(x: f32, k: i32) stage frontend {
  %0 = arg f32 0
  %1 = arg i32 1
  %2 = const i32 0
  %3 = const i32 16
  %4 = unary neg f32 %0
  %5 = cast i32 %4
  %6 = binary add i32 %5 %1
  %7 = binary cmp_lt u1 %6 %3
  %8 = select i32 %7 %6 %3
  %9 = alloca f32
  local_store %9 %0
  %10 = local_load f32 %9
  %11 = range_for %2 %3 {
    %12 = loop_index i32 %11 0
    %13 = field_load f32 @a[%12, %8]
    field_store @a[%12, %12] %13
    %14 = field_atomic add i32 @n[] %12
  }
  %15 = struct_for @h {
    %16 = loop_index i32 %15 0
    %17 = field_load f32 @h[%16]
    print "h[{}] = {}\n" %16 %17
  }
  while {
    if %7 {
      break
    } else {
      continue
    }
  }
}
)";

// The sparse statements at each stage where they are allowed (docs/ir.md,
// "Sparse SNodes, the lowered and the offloaded stages").
constexpr std::string_view kSparseKinds = R"(field @a : f32[16, 16]

kernel @front(v: f32) stage frontend {
  %0 = const i32 1
  %1 = const i32 2
  %2 = arg f32 0
  %3 = snode_op is_active u1 $S2[%0, %1]
  snode_op activate $S2[%0, %1]
  snode_op deactivate $S12[%0]
  %4 = snode_op append i32 $S5[%0] %2
  %5 = snode_op length i32 $S5[]
  assert %3 "cell ({}, {}) is \"active\"\n" %0 %1
  %6 = struct_for $S2 {
    %7 = loop_index i32 %6 0
    %8 = loop_index i32 %6 7
    %9 = field_load f32 @a[%7, %0]
    %10 = snode_op is_active u1 $S0[%7, %8]
  }
}

kernel @typed(v: f32) stage typed {
  %0 = const i32 1
  %1 = snode_op is_active u1 $S2[%0, %0]
  snode_op activate $S2[%0, %0]
  %2 = arg f32 0
  %3 = snode_op append i32 $S5[%0] %2
  %4 = struct_for $S3 {
  }
}

kernel @lowered(v: f32) stage lowered {
  task serial $-1 "main" {
    %0 = const u32 16
    %1 = arg f32 0
    %2 = tree_load f32 @t0[%0]
    %3 = tree_load f32 @t0[%0] as f16
    tree_store @t0[%0] %1 as f16
    tree_store @t0[%0] %2 as f32
    %4 = const i32 -1
    tree_store @t1[%0] %4 as i32
    %5 = tree_load i8 @t1[%0]
    %6 = tree_atomic add i32 @t1[%0] %4
    %7 = const f64 2.5
    %8 = tree_atomic exchange f64 @t10[%0] %7
    %9 = tree_cas u32 @t1[%0] %0 %0
    %10 = const i32 0
    %11 = range_for %10 %4 {
      %12 = loop_index i32 %11 0
      %13 = cast u32 %12
      %14 = tree_atomic max i32 @t1[%13] %12
      %15 = tree_load atomic u32 @t1[%13]
      %16 = tree_atomic reduce add i32 @t1[%0] %12
      %17 = tree_atomic accumulate add f32 @t0[%0] %1
    }
    %18 = binary cmp_eq u1 %9 %0
    if unlikely %18 {
      tree_store @t1[%0] %9 as u32
    } else {
    }
    %19 = tree_load f32 @t0[%0] field @a
    tree_store @t0[%0] %19 as f32 field @a
    %20 = tree_load u32 @t1[%0] runtime
    %21 = subgroup_first u32 %20
    %22 = subgroup_elect
    if %22 {
      tree_store @t1[%0] %21 as u32
    } else {
    }
  }
}

kernel @offloaded() stage offloaded {
  task serial $-1 "init" {
    %0 = const u32 0
    %1 = tree_load u32 @t0[%0]
    tree_store @t0[%0] %1 as u32
    %2 = const i32 0
    %3 = range_for %2 %2 {
      break
    }
  }
  task listgen $S2 "listgen S1->S2" {
    %4 = const u32 4
    %5 = tree_load i32 @t0[%4]
    %6 = const i32 0
    %7 = range_for %6 %5 {
      %8 = loop_index i32 %7 0
      %9 = cast u32 %8
      %10 = tree_cas u32 @t0[%9] %4 %4
    }
  }
  task clear_list $S2 "" {
  }
  task range_for $-1 "range\t\"for\"\n\x01" {
    %11 = const i32 0
    %12 = range_for %11 %11 {
      while {
        break
      }
    }
  }
  task struct_for $S3 "s" {
    %13 = const i32 0
    %14 = range_for %13 %13 {
    }
  }
  task gc $S4 "gc" {
    %15 = const i32 0
    %16 = range_for %15 %15 {
    }
  }
  task gc_finish $S4 "gc_finish" {
  }
}

kernel @unlowered() stage offloaded {
  task range_for $-1 "r" {
    %0 = const i32 0
    %1 = const i32 16
    %2 = snode_op length i32 $S5[]
    %3 = field_load f32 @a[%0, %0]
    %4 = range_for %0 %1 {
      %5 = loop_index i32 %4 0
      %6 = field_load f32 @a[%5, %5]
      field_store @a[%5, %0] %6
      %7 = field_atomic max f32 @a[%0, %5] %6
      snode_op activate $S2[%5, %5]
    }
  }
  task struct_for $S2 "struct_for S2" {
    %8 = const i32 1
    %9 = struct_for $S2 {
      %10 = loop_index i32 %9 1
      %11 = field_load f32 @a[%10, %8]
    }
  }
}

kernel @legal(v: f32) stage legal
  message 0 print "v = {}\n" f32
  message 1 assert "v is {} and {}" f32 i64
{
  task serial $-1 "main" {
    %0 = arg f32 0
    %1 = bitcast u32 %0
    %2 = bitcast f32 %1
    %3 = message_base
    %4 = const u32 32
    tree_store @context[%4] %3 as u32
    %5 = tree_atomic add u32 @context[%4] %4
    stop
  }
}
)";

TEST(TextTest, RoundTripsEveryStatementKind) {
  ParsedModule m = parse_module(kEveryKind, "every.ir");
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(print(m), kEveryKind);
  ParsedModule sparse = parse_module(kSparseKinds, "sparse.ir");
  ASSERT_EQ(sparse.kernels.size(), 6u);
  EXPECT_EQ(print(sparse), kSparseKinds);

  std::set<StmtKind> seen;
  walk(m.kernels[0]->body(), [&](Stmt* s) { seen.insert(s->kind()); });
  for (const auto& k : sparse.kernels) {
    walk(k->body(), [&](Stmt* s) { seen.insert(s->kind()); });
    EXPECT_NO_THROW(verify(*k, "parse")) << k->name();
  }
  constexpr StmtKind kAll[] = {
#define GROVE_STMT(Kind, mnemonic, operands, blocks, category) StmtKind::Kind,
#include "ir/statements.def"
  };
  for (StmtKind k : kAll) EXPECT_TRUE(seen.count(k)) << "the module lacks '" << kind_name(k) << "'";

  // The parsed fields keep their declaration order as ids, and the kernel is valid.
  ASSERT_EQ(m.fields->size(), 3);
  EXPECT_EQ(m.fields->get(2).name, "h");
  EXPECT_EQ(m.fields->get(2).dtype, f16);
  EXPECT_EQ(m.fields->get(0).shape, (std::vector<int64_t>{16, 16}));
  EXPECT_NO_THROW(verify(*m.kernels[0], "parse"));
}

// A visitor generated from statements.def sends every kind to its own
// handler (a kind without one would not compile).
struct KindNamer : ConstStmtVisitor<KindNamer, std::string> {
#define GROVE_STMT(Kind, mnemonic, operands, blocks, category) \
  std::string visit_##Kind(const Stmt*) { return mnemonic; }
#include "ir/statements.def"
};

TEST(TextTest, TheVisitorReachesEveryKind) {
  std::set<StmtKind> seen;
  for (std::string_view text : {kEveryKind, kSparseKinds}) {
    ParsedModule m = parse_module(text, "every.ir");
    for (const auto& k : m.kernels)
      walk(k->body(), [&](Stmt* s) {
        EXPECT_EQ(KindNamer().visit(s), kind_name(s->kind()));
        seen.insert(s->kind());
      });
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(StmtKind::Task) + 1);
  EXPECT_TRUE(is_tree_access(StmtKind::TreeCas));
  EXPECT_TRUE(is_field_access(StmtKind::FieldAtomic));
  EXPECT_TRUE(is_value(StmtKind::Select));
  EXPECT_FALSE(is_value(StmtKind::LoopIndex));
}

TEST(TextTest, NestedBlocksIndentTwoSpacesPerLevel) {
  const std::string text = R"(kernel @deep() stage frontend {
  %0 = const i32 0
  %1 = const i32 4
  %2 = const u1 1
  %3 = range_for %0 %1 {
    %4 = range_for %0 %1 {
      while {
        if %2 {
          %5 = loop_index i32 %3 0
          %6 = loop_index i32 %4 0
          if %2 {
            print "{} {}" %5 %6
          } else {
            break
          }
        } else {
          while {
            continue
          }
        }
      }
    }
  }
  if %2 {
  } else {
    %7 = const i32 7
  }
}
)";
  EXPECT_EQ(reprint(text), text);
  ParsedModule m = parse_module(text);
  const Stmt* outer = m.kernels[0]->body()->at(3);
  ASSERT_EQ(outer->kind(), StmtKind::RangeFor);
  const Stmt* inner = outer->body()->at(0);
  const Stmt* w = inner->body()->at(0);
  const Stmt* cond = w->body()->at(0);
  EXPECT_EQ(cond->then_block()->at(0)->loop(), outer);
  EXPECT_EQ(cond->then_block()->at(1)->loop(), inner);
  EXPECT_NO_THROW(verify(*m.kernels[0], "parse"));
}

// A text kernel nests blocks at most kMaxNesting deep (the kernel's body
// counts one); deeper is a parse error at the block that passes the limit,
// not a stack overflow in the parser or a later pass.
TEST(TextTest, BlocksNestedPastTheLimitAreAParseError) {
  auto nested = [](int ifs) {
    std::string t = "kernel @deep() {\n  %0 = const u1 1\n";
    for (int d = 0; d < ifs; ++d) t += "if %0 {\n";
    t += "print \"in\"\n";
    for (int d = 0; d < ifs; ++d) t += "}\n";
    return t + "}\n";
  };
  EXPECT_EQ(parse_error(nested(kMaxNesting - 1)), "(no error)");
  const std::string m = parse_error(nested(kMaxNesting));
  EXPECT_TRUE(contains(m, "test.ir:" + std::to_string(kMaxNesting + 2) + ":")) << m;
  EXPECT_TRUE(contains(m, "blocks nested more than 256 deep")) << m;
  EXPECT_TRUE(contains(parse_error(nested(100000)), "nested more than 256 deep"));
}

TEST(TextTest, FloatSpecialValuesAndNegativeZero) {
  const std::string text = R"(kernel @floats() stage frontend {
  %0 = const f32 inf
  %1 = const f32 -inf
  %2 = const f32 nan
  %3 = const f32 -0
  %4 = const f32 0
  %5 = const f32 0.1
  %6 = const f32 1e-45
  %7 = const f32 3.4028235e+38
  %8 = const f64 inf
  %9 = const f64 -inf
  %10 = const f64 -nan
  %11 = const f64 -0
  %12 = const f64 0.1
  %13 = const f64 5e-324
  %14 = const f64 1.7976931348623157e+308
  %15 = const f64 0.30000000000000004
  %16 = const f32 16777216
  %17 = const f64 123456789012345683968
}
)";
  EXPECT_EQ(reprint(text), text);
  ParsedModule m = parse_module(text);
  std::vector<const Stmt*> c = consts(*m.kernels[0]);
  ASSERT_EQ(c.size(), 18u);
  EXPECT_EQ(c[0]->bits(), 0x7f800000u);
  EXPECT_EQ(c[1]->bits(), 0xff800000u);
  EXPECT_TRUE(std::isnan(c[2]->const_float()));
  EXPECT_EQ(c[3]->bits(), 0x80000000u);  // -0 keeps its sign
  EXPECT_EQ(c[4]->bits(), 0u);
  EXPECT_EQ(c[5]->bits(), 0x3dcccccdu);  // f32 0.1 read as a float, not via double
  EXPECT_EQ(c[6]->bits(), 1u);           // the smallest subnormal
  EXPECT_EQ(c[7]->bits(), 0x7f7fffffu);
  EXPECT_TRUE(std::isnan(c[10]->const_float()));
  EXPECT_TRUE(std::signbit(c[10]->const_float()));
  EXPECT_EQ(c[11]->bits(), uint64_t{1} << 63);
  EXPECT_EQ(c[12]->const_float(), 0.1);
  EXPECT_EQ(c[13]->bits(), 1u);
  EXPECT_EQ(c[15]->const_float(), 0.1 + 0.2);
  // Large integral doubles print all their digits (the shorter form); other
  // spellings of the same value read back to the same bits.
  EXPECT_EQ(c[17]->const_float(), 1.2345678901234568e+20);
  ParsedModule other = parse_module("kernel @k() {\n  %0 = const f64 1.2345678901234568e+20\n"
                                    "  %1 = const f32 0.100000001\n  %2 = const f32 1E3\n}\n");
  EXPECT_EQ(consts(*other.kernels[0])[0]->bits(), c[17]->bits());
  EXPECT_EQ(consts(*other.kernels[0])[1]->bits(), c[5]->bits());
  EXPECT_EQ(print(other), "kernel @k() stage frontend {\n  %0 = const f64 123456789012345683968\n"
                          "  %1 = const f32 0.1\n  %2 = const f32 1000\n}\n");
}

TEST(TextTest, NanPayloadsAreCanonicalised) {
  FieldTable fields;
  Kernel k("nans", {}, &fields);
  Builder b(k.body());
  b.const_bits(f32, 0x7fc01234u);          // quiet NaN with a payload
  b.const_bits(f32, 0xff800001u);          // negative signalling NaN
  b.const_bits(f64, 0x7ff0000000000001u);  // signalling NaN
  const std::string printed = print_kernel(k);
  EXPECT_EQ(printed, R"(kernel @nans() stage frontend {
  %0 = const f32 nan
  %1 = const f32 -nan
  %2 = const f64 nan
}
)");
  ParsedModule m = parse_module(printed);
  std::vector<const Stmt*> c = consts(*m.kernels[0]);
  EXPECT_EQ(c[0]->bits(), 0x7fc00000u);
  EXPECT_EQ(c[1]->bits(), 0xffc00000u);
  EXPECT_EQ(c[2]->bits(), 0x7ff8000000000000u);
  EXPECT_EQ(print(m), printed);
}

TEST(TextTest, IntegerTypesAtTheirExtremes) {
  const std::string text = R"(kernel @ints() stage frontend {
  %0 = const u1 0
  %1 = const u1 1
  %2 = const i8 -128
  %3 = const i8 127
  %4 = const i16 -32768
  %5 = const i16 32767
  %6 = const i32 -2147483648
  %7 = const i32 2147483647
  %8 = const i64 -9223372036854775808
  %9 = const i64 9223372036854775807
  %10 = const u8 0
  %11 = const u8 255
  %12 = const u16 65535
  %13 = const u32 4294967295
  %14 = const u64 18446744073709551615
  %15 = const i32 -1
}
)";
  EXPECT_EQ(reprint(text), text);
  ParsedModule m = parse_module(text);
  std::vector<const Stmt*> c = consts(*m.kernels[0]);
  ASSERT_EQ(c.size(), 16u);
  EXPECT_EQ(c[1]->const_int(), 1);
  EXPECT_EQ(c[2]->const_int(), -128);
  EXPECT_EQ(c[2]->bits(), 0x80u);  // stored truncated to the width
  EXPECT_EQ(c[6]->const_int(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(c[8]->const_int(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(c[9]->const_int(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(c[13]->bits(), 0xffffffffu);
  EXPECT_EQ(c[14]->bits(), ~uint64_t{0});
  EXPECT_EQ(c[15]->bits(), 0xffffffffu);

  // One past each end is rejected, naming the type.
  struct Case {
    const char* type;
    const char* value;
  };
  for (Case bad : {Case{"u1", "2"}, Case{"i8", "-129"}, Case{"i8", "128"}, Case{"u8", "256"},
                   Case{"u8", "-1"}, Case{"i16", "32768"}, Case{"u32", "4294967296"},
                   Case{"i64", "9223372036854775808"}, Case{"u64", "18446744073709551616"},
                   Case{"i32", "1.5"}}) {
    std::string msg = parse_error(std::string("kernel @k() stage frontend {\n  %0 = const ") +
                                  bad.type + " " + bad.value + "\n}\n");
    EXPECT_TRUE(contains(msg, "test.ir:2:")) << msg;
    EXPECT_TRUE(contains(msg, bad.type)) << msg;
    EXPECT_TRUE(contains(msg, bad.value)) << msg;
  }
}

TEST(TextTest, StringEscapes) {
  const std::string text =
      "kernel @strings() stage frontend {\n"
      "  %0 = const i32 1\n"
      "  print \"tab\\there \\\"quoted\\\" back\\\\slash {}\\n\" %0\n"
      "  print \"ctl \\x01\\x1f del \\x7f high \\xc3\\xa9 # not a comment\"\n"
      "  print \"\"\n"
      "}\n";
  EXPECT_EQ(reprint(text), text);
  ParsedModule m = parse_module(text);
  const Block* body = m.kernels[0]->body();
  EXPECT_EQ(body->at(1)->text(), "tab\there \"quoted\" back\\slash {}\n");
  EXPECT_EQ(body->at(2)->text(), "ctl \x01\x1f del \x7f high \xc3\xa9 # not a comment");
  EXPECT_EQ(body->at(3)->text(), "");

  // Escapes the printer does not produce are still read.
  ParsedModule other = parse_module("kernel @s() { print \"a\\rb\\0c\\'\" }");
  EXPECT_EQ(other.kernels[0]->body()->at(0)->text(), std::string("a\rb\0c'", 6));
  EXPECT_TRUE(contains(parse_error("kernel @s() { print \"\\q\" }"), "unknown escape")) ;
  EXPECT_TRUE(contains(parse_error("kernel @s() { print \"\\x4\" }"), "two hex digits"));
  EXPECT_TRUE(contains(parse_error("kernel @s() {\n  print \"abc\n}"), "test.ir:2:9: unterminated"));
}

TEST(TextTest, KernelArgumentsOfEveryType) {
  const std::string text = R"(kernel @args(a: u1, b: i8, c: i16, d: i32, e: i64, f: u8, g: u16, h: u32, i: u64, j: f16, k: f32, l: f64) stage frontend {
  %0 = arg u1 0
  %1 = arg i8 1
  %2 = arg i16 2
  %3 = arg i32 3
  %4 = arg i64 4
  %5 = arg u8 5
  %6 = arg u16 6
  %7 = arg u32 7
  %8 = arg u64 8
  %9 = arg f32 9
  %10 = arg f32 10
  %11 = arg f64 11
}
)";
  EXPECT_EQ(reprint(text), text);
  ParsedModule m = parse_module(text);
  const Kernel& k = *m.kernels[0];
  ASSERT_EQ(k.args().size(), 12u);
  EXPECT_EQ(k.args()[9].name, "j");
  EXPECT_EQ(k.args()[9].type, f16);
  EXPECT_EQ(k.body()->at(9)->type(), f32);  // an f16 argument is read as f32
  EXPECT_NO_THROW(verify(k, "parse"));

  // Names that are not identifiers are quoted.
  FieldTable fields;
  fields.add("my field", i32, {2});
  Kernel odd("odd kernel", {{"2x", i32}, {"", f32}, {"a.b_c", u8}}, &fields);
  Builder b(odd.body());
  Stmt* zero = b.const_int(i32, 0);
  b.field_store(fields.get(0), {zero}, zero);
  const std::string printed = print_module({&odd});
  EXPECT_TRUE(contains(printed, "field @\"my field\" : i32[2]\n")) << printed;
  EXPECT_TRUE(contains(printed, "kernel @\"odd kernel\"(\"2x\": i32, \"\": f32, a.b_c: u8)")) << printed;
  ParsedModule back = parse_module(printed);
  EXPECT_EQ(back.kernels[0]->name(), "odd kernel");
  EXPECT_EQ(back.kernels[0]->args()[0].name, "2x");
  EXPECT_EQ(print(back), printed);
}

TEST(TextTest, MultipleKernelsShareTheUsedFields) {
  FieldTable fields;
  fields.add("a", f32, {8});
  fields.add("never", f64, {1, 2, 3});
  fields.add("c", u8, {2, 2});
  const FieldDecl& a = fields.get(0);
  const FieldDecl& c = fields.get(2);
  Kernel first("first", {}, &fields);
  Kernel second("second", {{"v", f32}}, &fields);
  {
    Builder b(first.body());
    Stmt* i = b.const_int(i32, 1);
    b.field_store(c, {i, i}, b.const_int(u8, 200));
  }
  {
    Builder b(second.body());
    Stmt* i = b.const_int(i32, 3);
    b.field_store(a, {i}, b.arg(f32, 0));
  }
  const std::string expected = R"(field @a : f32[8]
field @c : u8[2, 2]

kernel @first() stage frontend {
  %0 = const i32 1
  %1 = const u8 200
  field_store @c[%0, %0] %1
}

kernel @second(v: f32) stage frontend {
  %0 = const i32 3
  %1 = arg f32 0
  field_store @a[%0] %1
}
)";
  EXPECT_EQ(print_module({&first, &second}), expected);
  ParsedModule m = parse_module(expected);
  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(&m.kernels[0]->fields(), m.fields.get());
  EXPECT_EQ(&m.kernels[1]->fields(), m.fields.get());
  EXPECT_EQ(m.kernels[0]->body()->at(2)->field(), 1);  // @c is the second declaration
  EXPECT_EQ(print(m), expected);

  // A module without fields has no blank line before its first kernel.
  Kernel empty("empty", {}, &fields);
  EXPECT_EQ(print_module({&empty}), "kernel @empty() stage frontend {\n}\n");
  EXPECT_EQ(print_module({}), "");
}

TEST(TextTest, CommentsAndLayoutAreIgnored) {
  const std::string messy = R"(# a module with comments
field @x : i32[4]   # trailing comment

kernel @k(n: i32)    stage   typed
{ # the body
  %10 = const i32 0   # numbers need not start at zero
  %42 = arg i32 0
  %7 = range_for %10 %42 {   # nor be consecutive
    %3 = loop_index i32 %7 0
    field_store @x[%3] %3
    print "# inside a string is text {}" %3
  }
  if %99 = const u1 1 # see below: this line is not valid
}
)";
  // The `if` line above is malformed on purpose; check it is reported...
  std::string msg = parse_error(messy);
  EXPECT_TRUE(contains(msg, "test.ir:13:6: unknown value %99")) << msg;
  // ...and parse the module without it.
  std::string text = messy;
  text.erase(text.find("  if %99"), text.find("}\n", text.find("  if %99")) - text.find("  if %99"));
  const std::string canonical = R"(field @x : i32[4]

kernel @k(n: i32) stage typed {
  %0 = const i32 0
  %1 = arg i32 0
  %2 = range_for %0 %1 {
    %3 = loop_index i32 %2 0
    field_store @x[%3] %3
    print "# inside a string is text {}" %3
  }
}
)";
  EXPECT_EQ(reprint(text), canonical);
  EXPECT_EQ(reprint(canonical), canonical);
  ParsedModule m = parse_module(text);
  EXPECT_EQ(m.kernels[0]->stage, Stage::typed);
  EXPECT_NO_THROW(verify(*m.kernels[0], "parse"));
}

TEST(TextTest, SyntaxErrorsNameTheLineAndWhatWasExpected) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"kernel @k() stage frontend {\n  %0 = const i32 1\n", "test.ir:3:1: expected a statement or '}' but found end of input"},
      {"kernel @k() stage frontend {\n  %0 = const i32 1\n  %1 = binary add i32 %0\n}\n",
       "test.ir:4:1: expected a value (%N) but found '}'"},
      {"kernel @k( stage frontend {\n}\n", "test.ir:1:18: expected ':' but found 'frontend'"},
      {"kernel k() {\n}\n", "test.ir:1:8: expected a kernel name (@name) but found 'k'"},
      {"field @x : f32[4\nkernel @k() {}\n", "test.ir:2:1: expected ']' but found 'kernel'"},
      {"fields @x : f32[4]\n", "test.ir:1:1: expected 'field' or 'kernel' but found 'fields'"},
      {"kernel @k() {\n  %0 = const\n}\n", "test.ir:3:1: expected a type but found '}'"},
      {"kernel @k() {\n  %0 = const i32 1\n  if %0 [\n  }\n}\n", "test.ir:3:9: expected '{' but found '['"},
      {"kernel @k() {\n  %0 = const i32 1\n  %1 = local_load i32 %0\n}\n",
       "test.ir:3:23: expected an alloca but found %0"},
      {"kernel @k() {\n  %0 = const i32 1 ?\n}\n", "test.ir:2:20: unexpected character '?'"},
      {"kernel @k() {\n  %0 = const i32 1 $\n}\n", "test.ir:2:20: expected an SNode ($S<n> or $-1) after '$'"},
      {"kernel @k() {\n  %0 = const f32 1.5.2\n}\n",
       "test.ir:2:18: expected a constant of type f32 but found '1.5.2'"},
      {"kernel @k() {\n  %0 = field_store\n}\n", "test.ir:2:8: 'field_store' does not define a value"},
      {"kernel @k() {\n  const i32 1\n}\n", "test.ir:2:3: expected '%N = ' before 'const'"},
      {"kernel @k() stage lowest {\n}\n", "test.ir:1:19: unknown stage 'lowest'"},
  };
  for (const Case& c : cases) {
    std::string msg = parse_error(c.text);
    EXPECT_TRUE(contains(msg, c.message)) << "got: " << msg << "\nwanted: " << c.message;
  }
  // The source name is the one given.
  try {
    parse_module("kernel", "my_file.ir");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "my_file.ir:1:7: expected a kernel name (@name) but found end of input"))
        << e.what();
  }
}

TEST(TextTest, SemanticErrorsNameTheProblem) {
  const char* head = "field @x : f32[4, 4]\nkernel @k() stage frontend {\n  %0 = const i32 1\n";
  struct Case {
    const char* body;
    const char* message;
  };
  const Case cases[] = {
      {"  %1 = binary add i32 %0 %7\n", "test.ir:4:26: unknown value %7"},
      {"  %1 = field_load f32 @y[%0, %0]\n", "test.ir:4:23: unknown field @y"},
      {"  %1 = field_load f32 @x[%0]\n", "test.ir:4:23: wrong number of indices for field @x"},
      {"  field_store @x[%0, %0, %0] %0\n", "test.ir:4:15: wrong number of indices for field @x"},
      {"  %1 = binary plus i32 %0 %0\n", "test.ir:4:15: unknown binary op 'plus'"},
      {"  %1 = unary sqrtf f32 %0\n", "test.ir:4:14: unknown unary op 'sqrtf'"},
      {"  %1 = field_atomic mul f32 @x[%0, %0] %0\n", "test.ir:4:21: unknown atomic op 'mul'"},
      {"  %1 = cast i33 %0\n", "test.ir:4:13: unknown type 'i33'"},
      {"  %1 = const i32 2\n  %1 = const i32 3\n", "test.ir:5:3: %1 is defined twice (first on line 4)"},
      {"  %0 = const i32 2\n", "test.ir:4:3: %0 is defined twice (first on line 3)"},
      {"  %1 = loop_index i32 %0 0\n", "test.ir:4:23: %0 is not a range_for or struct_for"},
      {"  %1 = frobnicate i32 %0\n", "test.ir:4:8: unknown statement 'frobnicate'"},
      {"  %1 = const f16 1\n", "test.ir:4:14: f16 is a storage type"},
  };
  for (const Case& c : cases) {
    std::string msg = parse_error(std::string(head) + c.body + "}\n");
    EXPECT_TRUE(contains(msg, c.message)) << "got: " << msg << "\nwanted: " << c.message;
  }
  EXPECT_TRUE(contains(parse_error("field @x : f32[1]\nfield @x : i32[2]\n"),
                       "test.ir:2:7: field @x is declared twice"));
  EXPECT_TRUE(contains(parse_error("field @x : unknown[1]\n"), "test.ir:1:12: unknown type 'unknown'"));
  // Values are per kernel: the second kernel cannot see the first one's %0.
  EXPECT_TRUE(contains(parse_error("kernel @a() {\n  %0 = const i32 1\n}\nkernel @b() {\n  print \"{}\" %0\n}\n"),
                       "test.ir:5:14: unknown value %0"));
}

// The attributes of the sparse statements read back as printed.
TEST(TextTest, SparseStatementsKeepTheirAttributes) {
  ParsedModule m = parse_module(kSparseKinds, "sparse.ir");
  const Block* front = m.kernels[0]->body();
  EXPECT_EQ(m.kernels[2]->stage, Stage::lowered);
  EXPECT_EQ(m.kernels[3]->stage, Stage::offloaded);
  const Stmt* active = front->at(3);
  ASSERT_EQ(active->kind(), StmtKind::SNodeOp);
  EXPECT_EQ(active->snode_op(), SNodeOpKind::is_active);
  EXPECT_EQ(active->snode(), 2);
  EXPECT_EQ(active->type(), u1);
  EXPECT_EQ(active->indices().size(), 2u);
  const Stmt* append = front->at(6);
  EXPECT_EQ(append->snode_op(), SNodeOpKind::append);
  EXPECT_EQ(append->indices().size(), 1u);
  ASSERT_EQ(append->values().size(), 1u);
  EXPECT_EQ(append->values()[0], front->at(2));
  EXPECT_EQ(front->at(5)->snode(), 12);
  EXPECT_EQ(front->at(5)->type(), DataType::unknown);
  const Stmt* check = front->at(8);
  ASSERT_EQ(check->kind(), StmtKind::Assert);
  EXPECT_EQ(check->cond(), active);
  EXPECT_EQ(check->text(), "cell ({}, {}) is \"active\"\n");
  EXPECT_EQ(check->operands().size(), 3u);
  const Stmt* sf = front->at(9);
  EXPECT_EQ(sf->field(), -1);
  EXPECT_EQ(sf->snode(), 2);

  const Block* low = m.kernels[2]->body()->at(0)->body();
  EXPECT_EQ(low->at(2)->storage(), f32);
  EXPECT_EQ(low->at(3)->storage(), f16);
  EXPECT_EQ(low->at(3)->type(), f32);
  EXPECT_EQ(low->at(4)->storage(), f16);
  EXPECT_EQ(low->at(7)->tree(), 1);
  EXPECT_EQ(low->at(8)->storage(), i8);
  EXPECT_EQ(low->at(8)->type(), i8);
  const Stmt* xchg = low->at(11);
  EXPECT_EQ(xchg->atomic_op(), AtomicOp::exchange);
  EXPECT_EQ(xchg->tree(), 10);
  const Stmt* cas = low->at(12);
  EXPECT_EQ(cas->expected(), low->at(0));
  EXPECT_EQ(cas->desired(), low->at(0));
  ASSERT_EQ(low->at(16)->kind(), StmtKind::If);
  EXPECT_TRUE(low->at(16)->unlikely());
  // What the accessed words hold: unknown unless named.
  EXPECT_EQ(low->at(2)->field(), -1);
  EXPECT_EQ(low->at(17)->field(), 0);  // @a
  EXPECT_EQ(low->at(18)->field(), 0);
  EXPECT_EQ(low->at(19)->field(), kRuntimeWords);

  const Block* off = m.kernels[3]->body();
  ASSERT_EQ(off->size(), 7u);
  EXPECT_EQ(off->at(0)->task_kind(), TaskKind::serial);
  EXPECT_EQ(off->at(0)->snode(), -1);
  EXPECT_EQ(off->at(0)->text(), "init");
  EXPECT_EQ(off->at(1)->task_kind(), TaskKind::listgen);
  EXPECT_EQ(off->at(1)->snode(), 2);
  EXPECT_EQ(off->at(3)->text(), "range\t\"for\"\n\x01");
  EXPECT_EQ(off->at(6)->task_kind(), TaskKind::gc_finish);
  // print_stmt elides a task's block like a loop's.
  EXPECT_EQ(print_stmt(*m.kernels[3], off->at(1)), "task listgen $S2 \"listgen S1->S2\" { ... }");
  EXPECT_EQ(print_stmt(*m.kernels[3], off->at(1)->body()->at(3)), "%7 = range_for %6 %5 { ... }");
}

// The builder's sparse statements print in the documented form.
TEST(TextTest, PrintsBuiltSparseStatements) {
  FieldTable fields;
  Kernel k("built", {}, &fields);
  k.stage = Stage::lowered;
  Stmt* serial = Builder(k.body()).task(TaskKind::serial, -1, "main");
  Builder b(serial->body());
  Stmt* addr = b.const_int(u32, 8);
  Stmt* v = b.tree_load(3, f16, addr);
  b.tree_store(3, f16, addr, v);
  Stmt* i = b.const_int(i64, 5);
  b.tree_atomic(AtomicOp::bit_or, 0, i64, addr, i);
  Stmt* expected_value = b.const_int(u64, 0);
  Stmt* desired = b.const_int(u64, 1);
  b.tree_cas(1, u64, addr, expected_value, desired);
  const std::string expected = R"(kernel @built() stage lowered {
  task serial $-1 "main" {
    %0 = const u32 8
    %1 = tree_load f32 @t3[%0] as f16
    tree_store @t3[%0] %1 as f16
    %2 = const i64 5
    %3 = tree_atomic bit_or i64 @t0[%0] %2
    %4 = const u64 0
    %5 = const u64 1
    %6 = tree_cas u64 @t1[%0] %4 %5
  }
}
)";
  EXPECT_EQ(print_kernel(k), expected);
  EXPECT_NO_THROW(verify(k, "built"));

  Kernel front("front", {}, &fields);
  Builder f(front.body());
  Stmt* zero = f.const_int(i32, 0);
  f.snode_op(SNodeOpKind::activate, 7, {zero, zero});
  f.snode_op(SNodeOpKind::length, 7, {zero});
  f.struct_for_snode(7);
  Stmt* task = f.task(TaskKind::serial, -1, "a\tb");  // invalid at frontend, but prints
  EXPECT_EQ(print_kernel(front), R"(kernel @front() stage frontend {
  %0 = const i32 0
  snode_op activate $S7[%0, %0]
  %1 = snode_op length i32 $S7[%0]
  %2 = struct_for $S7 {
  }
  task serial $-1 "a\tb" {
  }
}
)");
  EXPECT_EQ(reprint(print_kernel(front)), print_kernel(front));
  EXPECT_EQ(print_stmt(front, task), "task serial $-1 \"a\\tb\" { ... }");
}

TEST(TextTest, SparseSyntaxErrors) {
  const char* head = "kernel @k() stage lowered {\n  %0 = const u32 1\n";
  struct Case {
    const char* body;
    const char* message;
  };
  const Case cases[] = {
      {"  snode_op is_active u1 $S2[%0]\n", "test.ir:3:12: expected '%N = ' before 'snode_op is_active'"},
      {"  %1 = snode_op activate $S2[%0]\n", "test.ir:3:17: 'snode_op activate' does not define a value"},
      {"  %1 = snode_op grow i32 $S2[%0]\n", "test.ir:3:17: unknown snode op 'grow'"},
      {"  %1 = snode_op length i32 @x[%0]\n", "test.ir:3:28: expected an SNode ($S<n> or $-1) but found '@x'"},
      {"  %1 = snode_op length i32 $X[%0]\n", "test.ir:3:28: expected an SNode ($S<n> or $-1) after '$'"},
      {"  %1 = snode_op length i32 $S[%0]\n", "test.ir:3:28: expected an SNode number"},
      {"  %1 = tree_load f32 @x[%0]\n", "test.ir:3:22: expected a tree (@t<n>) but found '@x'"},
      {"  %1 = tree_load f32 @t[%0]\n", "test.ir:3:22: expected a tree (@t<n>) but found '@t'"},
      {"  %1 = tree_load f32 @t0 %0\n", "test.ir:3:26: expected '[' but found '%0'"},
      {"  %1 = tree_load f32 @t0[%0] as f33\n", "test.ir:3:33: unknown type 'f33'"},
      {"  tree_store @t0[%0] %0\n}\n", "test.ir:4:1: expected 'as' but found '}'"},
      {"  %1 = tree_atomic mul u32 @t0[%0] %0\n", "test.ir:3:20: unknown atomic op 'mul'"},
      {"  %1 = tree_cas u32 @t0[%0] %0\n", "test.ir:4:1: expected a value (%N) but found '}'"},
      {"  task parallel $-1 \"x\" {\n  }\n", "test.ir:3:8: unknown task op 'parallel'"},
      {"  task serial $-1 {\n  }\n", "test.ir:3:19: expected a task label (a string) but found '{'"},
      {"  task serial \"x\" {\n  }\n", "test.ir:3:15: expected an SNode ($S<n> or $-1) but found a string"},
      {"  %1 = task serial $-1 \"x\" {\n  }\n", "test.ir:3:8: 'task' does not define a value"},
      {"  %1 = struct_for $S99999999999 {\n  }\n", "test.ir:3:19: SNode number 99999999999 is out of range"},
  };
  for (const Case& c : cases) {
    std::string msg = parse_error(std::string(head) + c.body + "}\n");
    EXPECT_TRUE(contains(msg, c.message)) << "got: " << msg << "\nwanted: " << c.message;
  }
}

// Types the builder would not pick are kept as printed (the verifier, not the
// parser, judges them), so text written by a test or a pass round-trips.
TEST(TextTest, PrintedTypesAreKeptExactly) {
  const std::string text = R"(field @x : f16[2]

kernel @types(a: f16) stage frontend {
  %0 = arg f16 0
  %1 = const i32 0
  %2 = field_load i64 @x[%1]
  %3 = binary add unknown %0 %2
  %4 = binary cmp_lt f32 %0 %2
  %5 = alloca u8
  %6 = local_load f64 %5
  %7 = cast u1 %6
  %8 = range_for %1 %1 {
    %9 = loop_index i64 %8 0
  }
}
)";
  EXPECT_EQ(reprint(text), text);
  ParsedModule m = parse_module(text);
  const Block* body = m.kernels[0]->body();
  EXPECT_EQ(body->at(0)->type(), f16);
  EXPECT_EQ(body->at(2)->type(), i64);
  EXPECT_EQ(body->at(3)->type(), DataType::unknown);
  EXPECT_EQ(body->at(6)->type(), f64);
}

}  // namespace
}  // namespace grove::ir

namespace grove::ir {
namespace {

TEST(TextTest, FieldOffsetsAndStructAppendsRoundTrip) {
  const std::string text = R"(field @x : f32[64, 64] offset [-32, 5]
field @y : i32[4]

kernel @k(v: i32) stage frontend {
  %0 = const i32 -32
  %1 = field_load f32 @x[%0, %0]
  %2 = arg i32 0
  %3 = snode_op append i32 $S2[%2] %2 %1
  %4 = field_load i32 @y[%2]
}
)";
  EXPECT_EQ(reprint(text), text);
  ParsedModule m = parse_module(text, "offsets.ir");
  const FieldDecl* x = m.fields->find("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->offset, (std::vector<int64_t>{-32, 5}));
  EXPECT_FALSE(m.fields->find("y")->has_offset());
  const Stmt* append = m.kernels[0]->body()->at(3);
  EXPECT_EQ(append->indices().size(), 1u);
  EXPECT_EQ(append->values().size(), 2u);
  EXPECT_TRUE(contains(parse_error("field @z : f32[4] offset [1, 2]\n"), "']'"));
}

}  // namespace
}  // namespace grove::ir
