// tests/ir/verifier_test.cpp — the verifier accepts valid kernels and names what is broken.
#include <gtest/gtest.h>

#include <string>

#include "ir/assert.h"
#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "pass_test_util.h"

namespace grove::ir {
namespace {

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

using test::verify_error;
using test::verify_text;

// Every failure names the pass, the kernel and the offending statement.
void expect_rejected(const std::string& msg, std::string_view kernel, std::string_view problem,
                     std::string_view stmt) {
  EXPECT_TRUE(contains(msg, "after pass 'my_pass'")) << msg;
  EXPECT_TRUE(contains(msg, "in kernel '" + std::string(kernel) + "'")) << msg;
  EXPECT_TRUE(contains(msg, problem)) << "wanted: " << problem << "\ngot: " << msg;
  EXPECT_TRUE(contains(msg, "\n  at: " + std::string(stmt) + "\n")) << "wanted: " << stmt << "\ngot: " << msg;
}

TEST(VerifierTest, ValidKernelsPass) {
  const char* frontend = R"(field @x : f32[512, 512]
field @total : f32[]

kernel @paint(value: f32, n: i32) stage frontend {
  %0 = arg f32 0
  %1 = const i32 0
  %2 = const i32 512
  %3 = range_for %1 %2 {
    %4 = loop_index i32 %3 0
    field_store @x[%4, %4] %0
    %5 = field_atomic add f32 @total[] %0
    %6 = const i64 3
    %7 = binary add f32 %6 %0
    %8 = range_for %1 %4 {
      if %7 {
        break
      } else {
        continue
      }
    }
  }
  %9 = struct_for @x {
    %10 = loop_index i32 %9 1
    while {
      break
    }
  }
}
)";
  // At the frontend stage operand types may differ (i64 + f32, an f32 condition).
  EXPECT_EQ(verify_text(frontend), "(valid)");

  const char* typed = R"(field @x : f16[8]
field @count : u32[]

kernel @scale(s: f32, n: i32) stage typed {
  %0 = arg f32 0
  %1 = arg i32 1
  %2 = const i32 0
  %3 = range_for %2 %1 {
    %4 = loop_index i32 %3 0
    %5 = field_load f32 @x[%4]
    %6 = binary mul f32 %5 %0
    %7 = binary cmp_gt u1 %6 %0
    %8 = select f32 %7 %6 %0
    field_store @x[%4] %8
    %9 = const u32 1
    %10 = field_atomic add u32 @count[] %9
    %11 = binary shl i32 %4 %4
    %12 = unary logic_not u1 %7
    %13 = binary logic_and u1 %12 %7
    %14 = cast f64 %11
    %15 = unary sqrt f64 %14
    %16 = alloca f64
    local_store %16 %15
    %17 = local_load f64 %16
    print "{} {}" %17 %13
  }
}
)";
  EXPECT_EQ(verify_text(typed), "(valid)");
}

TEST(VerifierTest, RejectsUseBeforeDefinition) {
  FieldTable fields;
  Kernel k("early", {}, &fields);
  Builder b(k.body());
  Stmt* one = b.const_int(i32, 1);
  Builder front(k.body(), 0);
  front.binary(BinaryOp::add, one, one);  // now the first statement
  expect_rejected(verify_error(k), "early", "lhs operand %1 is used before its definition",
                  "%0 = binary add i32 %1 %1");
}

TEST(VerifierTest, RejectsUseOfAValueFromASiblingBlock) {
  std::string msg = verify_text(R"(kernel @sibling() stage frontend {
  %0 = const u1 1
  if %0 {
    %1 = const i32 5
  } else {
    print "{}" %1
  }
}
)");
  expect_rejected(msg, "sibling", "printed operand %1 is defined in a block that does not enclose this use",
                  "print \"{}\" %1");
  // The whole kernel is printed as well, to see where the statement sits.
  EXPECT_TRUE(contains(msg, "  kernel:\nkernel @sibling() stage frontend {\n")) << msg;

  // A value defined inside a loop is not visible after it either.
  expect_rejected(verify_text(R"(kernel @after() stage frontend {
  %0 = const i32 0
  %1 = range_for %0 %0 {
    %2 = loop_index i32 %1 0
  }
  %3 = binary add i32 %2 %2
}
)"),
                  "after", "does not enclose this use", "%3 = binary add i32 %2 %2");
}

