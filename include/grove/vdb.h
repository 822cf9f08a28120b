// grove/vdb.h — OpenVDB and NanoVDB exchange (library Grove::vdb, built
// where Debian's libopenvdb-dev is installed).
//
// A grid comes into a Program as a field on SNodes shaped like its tree:
// `pointer` blocks of `bitmasked` voxels (8^3 by default, VDB's leaf), whose
// active voxels are exactly the grid's (active tiles count voxel by voxel)
// and hold its values; inactive voxels read 0, as every inactive Grove cell
// does (the grid's background is in GridInfo). A field goes back out as a
// grid holding its active elements (what a struct-for over it visits),
// to a .vdb file or, through NanoVDB's converter, a .nvdb file.
//
//   grove::vdb::Imported sphere = grove::vdb::import_grid(prog, "sphere.vdb");
//   Kernel blur = prog.kernel("blur", [&] { for_each(sphere.field, ...); });
//   grove::vdb::export_grid(prog, sphere.field, "out.vdb", {.name = "sphere"});
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "grove/program.h"

namespace grove::vdb {

// A grid of a file, as its metadata describes it (nothing of its tree read).
struct GridInfo {
  std::string name;
  // OpenVDB's name of its value type: "float", "double", "int32", "vec3s",
  // "bool", "mask", ... (import_grid takes the first five and "mask").
  std::string value_type;
  std::string grid_class;        // "level set", "fog volume", "staggered", "unknown"
  int64_t active_voxels = 0;     // active tiles counted voxel by voxel
  std::array<int64_t, 3> min{}, max{};  // index-space bounds of the active voxels (inclusive)
  double voxel_size = 1.0;       // of the grid's transform, along x
  double background = 0.0;       // scalar grids: the value inactive voxels stand for
};

// Every grid of the .vdb file at `path`. Raises grove::Error naming the file
// when it cannot be read.
std::vector<GridInfo> info(const std::string& path);

struct ImportOptions {
  std::string grid;   // the grid's name; empty: the file's first grid
  std::string field;  // the new field's name; empty: the grid's (each field's name is its own)
  int block = 8;      // voxels per block edge: 1, 2, 4, ..., 64 (8: VDB's leaves)
};

// A grid in a Program: `field` (f32, f64, i32, a 3-vector of f32, or u8
// holding 1 for a mask or bool grid) is indexed by the grid's own
// coordinates (i, j, k), negative ones included, on root().pointer(ijk)
// (`blocks`, one cell per block of the grid's bounding box, active where
// the grid has an active voxel) .bitmasked(ijk, block) (`voxels`).
struct Imported {
  Field field;
  SNode* blocks = nullptr;
  SNode* voxels = nullptr;
  GridInfo info;
};

// Declares the field under prog.root() (the tree being declared; it is laid
// out and frozen by the import's own launch) and activates and writes
// every active voxel of the grid through a kernel. Raises grove::Error
// naming the file and grid when the file cannot be read, the grid is not
// there or has a value type Grove has no field for.
Imported import_grid(Program& prog, const std::string& path, const ImportOptions& options = {});

struct ExportOptions {
  std::string name = "grove";  // the grid's name
  double voxel_size = 1.0;     // its transform: a uniform scale
  // "level set", "fog volume" or "" (unknown). A level set's inactive
  // voxels inside its surface become -background (OpenVDB's signed flood
  // fill), as a level set's are.
  std::string grid_class;
  double background = 0.0;     // scalar grids: the value of inactive voxels
};

// Writes the active elements of `field` (a 3-index field of f32, f64 or
// i32, or a 3-vector of f32; any layout) as one grid: to an OpenVDB file
// when `path` ends in .vdb, a NanoVDB file (NanoVDB's converter, uncompressed)
// when it ends in .nvdb. Raises grove::Error naming the field or file when
// either cannot be.
void export_grid(Program& prog, const Field& field, const std::string& path, const ExportOptions& options = {});

// The same grid in NanoVDB's layout, in memory (what a .nvdb file holds,
// uncompressed): upload the bytes into a storage buffer and a shader reads
// the grid with PNanoVDB (nanovdb/PNanoVDB.h, PNANOVDB_GLSL or _HLSL) as it
// reads any NanoVDB grid, with no Grove code in the shader
// (tests/vdb/pnanovdb_probe.comp does on Vulkan).
std::vector<uint8_t> to_nanovdb(Program& prog, const Field& field, const ExportOptions& options = {});

}  // namespace grove::vdb
