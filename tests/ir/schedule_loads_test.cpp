// tests/ir/schedule_loads_test.cpp — schedule_loads, text in / text out:
// plain tree_loads move down past values, locals and other plain loads,
// and go out together, in the order of their first uses, before the first
// statement that uses one of them or that they may not pass (a store, an
// atomic or atomic load, an effect, a statement with blocks).
#include "ir/passes/schedule_loads.h"

#include <gtest/gtest.h>

#include "ir/builder.h"
#include "pass_test_util.h"

namespace grove::ir {
namespace {

using test::text;

std::string schedule(std::string_view module) { return test::run_pass(module, schedule_loads); }

TEST(ScheduleLoads, LoadsGoInTheOrderOfTheirFirstUses) {
  // saxpy as GCC records `a * x(i) + y(i)`: y's load first. x's address
  // (its constant and add, used by that load alone) moves with its load;
  // y's stays, as the store uses it too.
  EXPECT_EQ(schedule(R"(
kernel @saxpy(a: f32) stage legal {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = const i32 64
    %2 = range_for %0 %1 {
      %3 = loop_index i32 %2 0
      %4 = cast u32 %3
      %5 = const u32 16
      %6 = const u32 80
      %7 = binary add u32 %6 %4
      %8 = tree_load f32 @t0[%7]
      %9 = binary add u32 %5 %4
      %10 = tree_load f32 @t0[%9]
      %11 = arg f32 0
      %12 = binary mul f32 %11 %10
      %13 = binary add f32 %12 %8
      tree_store @t0[%7] %13 as f32
    }
  }
}
)"),
            text(R"(
kernel @saxpy(a: f32) stage legal {
  task range_for $-1 "range_for" {
    %0 = const i32 0
    %1 = const i32 64
    %2 = range_for %0 %1 {
      %3 = loop_index i32 %2 0
      %4 = cast u32 %3
      %5 = const u32 80
      %6 = binary add u32 %5 %4
      %7 = arg f32 0
      %8 = const u32 16
      %9 = binary add u32 %8 %4
      %10 = tree_load f32 @t0[%9]
      %11 = tree_load f32 @t0[%6]
      %12 = binary mul f32 %7 %10
      %13 = binary add f32 %12 %11
      tree_store @t0[%6] %13 as f32
    }
  }
}
)"));
}

TEST(ScheduleLoads, WritesEffectsAndBlocksStopLoadsWhichKeepTheirOrder) {
  // %2 and %3 wait for their users but meet the store first: both go back
  // before it, %2 first. %5 passes the comparison but stops at %7, an
  // atomic load, which stays where it is; %9 has its user in the if's
  // block, where it moves within that block; %12, unused, waits for the
  // end of the block, past the local variable's statements.
  const std::string in = text(R"(
kernel @k(a: i32) stage lowered {
  task serial $-1 "main" {
    %0 = arg i32 0
    %1 = const u32 4
    %2 = tree_load i32 @t0[%1]
    %3 = tree_load i32 @t0[%1]
    %4 = binary add i32 %0 %0
    tree_store @t0[%1] %4 as i32
    %5 = tree_load i32 @t0[%1]
    %6 = binary cmp_gt u1 %0 %0
    %7 = tree_load atomic u32 @t0[%1]
    %8 = binary add u32 %7 %1
    if %6 {
      %9 = tree_load i32 @t0[%8]
      %10 = binary add i32 %0 %0
      %11 = binary add i32 %9 %5
      print "{} {} {}" %2 %3 %11
    } else {
    }
    %12 = tree_load i32 @t0[%1]
    %13 = alloca i32
    local_store %13 %0
  }
}
)");
  EXPECT_EQ(schedule(in), text(R"(
kernel @k(a: i32) stage lowered {
  task serial $-1 "main" {
    %0 = arg i32 0
    %1 = const u32 4
    %2 = binary add i32 %0 %0
    %3 = tree_load i32 @t0[%1]
    %4 = tree_load i32 @t0[%1]
    tree_store @t0[%1] %2 as i32
    %5 = binary cmp_gt u1 %0 %0
    %6 = tree_load i32 @t0[%1]
    %7 = tree_load atomic u32 @t0[%1]
    %8 = binary add u32 %7 %1
    if %5 {
      %9 = binary add i32 %0 %0
      %10 = tree_load i32 @t0[%8]
      %11 = binary add i32 %10 %6
      print "{} {} {}" %3 %4 %11
    } else {
    }
    %12 = alloca i32
    local_store %12 %0
    %13 = tree_load i32 @t0[%1]
  }
}
)"));
}

TEST(ScheduleLoads, ALoadWhoseAddressReadsAnotherComesAfterIt) {
  // %5's address (%4, used by it alone) reads the slot %1: the waiting
  // loads go out before that chain, and %5 after it.
  EXPECT_EQ(schedule(R"(
kernel @k() stage lowered {
  task serial $-1 "main" {
    %0 = const u32 4
    %1 = tree_load u32 @t0[%0]
    %2 = const u32 8
    %3 = tree_load f32 @t0[%2]
    %4 = binary add u32 %1 %0
    %5 = tree_load f32 @t0[%4]
    %6 = binary add f32 %5 %3
    tree_store @t0[%2] %6 as f32
  }
}
)"),
            text(R"(
kernel @k() stage lowered {
  task serial $-1 "main" {
    %0 = const u32 4
    %1 = const u32 8
    %2 = tree_load u32 @t0[%0]
    %3 = tree_load f32 @t0[%1]
    %4 = binary add u32 %2 %0
    %5 = tree_load f32 @t0[%4]
    %6 = binary add f32 %5 %3
    tree_store @t0[%1] %6 as f32
  }
}
)"));
}

TEST(ScheduleLoads, AnAddressChainAsLongAsItsBlockMovesWhole) {
  // y's load, then x's address: 200,000 adds, each used once (no
  // recursion may follow such a chain), then x's load. y's load waits for
  // the sum, and x's chain and load go before it, in their own order.
  FieldTable fields;
  Kernel k("long", {}, &fields);
  k.stage = Stage::lowered;
  Builder b(k.body());
  Stmt* task = b.task(TaskKind::serial, -1, "serial");
  Builder t(task->body());
  Stmt* one = t.const_int(DataType::u32, 1);
  Stmt* y = t.tree_load(0, DataType::f32, one);
  Stmt* address = t.const_int(DataType::u32, 0);
  constexpr int kChain = 200000;
  for (int n = 0; n < kChain; ++n) address = t.binary(BinaryOp::add, address, one);
  Stmt* x = t.tree_load(0, DataType::f32, address);
  t.tree_store(0, DataType::f32, one, t.binary(BinaryOp::add, x, y));
  const size_t statements = task->body()->size();
  schedule_loads(k);
  verify(k, "schedule_loads");
  Block* body = task->body();
  ASSERT_EQ(body->size(), statements);
  EXPECT_EQ(body->at(0), one);
  EXPECT_EQ(body->at(1)->kind(), StmtKind::Const);  // the chain's start
  EXPECT_EQ(body->at(kChain + 1), address);
  EXPECT_EQ(body->at(kChain + 2), x);
  EXPECT_EQ(body->at(kChain + 3), y);
  EXPECT_EQ(body->at(kChain + 4)->kind(), StmtKind::Binary);
  EXPECT_EQ(body->at(kChain + 5)->kind(), StmtKind::TreeStore);
}

TEST(ScheduleLoads, ManyLoadsWaitingAtOnceAreCheckedInConstantTime) {
  // 100,000 loads, each with an address of its own, all used by one sum at
  // the end: every address statement is checked against the waiting loads
  // (a search through them made this test take 1.9 s, against 0.14). They
  // go out in their own order.
  FieldTable fields;
  Kernel k("many", {}, &fields);
  k.stage = Stage::lowered;
  Builder b(k.body());
  Stmt* task = b.task(TaskKind::serial, -1, "serial");
  Builder t(task->body());
  Stmt* base = t.const_int(DataType::u32, 16);
  constexpr int kLoads = 100000;
  std::vector<Stmt*> loads;
  for (int n = 0; n < kLoads; ++n) loads.push_back(t.tree_load(0, DataType::f32, t.binary(BinaryOp::add, base, base)));
  Stmt* sum = loads[0];
  for (int n = 1; n < kLoads; ++n) sum = t.binary(BinaryOp::add, sum, loads[static_cast<size_t>(n)]);
  t.tree_store(0, DataType::f32, base, sum);
  schedule_loads(k);
  verify(k, "schedule_loads");
  Block* body = task->body();
  size_t at = 0;
  for (int n = 0; n < kLoads; ++n) {
    while (body->at(at)->kind() != StmtKind::TreeLoad) ++at;
    ASSERT_EQ(body->at(at), loads[static_cast<size_t>(n)]) << "load " << n;
    ++at;
  }
}

TEST(ScheduleLoads, AKernelWithNothingToMoveIsUnchanged) {
  const std::string module = text(R"(
kernel @k(a: i32) stage lowered {
  task serial $-1 "main" {
    %0 = arg i32 0
    %1 = const u32 4
    %2 = tree_load i32 @t0[%1]
    %3 = binary add i32 %2 %0
    tree_store @t0[%1] %3 as i32
    %4 = tree_atomic add i32 @t0[%1] %0
    print "{}" %4
  }
}
)");
  EXPECT_EQ(schedule(module), module);
}

}  // namespace
}  // namespace grove::ir
