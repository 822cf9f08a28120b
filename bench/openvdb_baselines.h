// openvdb_baselines.h — OpenVDB (Debian's libopenvdb-dev) as the baseline of
// the CPU backend's sparse rows, on shell.h's shell. OpenVDB's headers stay
// in openvdb_baselines.cpp; this header names no OpenVDB type.
#pragma once

#include <cstdint>
#include <memory>

#include "cpu_baselines.h"

namespace grove_bench::vdb {

// A FloatGrid (background 0, voxel size 1) and the grid its Laplacian
// makes.
class ShellGrid {
 public:
  ShellGrid();
  ~ShellGrid();
  ShellGrid(const ShellGrid&) = delete;
  ShellGrid& operator=(const ShellGrid&) = delete;

  // Builds the grid from nothing: every shell voxel set with setValueOn,
  // columns split over the threads, each thread writing a grid of its own
  // through one ValueAccessor, the grids merged as the threads join (an
  // OpenVDB tree takes no concurrent topology changes).
  void activate_shell(const cpp::Threads& t);
  // The sum of the active values (each truncated to an integer, as in
  // Grove's kernel), over a LeafManager's leaves.
  double sum(const cpp::Threads& t) const;
  // openvdb::tools::laplacian of the grid (a new grid, kept).
  void laplacian(const cpp::Threads& t);
  void clear();  // drops both grids (not timed)

  std::int64_t active_voxels() const;
  std::int64_t leaves() const;
  float read(int i, int j, int k) const;
  float read_laplacian(int i, int j, int k) const;

 private:
  struct Grids;
  std::unique_ptr<Grids> grids_;
};

}  // namespace grove_bench::vdb