TEST(VerifierTest, RejectsBreakOutsideSerialLoopsAndContinueOutsideLoops) {
  expect_rejected(verify_text("kernel @top() stage frontend {\n  break\n}\n"), "top",
                  "'break' outside any loop", "break");
  expect_rejected(verify_text("kernel @top2() stage frontend {\n  continue\n}\n"), "top2",
                  "'continue' outside any loop", "continue");
  expect_rejected(verify_text(R"(kernel @par() stage frontend {
  %0 = const i32 0
  %1 = range_for %0 %0 {
    %2 = const u1 1
    if %2 {
      break
    } else {
    }
  }
}
)"),
                  "par", "'break' directly inside a top-level range_for", "break");
  // continue ends one iteration of a parallel loop, as in Taichi.
  EXPECT_EQ(verify_text(R"(field @x : i32[4]

kernel @cont() stage frontend {
  %0 = const i32 0
  %1 = range_for %0 %0 {
    continue
  }
  %2 = struct_for @x {
    continue
  }
}
)"),
            "(valid)");
  expect_rejected(verify_text(R"(field @x : i32[4]

kernel @sf() stage frontend {
  %0 = struct_for @x {
    break
  }
}
)"),
                  "sf", "'break' directly inside a struct_for", "break");
  // A range_for that is not at the top level runs in order: break is fine there,
  // and so is a while nested in a parallel loop.
  EXPECT_EQ(verify_text(R"(kernel @ok() stage frontend {
  %0 = const i32 0
  %1 = range_for %0 %0 {
    %2 = range_for %0 %0 {
      break
    }
    while {
      continue
    }
  }
  %3 = const u1 1
  if %3 {
    %4 = range_for %0 %0 {
      break
    }
  } else {
  }
}
)"),
            "(valid)");
}

// A grid range_for is an axis of a parallel loop: last in its body, after
// side-effect-free statements only, and no break leaves it.
TEST(VerifierTest, GridLoopsAreAxesOfAParallelLoop) {
  EXPECT_EQ(verify_text(R"(field @x : i32[4, 4, 4]

kernel @ok() stage frontend {
  %0 = const i32 0
  %1 = const i32 4
  %2 = range_for %0 %1 {
    %3 = loop_index i32 %2 0
    %4 = binary add i32 %3 %1
    %5 = range_for grid %0 %4 {
      %6 = range_for grid %0 %1 {
        %7 = loop_index i32 %5 0
        %8 = loop_index i32 %6 0
        %9 = binary cmp_eq u1 %8 %0
        if %9 {
          continue
        } else {
        }
        field_store @x[%3, %7, %8] %8
      }
    }
  }
}
)"),
            "(valid)");
  expect_rejected(verify_text(R"(kernel @serial() stage frontend {
  %0 = const i32 0
  %1 = const u1 1
  if %1 {
    %2 = range_for grid %0 %0 {
    }
  } else {
  }
}
)"),
                  "serial", "a grid range_for outside the body of a parallel range_for", "%2 = range_for grid %0 %0 { ... }");
  expect_rejected(verify_text(R"(field @x : i32[4]

kernel @after() stage frontend {
  %0 = const i32 0
  %1 = range_for %0 %0 {
    field_store @x[%0] %0
    %2 = range_for grid %0 %0 {
    }
  }
}
)"),
                  "after", "before a grid range_for (only side-effect-free statements", "field_store @x[%0] %0");
  expect_rejected(verify_text(R"(kernel @notlast() stage frontend {
  %0 = const i32 0
  %1 = range_for %0 %0 {
    %2 = range_for grid %0 %0 {
    }
    %3 = binary add i32 %0 %0
  }
}
)"),
                  "notlast", "must be the last statement of its loop's body", "%2 = range_for grid %0 %0 { ... }");
  expect_rejected(verify_text(R"(kernel @brk() stage frontend {
  %0 = const i32 0
  %1 = range_for %0 %0 {
    %2 = range_for grid %0 %0 {
      break
    }
  }
}
)"),
                  "brk", "'break' directly inside a grid range_for", "break");
}

