// OpenVDB and NanoVDB exchange (grove/vdb.h) on every backend: grids made by
// OpenVDB itself (a level-set sphere, the fog volume OpenVDB makes of it,
// vector, integer and mask grids with negative coordinates and active
// tiles) come into Grove with exactly their active voxels and values, are
// used by a kernel, and go back out to grids that OpenVDB and NanoVDB read
// as the same grid; `grove vdb` prints what a file holds.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <openvdb/openvdb.h>
#include <openvdb/io/File.h>
#include <openvdb/tools/LevelSetSphere.h>
#include <openvdb/tools/LevelSetUtil.h>
#include <nanovdb/util/IO.h>

#include "../api/backend_fixture.h"
#include "../support/scratch_dir.h"
#include "grove/vdb.h"

using namespace grove;
using ::testing::HasSubstr;

namespace {

class Vdb : public grove::testing::BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    openvdb::initialize();
  }
  std::string path(const std::string& name) const { return (dir_.path() / name).string(); }
  grove::testing::ScratchDir dir_{"vdb"};
};
GROVE_ALL_BACKENDS(Vdb);

void write(const std::string& file, const openvdb::GridPtrVec& grids) {
  openvdb::io::File f(file);
  f.write(grids);
  f.close();
}

openvdb::GridBase::Ptr read(const std::string& file, const std::string& name) {
  openvdb::io::File f(file);
  f.open();
  openvdb::GridBase::Ptr g = f.readGrid(name);
  f.close();
  return g;
}

openvdb::FloatGrid::Ptr sphere() {
  openvdb::FloatGrid::Ptr g = openvdb::tools::createLevelSetSphere<openvdb::FloatGrid>(
      /*radius=*/10.0f, openvdb::Vec3f(1.5f, -3.0f, 2.0f), /*voxelSize=*/0.5f, /*halfWidth=*/3.0f);
  g->setName("sphere");
  return g;
}

// Every active voxel of `want` (tiles voxel by voxel) is active in `got`
// with the same value, and no other is.
template <typename GridT>
void expect_same_voxels(const GridT& want, const GridT& got) {
  typename GridT::TreeType a(want.tree()), b(got.tree());
  a.voxelizeActiveTiles();
  b.voxelizeActiveTiles();
  EXPECT_EQ(a.activeVoxelCount(), b.activeVoxelCount());
  openvdb::tree::ValueAccessor<const typename GridT::TreeType> acc(b);
  int bad = 0;
  for (auto it = a.cbeginValueOn(); it && bad < 5; ++it) {
    if (!acc.isValueOn(it.getCoord()) || !(acc.getValue(it.getCoord()) == *it)) {
      ADD_FAILURE() << "voxel " << it.getCoord() << ": " << *it << " in OpenVDB's grid, "
                    << (acc.isValueOn(it.getCoord()) ? "" : "inactive, ") << acc.getValue(it.getCoord())
                    << " after the round trip";
      ++bad;
    }
  }
}

// The sum of a field's values over its active elements, by a kernel.
double kernel_sum(Program& prog, const Field& x) {
  Field total = prog.field(f64, "total_" + x.name(), {});
  Kernel k = prog.kernel("sum_" + x.name(), [&] { for_each(x, [&](Indices I) { total() += cast(f64, x(I)); }); });
  k();
  return total.read<double>();
}

