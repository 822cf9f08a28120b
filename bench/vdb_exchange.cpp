// vdb_exchange.cpp — OpenVDB exchange (grove/vdb.h) against OpenVDB's own
// file input and output, on every backend that runs here, for a level-set
// sphere of radius 100 voxels (narrow band of 3: about 750,000 active voxels
// in 8^3 leaves):
//
//   vdb_import  vdb::import_grid of the file (read, gather, upload, the
//               kernel that activates and writes every voxel) vs
//               io::File::readGrid of the same file
//   vdb_export  vdb::export_grid of the imported field to a .vdb file (a
//               struct-for that lists the active voxels, the copy out, the
//               grid built from it, written) vs io::File::write of the grid
//
// Counters give voxels per second on each side (items_per_second). Each
// Grove run declares a new field (a grid's field is declared once) and
// compiles its own staging kernels, which the Grove side's time includes.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <openvdb/openvdb.h>
#include <openvdb/io/File.h>
#include <openvdb/tools/LevelSetSphere.h>

#include <grove/grove.h>
#include <grove/vdb.h>

#include "harness.h"

namespace grove_bench {
namespace {

constexpr int kIterations = 3;
constexpr int kRepetitions = 2;

struct Files {
  std::filesystem::path dir, in, grove_out, vdb_out;
  openvdb::FloatGrid::Ptr grid;
  Files() {
    openvdb::initialize();
    dir = std::filesystem::temp_directory_path() / ("grove_bench_vdb_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    in = dir / "sphere.vdb";
    grove_out = dir / "grove.vdb";
    vdb_out = dir / "openvdb.vdb";
    grid = openvdb::tools::createLevelSetSphere<openvdb::FloatGrid>(100.0f, openvdb::Vec3f(0.0f), 1.0f, 3.0f);
    grid->setName("sphere");
    openvdb::io::File f(in.string());
    f.write({grid});
    f.close();
  }
  ~Files() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

std::shared_ptr<Files> files() {
  static std::shared_ptr<Files> f = std::make_shared<Files>();
  return f;
}

struct State {
  grove::Program prog;
  int imports = 0;
  grove::vdb::Imported last;
  explicit State(grove::Arch arch) : prog(grove::Config{.arch = arch}) {}
  grove::vdb::Imported import_once(const Files& f) {
    return grove::vdb::import_grid(prog, f.in.string(), {.field = "sphere_" + std::to_string(++imports)});
  }
};

int64_t active(grove::Program& prog, const grove::vdb::Imported& g) {
  return prog.stats().at(g.voxels->name()).active_cells;
}

Pair import_pair(grove::Arch arch) {
  auto f = files();
  auto s = std::make_shared<State>(arch);
  const int64_t voxels = static_cast<int64_t>(f->grid->activeVoxelCount());
  s->last = s->import_once(*f);
  check(active(s->prog, s->last) == voxels, "active voxels after import");
  auto read = std::make_shared<openvdb::GridBase::Ptr>();
  return {.grove = {[s, f] { s->last = s->import_once(*f); }, {}},
          .baseline = {[f, read] {
                         openvdb::io::File file(f->in.string());
                         file.open(false);
                         *read = file.readGrid("sphere");
                         file.close();
                       },
                       {}},
          .items_per_run = voxels};
}

Pair export_pair(grove::Arch arch) {
  auto f = files();
  auto s = std::make_shared<State>(arch);
  const int64_t voxels = static_cast<int64_t>(f->grid->activeVoxelCount());
  s->last = s->import_once(*f);
  grove::vdb::export_grid(s->prog, s->last.field, f->grove_out.string(), {.name = "sphere"});
  check(grove::vdb::info(f->grove_out.string()).at(0).active_voxels == voxels, "active voxels after export");
  return {.grove = {[s, f] { grove::vdb::export_grid(s->prog, s->last.field, f->grove_out.string(), {.name = "sphere"}); },
                    {}},
          .baseline = {[f] {
                         openvdb::io::File file(f->vdb_out.string());
                         file.write({f->grid});
                         file.close();
                       },
                       {}},
          .items_per_run = voxels};
}

}  // namespace

void register_vdb_exchange() {
  for (const grove::Arch arch : runnable_backends()) {
    if (arch == grove::Arch::Interp) continue;  // minutes per run
    register_pair("vdb_import", arch, "openvdb_read", kIterations, kRepetitions, [arch] { return import_pair(arch); });
    register_pair("vdb_export", arch, "openvdb_write", kIterations, kRepetitions, [arch] { return export_pair(arch); });
  }
}

}  // namespace grove_bench