TEST(VerifierTest, RejectsLoopIndexOutsideItsLoopOrAxis) {
  expect_rejected(verify_text(R"(kernel @outside() stage frontend {
  %0 = const i32 0
  %1 = range_for %0 %0 {
  }
  %2 = loop_index i32 %1 0
}
)"),
                  "outside", "its loop %1 is not a range_for or struct_for enclosing it",
                  "%2 = loop_index i32 %1 0");
  expect_rejected(verify_text(R"(kernel @axis() stage frontend {
  %0 = const i32 0
  %1 = range_for %0 %0 {
    %2 = loop_index i32 %1 1
  }
}
)"),
                  "axis", "axis 1 but the loop has 1 dimension(s)", "%2 = loop_index i32 %1 1");
  expect_rejected(verify_text(R"(field @x : f32[2, 3, 4]

kernel @sf() stage frontend {
  %0 = struct_for @x {
    %1 = loop_index i32 %0 2
    %2 = loop_index i32 %0 3
  }
}
)"),
                  "sf", "axis 3 but the loop has 3 dimension(s)", "%2 = loop_index i32 %0 3");
}

TEST(VerifierTest, RejectsWrongFieldIndexCountsAndIds) {
  FieldTable fields;
  const FieldDecl& x = fields.add("x", f32, {4, 4});
  Kernel k("indices", {}, &fields);
  Builder b(k.body());
  Stmt* i = b.const_int(i32, 0);
  b.field_load(x, {i});  // the parser refuses this; a buggy pass might not
  expect_rejected(verify_error(k), "indices", "field @x has 2 dimension(s) but 1 index(es) are given",
                  "%1 = field_load f32 @x[%0]");

  FieldTable other;
  other.add("a", i32, {2});
  other.add("b", i32, {2});
  Kernel stale("stale", {}, &fields);  // uses a field id of another table
  Builder s(stale.body());
  Stmt* j = s.const_int(i32, 0);
  s.field_store(other.get(1), {j}, j);
  expect_rejected(verify_error(stale), "stale", "field id 1 is not in the kernel's field table",
                  "field_store @?1[%0] %0");
}

TEST(VerifierTest, RejectsTypeMismatchesAtTheTypedStage) {
  const char* head = "field @x : f16[4]\nfield @n : i32[]\n\nkernel @typed(a: f32, k: i32) stage typed {\n"
                     "  %0 = arg f32 0\n  %1 = arg i32 1\n  %2 = const i32 0\n";
  struct Case {
    const char* body;
    const char* problem;
    const char* stmt;
  };
  const Case cases[] = {
      {"  %3 = binary add f32 %0 %1\n", "rhs operand %1 has type i32 but must be f32",
       "%3 = binary add f32 %0 %1"},
      {"  %3 = binary cmp_lt f32 %0 %0\n", "its type is f32 but must be u1",
       "%3 = binary cmp_lt f32 %0 %0"},
      {"  %3 = binary logic_or u1 %1 %1\n", "lhs operand %1 has type i32 but must be u1",
       "%3 = binary logic_or u1 %1 %1"},
      {"  %3 = binary bit_and f32 %0 %0\n", "'bit_and' needs integer operands",
       "%3 = binary bit_and f32 %0 %0"},
      {"  if %1 {\n  } else {\n  }\n", "cond operand %1 has type i32 but must be u1",
       "if %1 { ... } else { ... }"},
      {"  %3 = select f32 %1 %0 %0\n", "cond operand %1 has type i32 but must be u1",
       "%3 = select f32 %1 %0 %0"},
      {"  field_store @x[%2] %1\n", "value operand %1 has type i32 but must be f32",
       "field_store @x[%2] %1"},
      {"  %3 = field_atomic add i32 @n[] %0\n", "value operand %0 has type f32 but must be i32",
       "%3 = field_atomic add i32 @n[] %0"},
      {"  %3 = alloca i32\n  local_store %3 %0\n", "value operand %0 has type f32 but must be i32",
       "local_store %3 %0"},
      {"  %3 = cast i64 %0\n  %4 = field_load f32 @x[%3]\n", "index operand %3 has type i64 but must be i32",
       "%4 = field_load f32 @x[%3]"},
      {"  %3 = binary add unknown %1 %1\n", "a value of type unknown at stage typed",
       "%3 = binary add unknown %1 %1"},
      {"  %3 = unary sqrt f32 %1\n", "x operand %1 has type i32 but must be f32",
       "%3 = unary sqrt f32 %1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    expect_rejected(verify_text(std::string(head) + c.body + "}\n"), "typed", c.problem, c.stmt);
  }
  // The same mismatches are fine before type_check.
  std::string frontend = std::string(head) + "  %3 = binary add f32 %0 %1\n  if %1 {\n  } else {\n  }\n}\n";
  frontend.replace(frontend.find("stage typed"), 11, "stage frontend");
  EXPECT_EQ(verify_text(frontend), "(valid)");
}