TEST_P(Vdb, ALevelSetSphereComesInWithExactlyItsActiveVoxelsAndGoesBackOut) {
  const openvdb::FloatGrid::Ptr want = sphere();
  write(path("sphere.vdb"), {want});

  Program prog(config());
  const vdb::Imported got = vdb::import_grid(prog, path("sphere.vdb"));
  EXPECT_EQ(got.info.name, "sphere");
  EXPECT_EQ(got.info.value_type, "float");
  EXPECT_EQ(got.info.grid_class, "level set");
  EXPECT_EQ(got.info.voxel_size, 0.5);
  EXPECT_EQ(got.info.background, want->background());
  EXPECT_EQ(got.info.active_voxels, static_cast<int64_t>(want->activeVoxelCount()));
  // One pointer cell per leaf, one bitmasked cell per active voxel.
  const Stats stats = prog.stats();
  EXPECT_EQ(stats.at(got.voxels->name()).active_cells, static_cast<int64_t>(want->activeVoxelCount()));
  EXPECT_EQ(stats.at(got.blocks->name()).active_cells, static_cast<int64_t>(want->tree().leafCount()));
  // Values, read on the host at voxels OpenVDB names, negative ones included.
  int checked = 0;
  for (auto it = want->cbeginValueOn(); it; ++it) {
    if (++checked % 97 != 0) continue;
    const openvdb::Coord c = it.getCoord();
    ASSERT_EQ(got.field.read<float>({c.x(), c.y(), c.z()}), *it) << c;
  }
  double sum = 0;
  for (auto it = want->cbeginValueOn(); it; ++it) sum += *it;
  EXPECT_NEAR(kernel_sum(prog, got.field), sum, 1e-9 * std::abs(sum) + 1e-6);

  vdb::export_grid(prog, got.field, path("back.vdb"),
                   {.name = "back", .voxel_size = 0.5, .grid_class = "level set", .background = want->background()});
  const auto back = openvdb::gridPtrCast<openvdb::FloatGrid>(read(path("back.vdb"), "back"));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->getGridClass(), openvdb::GRID_LEVEL_SET);
  EXPECT_EQ(back->voxelSize()[0], 0.5);
  EXPECT_EQ(back->background(), want->background());
  expect_same_voxels(*want, *back);
}

TEST_P(Vdb, AFogVolumesActiveTilesBecomeVoxels) {
  openvdb::FloatGrid::Ptr fog = sphere();
  openvdb::tools::sdfToFogVolume(*fog);
  fog->setName("fog");
  // The interior of a fog volume is made of active tiles (value 1).
  openvdb::Index64 tiles = 0;
  for (auto it = fog->cbeginValueOn(); it; ++it) tiles += it.isTileValue() ? 1 : 0;
  ASSERT_GT(tiles, 0u) << "OpenVDB made no active tile; the test would not test tiles";
  write(path("volumes.vdb"), {sphere(), fog});

  Program prog(config());
  const vdb::Imported got = vdb::import_grid(prog, path("volumes.vdb"), {.grid = "fog"});
  EXPECT_EQ(got.info.grid_class, "fog volume");
  EXPECT_EQ(prog.stats().at(got.voxels->name()).active_cells, static_cast<int64_t>(fog->activeVoxelCount()));
  // A kernel on the imported grid: doubles the density.
  Kernel twice = prog.kernel("twice", [&] { for_each(got.field, [&](Indices I) { got.field(I) *= 2.0f; }); });
  twice();
  vdb::export_grid(prog, got.field, path("fog2.vdb"), {.name = "fog2", .grid_class = "fog volume"});
  const auto back = openvdb::gridPtrCast<openvdb::FloatGrid>(read(path("fog2.vdb"), "fog2"));
  ASSERT_TRUE(back);
  openvdb::FloatGrid::Ptr want = fog->deepCopy();
  for (auto it = want->beginValueOn(); it; ++it) it.setValue(*it * 2.0f);
  expect_same_voxels(*want, *back);
}

