// shell.h — the sparse CPU rows' workload: the voxels of a sphere shell of
// radius 512 with a band of +-3 voxels, in a 1040^3 domain of 8^3 blocks
// (130 per axis). A voxel (i, j, k) is in the shell when
// (R - 3)^2 <= |(i, j, k) - c|^2 <= (R + 3)^2, in integers, so that every
// side enumerates the same voxels. About 23 million voxels in about 100
// thousand blocks. Its value is 1 + (i + j + k) % 8: never 0 (so "active"
// and "non-zero" agree), and sums of them are exact in double.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace grove_bench::shell {

constexpr int kRadius = 512;
constexpr int kBand = 3;
constexpr int kBlock = 8;                  // voxels per block side
constexpr int kBlocks = 130;               // blocks per axis
constexpr int kSide = kBlocks * kBlock;    // 1040 voxels per axis
constexpr int kCentre = kSide / 2;         // 520
constexpr int kInner2 = (kRadius - kBand) * (kRadius - kBand);
constexpr int kOuter2 = (kRadius + kBand) * (kRadius + kBand);

inline bool inside(int i, int j, int k) {
  const int di = i - kCentre, dj = j - kCentre, dk = k - kCentre;
  const int d2 = di * di + dj * dj + dk * dk;
  return kInner2 <= d2 && d2 <= kOuter2;
}

// The 8^3 block holding voxel (i, j, k), row-major over the 130^3 blocks.
inline size_t block_of(int i, int j, int k) {
  return (static_cast<size_t>(i / kBlock) * kBlocks + static_cast<size_t>(j / kBlock)) * kBlocks +
         static_cast<size_t>(k / kBlock);
}

inline float value(int i, int j, int k) { return static_cast<float>(1 + (i + j + k) % 8); }
// The value, or 0 outside the shell (what a read of an inactive voxel gives).
inline float at(int i, int j, int k) { return inside(i, j, k) ? value(i, j, k) : 0.0f; }

// The k ranges of column (i, j) that may hold shell voxels, a little wider
// than the shell (callers test inside()): [lo0, hi0] and [lo1, hi1]
// (hi < lo: empty). One range where the column misses the inner ball.
// Grove's activation kernel computes the same ranges (cpu_sparse.cpp).
struct Column {
  int lo0, hi0, lo1, hi1;
};
inline Column column(int i, int j) {
  const int di = i - kCentre, dj = j - kCentre;
  const int r2 = di * di + dj * dj;
  if (r2 > kOuter2) return {0, -1, 0, -1};
  const int zo = static_cast<int>(std::sqrt(static_cast<double>(kOuter2 - r2))) + 1;
  const int zi = r2 >= kInner2 ? 0 : static_cast<int>(std::sqrt(static_cast<double>(kInner2 - r2))) - 1;
  if (zi <= 1) return {kCentre - zo, kCentre + zo, 0, -1};
  return {kCentre - zo, kCentre - zi, kCentre + zi, kCentre + zo};
}

// Calls f(k) for each shell voxel of column (i, j), k increasing.
template <typename F>
void for_column(int i, int j, F&& f) {
  const Column c = column(i, j);
  for (int k = c.lo0; k <= c.hi0; ++k)
    if (inside(i, j, k)) f(k);
  for (int k = c.lo1; k <= c.hi1; ++k)
    if (inside(i, j, k)) f(k);
}

}  // namespace grove_bench::shell