TEST(VerifierTest, RejectsBadArgumentsAndOperandKinds) {
  const char* head = "kernel @kinds(a: f16, k: i32) stage frontend {\n  %0 = const i32 1\n";
  struct Case {
    const char* body;
    const char* problem;
    const char* stmt;
  };
  const Case cases[] = {
      {"  %1 = arg f32 2\n", "argument index 2 but the kernel has 2 argument(s)", "%1 = arg f32 2"},
      {"  %1 = arg f16 0\n", "its type is f16 but must be f32", "%1 = arg f16 0"},
      {"  %1 = arg i64 1\n", "its type is i64 but must be i32", "%1 = arg i64 1"},
      {"  %1 = alloca i32\n  %2 = binary add i32 %1 %0\n", "lhs operand %1 is an alloca",
       "%2 = binary add i32 %1 %0"},
      {"  %1 = range_for %0 %0 {\n    %2 = binary add i32 %1 %0\n  }\n",
       "lhs operand %1 is a 'range_for', which has no value", "%2 = binary add i32 %1 %0"},
      {"  %1 = alloca i32\n  %2 = local_load f32 %1\n", "its type is f32 but must be i32",
       "%2 = local_load f32 %1"},
      {"  print \"{} and {}\" %0\n", "the format has 2 '{}' but there are 1 operand(s)",
       "print \"{} and {}\" %0"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    expect_rejected(verify_text(std::string(head) + c.body + "}\n"), "kinds", c.problem, c.stmt);
  }
}

TEST(VerifierTest, RejectsOperandsFromOutsideTheKernel) {
  FieldTable fields;
  Kernel donor("donor", {}, &fields);
  Stmt* foreign = Builder(donor.body()).const_int(i32, 7);
  Kernel k("user", {}, &fields);
  Builder b(k.body());
  Stmt* x = b.const_int(i32, 1);
  Stmt* sum = b.binary(BinaryOp::add, x, x);
  sum->set_operand(1, foreign);
  expect_rejected(verify_error(k), "user", "rhs operand is not a statement of this kernel",
                  "%1 = binary add i32 %0 %?");
}

TEST(VerifierTest, AcceptsAValidOffloadedKernel) {
  EXPECT_EQ(verify_text(R"(kernel @off(n: i32) stage offloaded {
  task serial $-1 "init" {
    %0 = const u32 0
    %1 = arg i32 0
    tree_store @t0[%0] %1 as i32
    %2 = tree_atomic add i32 @t0[%0] %1
    %3 = tree_cas u32 @t1[%0] %0 %0
    %4 = const i32 0
    %5 = range_for %4 %1 {
      break
    }
  }
  task listgen $S2 "listgen" {
    %6 = const u32 0
    %7 = tree_load i32 @t0[%6]
    %8 = alloca i32
    %9 = const i32 0
    %10 = range_for %9 %7 {
      %11 = loop_index i32 %10 0
      %12 = cast u32 %11
      tree_store @t0[%12] %11 as i32
      while {
        break
      }
      %13 = range_for %9 %11 {
        continue
      }
    }
  }
  task clear_list $S2 "" {
  }
}
)"),
            "(valid)");
  // Before lowering, a struct_for task's parallel loop is still its struct_for.
  const char* struct_for_task = R"(field @x : f32[8]

kernel @sft() stage offloaded {
  task struct_for $S1 "sf" {
    %0 = const u32 0
    %1 = tree_load i32 @t0[%0]
    %2 = struct_for @x {
      %3 = loop_index i32 %2 0
      %4 = field_load f32 @x[%3]
      field_store @x[%1] %4
    }
  }
}
)";
  EXPECT_EQ(verify_text(struct_for_task), "(valid)");
  std::string lowered = struct_for_task;
  lowered.replace(lowered.find("stage offloaded"), 15, "stage lowered");
  expect_rejected(verify_text(lowered), "sft", "a parallel 'struct_for' task must end with its range_for",
                  "task struct_for $S1 \"sf\" { ... }");
  std::string in_range_task = struct_for_task;
  in_range_task.replace(in_range_task.find("task struct_for"), 15, "task range_for");
  expect_rejected(verify_text(in_range_task), "sft", "a parallel 'range_for' task must end with its range_for",
                  "task range_for $S1 \"sf\" { ... }");
  expect_rejected(verify_text(R"(field @x : f32[8]

kernel @sfs() stage offloaded {
  task serial $-1 "s" {
    %0 = struct_for @x {
    }
  }
}
)"),
                  "sfs", "a 'struct_for' at stage offloaded (allowed only at stages frontend and typed, and at "
                  "offloaded as the loop of a struct_for task)",
                  "%0 = struct_for @x { ... }");
  // A struct_for over an SNode has up to 8 axes (no forest is consulted).
  EXPECT_EQ(verify_text(R"(kernel @sf() stage typed {
  %0 = struct_for $S3 {
    %1 = loop_index i32 %0 7
    %2 = snode_op is_active u1 $S3[%1]
    %3 = snode_op append i32 $S4[%1] %1
    snode_op deactivate $S4[]
  }
}
)"),
            "(valid)");
  expect_rejected(verify_text("kernel @sf() stage frontend {\n  %0 = struct_for $S3 {\n"
                              "    %1 = loop_index i32 %0 8\n  }\n}\n"),
                  "sf", "axis 8 but the loop has 8 dimension(s)", "%1 = loop_index i32 %0 8");
}