TEST_P(Vdb, VectorIntegerAndMaskGridsKeepTheirValuesAtNegativeCoordinates) {
  auto vel = openvdb::Vec3SGrid::create(openvdb::Vec3s(0));
  vel->setName("vel");
  auto ids = openvdb::Int32Grid::create(-1);
  ids->setName("ids");
  auto mask = openvdb::MaskGrid::create();
  mask->setName("mask");
  const std::vector<openvdb::Coord> at = {{-9, 0, 4}, {-1, -1, -1}, {0, 0, 0}, {7, 8, 9}, {100, -50, 3}, {-64, 63, -8}};
  for (size_t n = 0; n < at.size(); ++n) {
    vel->tree().setValue(at[n], openvdb::Vec3s(float(n), -0.5f * float(n), 1.0f + float(n)));
    ids->tree().setValue(at[n], int32_t(n) * 1000 - 7);
    mask->tree().setValueOn(at[n]);
  }
  // An active tile of 8^3 voxels (a leaf's worth) in the integer grid.
  ids->tree().addTile(1, openvdb::Coord(-16, 16, 32), 42, true);
  write(path("mixed.vdb"), {vel, ids, mask});

  Program prog(config());
  const vdb::Imported v = vdb::import_grid(prog, path("mixed.vdb"), {.grid = "vel", .block = 4});
  const vdb::Imported n = vdb::import_grid(prog, path("mixed.vdb"), {.grid = "ids"});
  const vdb::Imported m = vdb::import_grid(prog, path("mixed.vdb"), {.grid = "mask"});
  EXPECT_EQ(v.field.components(), 3);
  EXPECT_EQ(n.field.dtype(), i32);
  EXPECT_EQ(m.field.dtype(), u8);
  for (size_t k = 0; k < at.size(); ++k) {
    const openvdb::Coord c = at[k];
    EXPECT_EQ(v.field[0].read<float>({c.x(), c.y(), c.z()}), float(k)) << c;
    EXPECT_EQ(v.field[1].read<float>({c.x(), c.y(), c.z()}), -0.5f * float(k)) << c;
    EXPECT_EQ(v.field[2].read<float>({c.x(), c.y(), c.z()}), 1.0f + float(k)) << c;
    EXPECT_EQ(n.field.read<int32_t>({c.x(), c.y(), c.z()}), int32_t(k) * 1000 - 7) << c;
    EXPECT_EQ(m.field.read<int>({c.x(), c.y(), c.z()}), 1) << c;
  }
  EXPECT_EQ(n.field.read<int32_t>({-9, 23, 39}), 42);  // inside the tile
  const Stats stats = prog.stats();
  EXPECT_EQ(stats.at(v.voxels->name()).active_cells, 6);
  EXPECT_EQ(stats.at(n.voxels->name()).active_cells, 6 + 512);
  EXPECT_EQ(stats.at(m.voxels->name()).active_cells, 6);
  // 4^3 blocks: each of the 6 voxels in a block of its own.
  EXPECT_EQ(stats.at(v.blocks->name()).active_cells, 6);

  vdb::export_grid(prog, v.field, path("vel2.vdb"), {.name = "vel"});
  vdb::export_grid(prog, n.field, path("ids2.vdb"), {.name = "ids", .background = -1});
  expect_same_voxels(*vel, *openvdb::gridPtrCast<openvdb::Vec3SGrid>(read(path("vel2.vdb"), "vel")));
  expect_same_voxels(*ids, *openvdb::gridPtrCast<openvdb::Int32Grid>(read(path("ids2.vdb"), "ids")));
}

TEST_P(Vdb, NanoVdbReadsTheExportedGrid) {
  const openvdb::FloatGrid::Ptr want = sphere();
  write(path("sphere.vdb"), {want});
  Program prog(config());
  const vdb::Imported got = vdb::import_grid(prog, path("sphere.vdb"));
  vdb::export_grid(prog, got.field, path("sphere.nvdb"), {.name = "nano", .voxel_size = 0.5, .grid_class = "level set",
                                                          .background = want->background()});
  nanovdb::GridHandle<> handle = nanovdb::io::readGrid(path("sphere.nvdb"));
  const nanovdb::NanoGrid<float>* nano = handle.grid<float>();
  ASSERT_NE(nano, nullptr);
  EXPECT_EQ(std::string(nano->gridName()), "nano");
  EXPECT_EQ(nano->activeVoxelCount(), want->activeVoxelCount());
  EXPECT_TRUE(nano->isLevelSet());
  auto acc = nano->getAccessor();
  int checked = 0;
  for (auto it = want->cbeginValueOn(); it; ++it) {
    if (++checked % 31 != 0) continue;
    const openvdb::Coord c = it.getCoord();
    const nanovdb::Coord n(c.x(), c.y(), c.z());
    ASSERT_TRUE(acc.isActive(n)) << c;
    ASSERT_EQ(acc.getValue(n), *it) << c;
  }
  // Outside the narrow band: NanoVDB's background.
  EXPECT_EQ(acc.getValue(nanovdb::Coord(1000, 1000, 1000)), want->background());
}

