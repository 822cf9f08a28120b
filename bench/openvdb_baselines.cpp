// openvdb_baselines.cpp — the OpenVDB side of the sparse CPU rows (see
// openvdb_baselines.h). The tasks run inside the caller's oneTBB arena, so
// OpenVDB's own parallel loops use its threads.
#include "openvdb_baselines.h"

#include <openvdb/openvdb.h>
#include <openvdb/tools/GridOperators.h>
#include <openvdb/tree/LeafManager.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

#include <functional>

#include "shell.h"

namespace grove_bench::vdb {

struct ShellGrid::Grids {
  openvdb::FloatGrid::Ptr grid = openvdb::FloatGrid::create(0.0f);
  openvdb::FloatGrid::Ptr lap;
};

namespace {

// A parallel_reduce body: a grid of its own, written through one accessor.
struct Writer {
  openvdb::FloatGrid::Ptr grid = openvdb::FloatGrid::create(0.0f);
  Writer() = default;
  Writer(Writer&, tbb::split) {}
  void operator()(const tbb::blocked_range<int>& rows) {
    openvdb::FloatGrid::Accessor acc = grid->getAccessor();
    for (int i = rows.begin(); i < rows.end(); ++i)
      for (int j = 0; j < shell::kSide; ++j)
        shell::for_column(i, j, [&](int k) { acc.setValueOn(openvdb::Coord(i, j, k), shell::value(i, j, k)); });
  }
  void join(Writer& other) { grid->tree().merge(other.grid->tree(), openvdb::MERGE_ACTIVE_STATES); }
};

// Runs f inside the threads' arena.
void in_arena(const cpp::Threads& t, const std::function<void()>& f) {
  t.run([](void* d) { (*static_cast<const std::function<void()>*>(d))(); }, const_cast<std::function<void()>*>(&f));
}

}  // namespace

ShellGrid::ShellGrid() : grids_(std::make_unique<Grids>()) { openvdb::initialize(); }
ShellGrid::~ShellGrid() = default;

void ShellGrid::activate_shell(const cpp::Threads& t) {
  in_arena(t, [&] {
    Writer w;
    tbb::parallel_reduce(tbb::blocked_range<int>(0, shell::kSide, 4), w);
    grids_->grid = w.grid;
  });
}

double ShellGrid::sum(const cpp::Threads& t) const {
  double total = 0;
  in_arena(t, [&] {
    openvdb::tree::LeafManager<const openvdb::FloatTree> leaves(grids_->grid->tree());
    // Each value truncated to an integer and summed exactly, as Grove's
    // kernel does (cast(i32, x) into an i32 total).
    total = static_cast<double>(tbb::parallel_reduce(
        leaves.leafRange(), std::int64_t{0},
        [](const openvdb::tree::LeafManager<const openvdb::FloatTree>::LeafRange& r, std::int64_t s) {
          for (auto leaf = r.begin(); leaf; ++leaf)
            for (auto v = leaf->cbeginValueOn(); v; ++v) s += static_cast<std::int32_t>(*v);
          return s;
        },
        [](std::int64_t a, std::int64_t b) { return a + b; }));
  });
  return total;
}

void ShellGrid::laplacian(const cpp::Threads& t) {
  in_arena(t, [&] { grids_->lap = openvdb::tools::laplacian(*grids_->grid); });
}

void ShellGrid::clear() {
  grids_->grid = openvdb::FloatGrid::create(0.0f);
  grids_->lap.reset();
}

std::int64_t ShellGrid::active_voxels() const { return static_cast<std::int64_t>(grids_->grid->activeVoxelCount()); }
std::int64_t ShellGrid::leaves() const { return static_cast<std::int64_t>(grids_->grid->tree().leafCount()); }
float ShellGrid::read(int i, int j, int k) const { return grids_->grid->tree().getValue(openvdb::Coord(i, j, k)); }
float ShellGrid::read_laplacian(int i, int j, int k) const {
  return grids_->lap ? grids_->lap->tree().getValue(openvdb::Coord(i, j, k)) : 0.0f;
}

}  // namespace grove_bench::vdb
