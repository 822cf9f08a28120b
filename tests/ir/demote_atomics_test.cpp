// demote_atomics: which field_atomics of a parallel loop become a load, the
// operation and a store (text in, text out).
#include <gtest/gtest.h>

#include <string>

#include "ir/parser.h"
#include "ir/passes/demote_atomics.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace grove::ir {
namespace {

// The kernel's text after the pass (verified as a frontend kernel).
std::string demoted(const std::string& text) {
  ParsedModule m = parse_module(text, "demote_atomics_test.ir");
  Kernel& k = *m.kernels.at(0);
  demote_atomics(k);
  verify(k, "demote_atomics");
  return print_kernel(k);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(DemoteAtomics, AnUpdateAtTheLoopsOwnIndexIsALoadAndAStore) {
  const std::string out = demoted(R"(
field @x : f32[16]
field @y : i32[16]
kernel @k() stage frontend {
  %0 = const i32 0
  %1 = const i32 16
  %2 = range_for %0 %1 {
    %3 = loop_index i32 %2 0
    %4 = const f32 1.5
    %5 = field_atomic add f32 @x[%3] %4
    %6 = const i32 7
    %7 = field_atomic max i32 @y[%3] %6
    %8 = cast f32 %7
    field_store @x[%3] %8
  }
}
)");
  EXPECT_EQ(count(out, "field_atomic"), 0u) << out;
  EXPECT_NE(out.find("binary add f32"), std::string::npos) << out;
  EXPECT_NE(out.find("binary max i32"), std::string::npos) << out;
  // The old value the max returned is now the load's: the cast reads it.
  EXPECT_EQ(count(out, "field_load"), 2u) << out;
  EXPECT_EQ(count(out, "field_store"), 3u) << out;
}

TEST(DemoteAtomics, OtherIndicesAndOtherOperationsStayAtomic) {
  const std::string out = demoted(R"(
field @x : f32[17]
field @y : f32[16]
field @z : i32[16]
field @g : f32[4, 4]
kernel @k() stage frontend {
  %0 = const i32 0
  %1 = const i32 16
  %2 = range_for %0 %1 {
    %3 = loop_index i32 %2 0
    %4 = const i32 1
    %5 = binary add i32 %3 %4
    %6 = const f32 1
    %7 = field_atomic add f32 @x[%3] %6
    %8 = field_load f32 @x[%5]
    %9 = field_atomic add f32 @y[%5] %6
    %10 = field_atomic exchange i32 @z[%3] %4
  }
  %11 = struct_for @g {
    %12 = loop_index i32 %11 0
    %13 = loop_index i32 %11 1
    %14 = const f32 2
    %15 = field_atomic add f32 @g[%13, %12] %14
  }
}
)");
  // x: also read at i + 1 by this loop; y: at i + 1 only; z: an exchange;
  // g: its axes swapped. All stay atomic.
  EXPECT_EQ(count(out, "field_atomic"), 4u) << out;
}

TEST(DemoteAtomics, AStructForsOwnIndicesInOrder) {
  const std::string out = demoted(R"(
field @g : f32[4, 4]
field @h : f32[4, 4]
kernel @k() stage frontend {
  %0 = struct_for @g {
    %1 = loop_index i32 %0 0
    %2 = loop_index i32 %0 1
    %3 = field_load f32 @g[%1, %2]
    %4 = field_atomic add f32 @h[%1, %2] %3
    %5 = field_atomic add f32 @g[%1, %2] %3
  }
}
)");
  EXPECT_EQ(count(out, "field_atomic"), 0u) << out;
}

}  // namespace
}  // namespace grove::ir