TEST(VerifierTest, RejectsStatementsOutsideTheirStages) {
  expect_rejected(verify_text(R"(kernel @early() stage frontend {
  %0 = const u32 0
  %1 = tree_load f32 @t0[%0]
}
)"),
                  "early", "a 'tree_load' at stage frontend (allowed only at stages offloaded and lowered)",
                  "%1 = tree_load f32 @t0[%0]");
  expect_rejected(verify_text(R"(kernel @early() stage typed {
  %0 = const u32 0
  %1 = tree_cas u32 @t0[%0] %0 %0
}
)"),
                  "early", "a 'tree_cas' at stage typed", "%1 = tree_cas u32 @t0[%0] %0 %0");
  expect_rejected(verify_text(R"(field @x : f32[4]

kernel @late() stage lowered {
  task serial $-1 "t" {
    %0 = const i32 0
    %1 = field_load f32 @x[%0]
  }
}
)"),
                  "late", "a 'field_load' at stage lowered (allowed only at stages frontend, typed and offloaded)",
                  "%1 = field_load f32 @x[%0]");
  expect_rejected(verify_text(R"(kernel @late() stage offloaded {
  task serial $-1 "t" {
    %0 = struct_for $S1 {
    }
  }
}
)"),
                  "late", "a 'struct_for' at stage offloaded (allowed only at stages frontend and typed,",
                  "%0 = struct_for $S1 { ... }");
  expect_rejected(verify_text(R"(kernel @late() stage lowered {
  task serial $-1 "t" {
    %0 = const i32 0
    snode_op activate $S1[%0]
  }
}
)"),
                  "late", "a 'snode_op' at stage lowered", "snode_op activate $S1[%0]");
  expect_rejected(verify_text("kernel @t() stage typed {\n  task serial $-1 \"t\" {\n  }\n}\n"), "t",
                  "a 'task' at stage typed (allowed only at stages offloaded and lowered)",
                  "task serial $-1 \"t\" { ... }");
  // Offloading comes before lowering: field accesses and SNode operations
  // are still there in the tasks of an offloaded kernel.
  EXPECT_EQ(verify_text(R"(field @x : f32[4]

kernel @mid() stage offloaded {
  task range_for $-1 "r" {
    %0 = const i32 0
    %1 = field_load f32 @x[%0]
    %2 = snode_op is_active u1 $S1[%0]
    %3 = range_for %0 %0 {
      field_store @x[%0] %1
      snode_op activate $S1[%0]
    }
  }
}
)"),
            "(valid)");
}

