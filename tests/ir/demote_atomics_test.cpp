// demote_atomics: which field_atomics of a parallel loop become a load, the
// operation and a store (text in, text out).
#include <gtest/gtest.h>

#include <string>

#include "ir/passes/demote_atomics.h"
#include "pass_test_util.h"

namespace grove::ir {
namespace {

// The kernel's text after the pass (the verifier checks it before and after).
std::string demoted(const std::string& text) {
  return test::run_pass(text, [](Kernel& k) { demote_atomics(k); });
}

using test::count;

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
  // x: also read at i + 1 by this loop; z: an exchange; g: its axes
  // swapped. These stay atomic; y, at i + 1 only, is an element no other
  // iteration reaches (as at i), and is not.
  EXPECT_EQ(count(out, "field_atomic"), 3u) << out;
  EXPECT_EQ(count(out, "field_atomic add f32 @y"), 0u) << out;
}

// for_range over a shape on a GPU: a point per iteration t, its indices
// t / m and t % m (3 axes: t / p / m, t / p % m, t % p). Each iteration
// has a point of its own, so its update needs no atomic.
TEST(DemoteAtomics, AShapesPointFromQuotientAndRemainderIsTheLoopsOwn) {
  const std::string out = demoted(R"(
field @x : f32[64, 8192]
field @v : f32[4, 8, 16]
kernel @k() stage frontend {
  %0 = const i32 0
  %1 = const i32 8192
  %2 = const i32 524288
  %3 = range_for %0 %2 {
    %4 = loop_index i32 %3 0
    %5 = binary div i32 %4 %1
    %6 = binary mod i32 %4 %1
    %7 = const f32 1
    %8 = field_atomic add f32 @x[%5, %6] %7
  }
  %9 = const i32 512
  %10 = const i32 16
  %11 = const i32 8
  %12 = range_for %0 %9 {
    %13 = loop_index i32 %12 0
    %14 = binary div i32 %13 %10
    %15 = binary div i32 %14 %11
    %16 = binary mod i32 %14 %11
    %17 = binary mod i32 %13 %10
    %18 = const i32 1
    %19 = binary add i32 %15 %18
    %20 = const f32 2
    %21 = field_atomic add f32 @v[%19, %16, %17] %20
  }
}
)");
  EXPECT_EQ(count(out, "field_atomic"), 0u) << out;
}

// The CPU's form: rows cut into pieces, a parallel iteration t taking row
// t / 2 and the columns [(t % 2) * 4096, min((t % 2) * 4096 + 4096, 8192))
// in a serial loop.
TEST(DemoteAtomics, ARowPieceOfAShapeIsTheLoopsOwn) {
  const std::string piece = R"(
field @x : f32[64, 8192]
kernel @k() stage frontend {
  %0 = const i32 0
  %1 = const i32 8192
  %2 = const i32 2
  %3 = const i32 128
  %4 = range_for %0 %3 {
    %5 = loop_index i32 %4 0
    %6 = binary div i32 %5 %2
    %7 = const i32 4096
    %8 = binary mod i32 %5 %2
    %9 = binary mul i32 %8 %7
    %10 = binary add i32 %9 %7
    %11 = binary min i32 %10 %1
    %12 = range_for %9 %11 {
      %13 = loop_index i32 %12 0
      %14 = const f32 1
      %15 = field_atomic add f32 @x[%6, %13] %14
    }
  }
}
)";
  EXPECT_EQ(count(demoted(piece), "field_atomic"), 0u) << demoted(piece);
  // A piece that may run past the next one's first column (its end is
  // begin + 8192) shares columns with it: atomic.
  std::string longer = piece;
  longer.replace(longer.find("%10 = binary add i32 %9 %7"), 26, "%10 = binary add i32 %9 %1");
  EXPECT_EQ(count(demoted(longer), "field_atomic"), 1u) << demoted(longer);
}