TEST_P(Vdb, BadFilesGridsAndFieldsAreNamedInErrors) {
  write(path("one.vdb"), {sphere()});
  auto vec3d = openvdb::Vec3DGrid::create();
  vec3d->setName("doubles");
  vec3d->tree().setValue(openvdb::Coord(1, 2, 3), openvdb::Vec3d(1, 2, 3));
  write(path("vec3d.vdb"), {vec3d});
  Program prog(config());
  using grove::testing::error_of;
  EXPECT_THAT(error_of([&] { vdb::import_grid(prog, path("missing.vdb")); }), HasSubstr("missing.vdb"));
  EXPECT_THAT(error_of([&] { vdb::import_grid(prog, path("one.vdb"), {.grid = "smoke"}); }),
              ::testing::AllOf(HasSubstr("'smoke'"), HasSubstr("'sphere'")));
  EXPECT_THAT(error_of([&] { vdb::import_grid(prog, path("vec3d.vdb")); }),
              ::testing::AllOf(HasSubstr("vec3d"), HasSubstr("float")));
  EXPECT_THAT(error_of([&] { vdb::import_grid(prog, path("one.vdb"), {.block = 6}); }), HasSubstr("block"));
  EXPECT_THAT(error_of([&] { vdb::info(path("missing.vdb")); }), HasSubstr("missing.vdb"));
  vdb::import_grid(prog, path("one.vdb"));
  EXPECT_THAT(error_of([&] { vdb::import_grid(prog, path("one.vdb")); }),
              ::testing::AllOf(HasSubstr("'sphere'"), HasSubstr("ImportOptions::field")));
  EXPECT_EQ(vdb::import_grid(prog, path("one.vdb"), {.field = "sphere2"}).field.name(), "sphere2");
  Field flat = prog.field(f32, "flat", {4, 4});
  Field halves = prog.field(f16, "halves", {4, 4, 4});
  EXPECT_THAT(error_of([&] { vdb::export_grid(prog, flat, path("flat.vdb")); }),
              ::testing::AllOf(HasSubstr("'flat'"), HasSubstr("2 indices")));
  EXPECT_THAT(error_of([&] { vdb::export_grid(prog, halves, path("h.vdb")); }),
              ::testing::AllOf(HasSubstr("'halves'"), HasSubstr("f16")));
  EXPECT_THAT(error_of([&] { vdb::export_grid(prog, halves, path("h.txt")); }), HasSubstr(".vdb"));
}

TEST(VdbTool, InfoImportAndExportDescribeTheFile) {
  openvdb::initialize();
  grove::testing::ScratchDir dir("vdb_tool");
  const std::string file = (dir.path() / "s.vdb").string(), out = (dir.path() / "s.nvdb").string();
  const openvdb::FloatGrid::Ptr g = sphere();
  write(file, {g});
  auto run = [](const std::string& command) {
    std::string text;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + " 2>&1").c_str(), "r"), pclose);
    char buf[512];
    while (pipe && fgets(buf, sizeof buf, pipe.get())) text += buf;
    return text;
  };
  const std::string count = std::to_string(g->activeVoxelCount());
  const std::string tool = GROVE_TOOL_PATH;
  EXPECT_THAT(run(tool + " vdb info " + file),
              ::testing::AllOf(HasSubstr("grid 'sphere': float, level set, " + count + " active voxels"),
                               HasSubstr("voxel size 0.5")));
  EXPECT_THAT(run(tool + " vdb import " + file + " --arch interp"),
              ::testing::AllOf(HasSubstr(count + " active voxels in " + std::to_string(g->tree().leafCount()) + " blocks")));
  EXPECT_THAT(run(tool + " vdb export " + file + " " + out + " --arch interp"), HasSubstr("wrote " + out));
  EXPECT_TRUE(std::filesystem::exists(out));
  EXPECT_THAT(run(tool + " vdb info " + (dir.path() / "none.vdb").string()), HasSubstr("error:"));
}

}  // namespace