TEST(VerifierTest, RejectsMisplacedTasksAtTheOffloadedStage) {
  expect_rejected(verify_text(R"(kernel @top() stage offloaded {
  task serial $-1 "a" {
  }
  %0 = const i32 0
}
)"),
                  "top", "a 'const' in the kernel's body at stage offloaded (the body holds only tasks)",
                  "%0 = const i32 0");
  expect_rejected(verify_text("kernel @top() stage lowered {\n  while {\n    break\n  }\n}\n"), "top",
                  "a 'while' in the kernel's body at stage lowered (the body holds only tasks)",
                  "while { ... }");
  expect_rejected(verify_text(R"(kernel @nest() stage offloaded {
  task serial $-1 "a" {
    task serial $-1 "b" {
    }
  }
}
)"),
                  "nest", "a 'task' nested in another statement", "task serial $-1 \"b\" { ... }");
  // Tasks do not share values: each task is its own block.
  expect_rejected(verify_text(R"(kernel @share() stage offloaded {
  task serial $-1 "a" {
    %0 = const u32 0
  }
  task serial $-1 "b" {
    %1 = tree_load u32 @t0[%0]
  }
}
)"),
                  "share", "address operand %0 is defined in a block that does not enclose this use",
                  "%1 = tree_load u32 @t0[%0]");
}

TEST(VerifierTest, RejectsMalformedParallelTasks) {
  expect_rejected(verify_text(R"(kernel @store() stage offloaded {
  task range_for $-1 "r" {
    %0 = const u32 0
    %1 = const i32 0
    tree_store @t0[%0] %1 as i32
    %2 = range_for %1 %1 {
    }
  }
}
)"),
                  "store",
                  "a parallel 'range_for' task holds only side-effect-free statements before its range_for, "
                  "not a 'tree_store'",
                  "tree_store @t0[%0] %1 as i32");
  expect_rejected(verify_text(R"(kernel @atomic() stage offloaded {
  task gc $S1 "r" {
    %0 = const u32 0
    %1 = const i32 0
    %2 = tree_atomic add i32 @t0[%0] %1
    %3 = range_for %1 %1 {
    }
  }
}
)"),
                  "atomic", "not a 'tree_atomic'", "%2 = tree_atomic add i32 @t0[%0] %1");
  expect_rejected(verify_text(R"(kernel @trailing() stage offloaded {
  task struct_for $S1 "r" {
    %0 = const i32 0
    %1 = range_for %0 %0 {
    }
    %2 = const i32 1
  }
}
)"),
                  "trailing", "a parallel 'struct_for' task must end with its range_for (the parallel loop)",
                  "task struct_for $S1 \"r\" { ... }");
  expect_rejected(verify_text("kernel @empty() stage offloaded {\n  task listgen $S1 \"l\" {\n  }\n}\n"),
                  "empty", "a parallel 'listgen' task must end with its range_for",
                  "task listgen $S1 \"l\" { ... }");
  expect_rejected(verify_text(R"(kernel @two() stage offloaded {
  task range_for $-1 "r" {
    %0 = const i32 0
    %1 = range_for %0 %0 {
    }
    %2 = range_for %0 %0 {
    }
  }
}
)"),
                  "two", "not a 'range_for'", "%1 = range_for %0 %0 { ... }");
  expect_rejected(verify_text(R"(kernel @jump() stage offloaded {
  task range_for $-1 "r" {
    %0 = const i32 0
    %1 = range_for %0 %0 {
      break
    }
  }
}
)"),
                  "jump", "'break' directly inside the range_for of a parallel 'range_for' task", "break");
}