// for_range over a shape computes a point's quotients and remainders in
// u32 (dsl.cpp), the loop index cast there and the results cast back: a
// cast between integers of one width keeps iterations apart, and the
// update is still the loop's own. A cast to a narrower type does not.
TEST(DemoteAtomics, CastsOfOneWidthKeepThePointTheLoopsOwn) {
  const std::string unsigned_piece = R"(
field @x : f32[64, 8192]
kernel @k() stage frontend {
  %0 = const i32 0
  %1 = const i32 8192
  %2 = const u32 2
  %3 = const i32 128
  %4 = range_for %0 %3 {
    %5 = loop_index i32 %4 0
    %6 = cast u32 %5
    %7 = binary div u32 %6 %2
    %8 = cast i32 %7
    %9 = const i32 4096
    %10 = binary mod u32 %6 %2
    %11 = cast i32 %10
    %12 = binary mul i32 %11 %9
    %13 = binary add i32 %12 %9
    %14 = binary min i32 %13 %1
    %15 = range_for %12 %14 {
      %16 = loop_index i32 %15 0
      %17 = const f32 1
      %18 = field_atomic add f32 @x[%8, %16] %17
    }
  }
}
)";
  EXPECT_EQ(count(demoted(unsigned_piece), "field_atomic"), 0u) << demoted(unsigned_piece);
  std::string narrowed = unsigned_piece;  // t through a u16: t and t + 65536 would meet
  narrowed.replace(narrowed.find("%6 = cast u32 %5"), 16, "%50 = cast u16 %5\n    %6 = cast u32 %50");
  EXPECT_EQ(count(demoted(narrowed), "field_atomic"), 1u) << demoted(narrowed);
}

// Where iterations can share an element, updates stay atomic: a quotient
// alone (t / 8 is every 8th iteration's), a quotient and a remainder by
// different divisors, and one field reached through two different tuples
// (t / 8, t % 8 and t, 0 meet at t = 8 k: (k, 0)).
// A grid loop's iterations may run in parallel too (Vulkan and CUDA spread
// them over the launch): an update is the point's own only where both the
// parallel loop's index and the grid loop's come out of its indices.
TEST(DemoteAtomics, AGridLoopsIndexMustComeOutToo) {
  const std::string out = demoted(R"(
field @x : i32[4, 8]
field @row : i32[4]
kernel @k() stage frontend {
  %0 = const i32 0
  %1 = const i32 4
  %2 = const i32 8
  %3 = range_for %0 %1 {
    %4 = loop_index i32 %3 0
    %5 = range_for grid %0 %2 {
      %6 = loop_index i32 %5 0
      %7 = field_atomic add i32 @x[%4, %6] %6
      %8 = field_atomic add i32 @row[%4] %6
    }
  }
}
)");
  EXPECT_EQ(count(out, "field_atomic"), 1u) << out;
  EXPECT_NE(out.find("field_atomic add i32 @row[%"), std::string::npos) << out;
  EXPECT_NE(out.find("field_store @x["), std::string::npos) << out;
}

TEST(DemoteAtomics, PointsThatIterationsMayShareStayAtomic) {
  const std::string out = demoted(R"(
field @a : f32[64]
field @b : f32[64, 8]
field @c : f32[64, 8]
kernel @k() stage frontend {
  %0 = const i32 0
  %1 = const i32 64
  %2 = const i32 8
  %3 = const i32 4
  %4 = range_for %0 %1 {
    %5 = loop_index i32 %4 0
    %6 = binary div i32 %5 %2
    %7 = binary mod i32 %5 %2
    %8 = binary mod i32 %5 %3
    %9 = const f32 1
    %10 = field_atomic add f32 @a[%6] %9
    %11 = field_atomic add f32 @b[%6, %8] %9
    %12 = field_atomic add f32 @c[%6, %7] %9
    %13 = field_atomic add f32 @c[%5, %0] %9
  }
}
)");
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