TEST(VerifierTest, RejectsSparseTypeMismatches) {
  const char* head = "kernel @tree(a: f32, k: i32) stage lowered {\n  task serial $-1 \"t\" {\n"
                     "  %0 = arg f32 0\n  %1 = arg i32 1\n  %2 = const u32 0\n  %3 = const u64 0\n";
  struct Case {
    const char* body;
    const char* problem;
    const char* stmt;
  };
  const Case cases[] = {
      {"  %4 = tree_cas u32 @t0[%2] %1 %2\n", "expected operand %1 has type i32 but must be u32",
       "%4 = tree_cas u32 @t0[%2] %1 %2"},
      {"  %4 = tree_cas u64 @t0[%2] %3 %2\n", "desired operand %2 has type u32 but must be u64",
       "%4 = tree_cas u64 @t0[%2] %3 %2"},
      {"  %4 = tree_cas f32 @t0[%2] %0 %0\n", "a tree_cas of type f32 (it must be i32, u32, i64 or u64)",
       "%4 = tree_cas f32 @t0[%2] %0 %0"},
      {"  %4 = tree_load f32 @t0[%1]\n", "address operand %1 has type i32 but must be u32",
       "%4 = tree_load f32 @t0[%1]"},
      {"  %4 = tree_load f64 @t0[%2] as f16\n", "its type is f64 but must be f32",
       "%4 = tree_load f64 @t0[%2] as f16"},
      {"  tree_store @t0[%2] %1 as f16\n", "value operand %1 has type i32 but must be f32",
       "tree_store @t0[%2] %1 as f16"},
      {"  %4 = tree_atomic add i32 @t0[%2] %0\n", "value operand %0 has type f32 but must be i32",
       "%4 = tree_atomic add i32 @t0[%2] %0"},
      {"  %4 = cast i8 %1\n  %5 = tree_atomic add i8 @t0[%2] %4\n",
       "a tree_atomic of type i8 (it must be i32, u32, i64, u64, f32 or f64)",
       "%5 = tree_atomic add i8 @t0[%2] %4"},
      {"  %4 = tree_atomic bit_xor f32 @t0[%2] %0\n", "atomic 'bit_xor' needs an integer type",
       "%4 = tree_atomic bit_xor f32 @t0[%2] %0"},
      {"  %4 = binary add f32 %0 %1\n", "rhs operand %1 has type i32 but must be f32",
       "%4 = binary add f32 %0 %1"},
      {"  %4 = tree_load atomic f64 @t0[%2]\n", "an atomic tree_load of f64 (atomic loads are i32, u32, i64 or u64)",
       "%4 = tree_load atomic f64 @t0[%2]"},
      {"  %4 = tree_atomic reduce max i32 @t0[%2] %1\n", "a tree_atomic marked 'reduce' must be an add to a constant address",
       "%4 = tree_atomic reduce max i32 @t0[%2] %1"},
      {"  %4 = cast u32 %1\n  %5 = tree_atomic reduce add i32 @t0[%4] %1\n",
       "must be an add to a constant address", "%5 = tree_atomic reduce add i32 @t0[%4] %1"},
      {"  %4 = tree_atomic accumulate add i32 @t0[%2] %1\n  %5 = binary add i32 %4 %1\n",
       "lhs operand %4 is a tree_atomic marked 'accumulate', whose old value is not kept",
       "%5 = binary add i32 %4 %1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    expect_rejected(verify_text(std::string(head) + c.body + "  }\n}\n"), "tree", c.problem, c.stmt);
  }
  // SNode indices are i32 from the typed stage on, and the results have fixed types.
  const char* snode_head = "kernel @sn() stage typed {\n  %0 = const i64 0\n  %1 = const i32 0\n";
  const Case snode_cases[] = {
      {"  %2 = snode_op is_active u1 $S1[%0]\n", "index operand %0 has type i64 but must be i32",
       "%2 = snode_op is_active u1 $S1[%0]"},
      {"  %2 = snode_op length i64 $S1[%1]\n", "its type is i64 but must be i32",
       "%2 = snode_op length i64 $S1[%1]"},
      {"  %2 = snode_op is_active i32 $S1[%1]\n", "its type is i32 but must be u1",
       "%2 = snode_op is_active i32 $S1[%1]"},
      {"  snode_op activate $-1[%1]\n", "SNode id -1 is not an SNode", "snode_op activate $-1[%1]"},
  };
  for (const Case& c : snode_cases) {
    SCOPED_TRACE(c.body);
    expect_rejected(verify_text(std::string(snode_head) + c.body + "}\n"), "sn", c.problem, c.stmt);
  }
  // assert: a u1 condition from the typed stage on, one value per '{}'.
  const char* assert_head = "kernel @as(k: i32) stage typed {\n  %0 = arg i32 0\n  %1 = const u1 1\n";
  const Case assert_cases[] = {
      {"  assert %0 \"k = {}\" %0\n", "cond operand %0 has type i32 but must be u1",
       "assert %0 \"k = {}\" %0"},
      {"  assert %1 \"k = {}\"\n", "the message has 1 '{}' but there are 0 value(s)", "assert %1 \"k = {}\""},
  };
  for (const Case& c : assert_cases) {
    SCOPED_TRACE(c.body);
    expect_rejected(verify_text(std::string(assert_head) + c.body + "}\n"), "as", c.problem, c.stmt);
  }
  EXPECT_EQ(verify_text(std::string(assert_head) + "  assert %1 \"k = {}\" %0\n}\n"), "(valid)");
  // At the frontend stage SNode indices may be of any type.
  EXPECT_EQ(verify_text("kernel @sn() stage frontend {\n  %0 = const i64 0\n"
                        "  %1 = snode_op is_active u1 $S1[%0]\n}\n"),
            "(valid)");
}

}  // namespace
}  // namespace grove::ir
