// src/vdb/vdb.cpp — OpenVDB and NanoVDB exchange (grove/vdb.h). The only
// file that includes OpenVDB's and NanoVDB's headers. Values cross between
// the host and the device through a staging tree of plain arrays (one
// instance per call, destroyed at its end) and one kernel per call, so an
// import or export costs a bulk copy and a launch, whatever the backend.
#include "grove/vdb.h"

#include <atomic>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <openvdb/openvdb.h>
#include <openvdb/io/File.h>
#include <openvdb/tools/SignedFloodFill.h>
#include <nanovdb/util/IO.h>
#include <nanovdb/util/OpenToNanoVDB.h>

#include "grove/dsl.h"
#include "grove/error.h"

namespace grove::vdb {

namespace {

// Names of staging tree types and kernels, unique in a process.
std::string fresh(const char* what) {
  static std::atomic<int64_t> serial{0};
  return std::string("grove_vdb_") + what + "_" + std::to_string(++serial);
}

void initialize() {
  static const bool done = [] {
    openvdb::initialize();
    return true;
  }();
  (void)done;
}

// Runs `f`, turning OpenVDB's and the standard library's exceptions into
// grove::Error saying what was being done.
template <typename F>
auto guarded(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const openvdb::Exception& e) {
    throw Error(what + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(what + ": " + e.what());
  }
}

// A grid's description: its count and bounds from the file's metadata when
// `read_tree` is false and the metadata is there (info() reads no tree),
// else from the tree itself.
GridInfo describe(const openvdb::GridBase& grid, bool read_tree) {
  GridInfo g;
  g.name = grid.getName();
  g.value_type = grid.valueType();
  g.grid_class = openvdb::GridBase::gridClassToString(grid.getGridClass());
  g.voxel_size = grid.voxelSize()[0];
  auto count = grid.getMetadata<openvdb::Int64Metadata>(openvdb::GridBase::META_FILE_VOXEL_COUNT);
  auto lo = grid.getMetadata<openvdb::Vec3IMetadata>(openvdb::GridBase::META_FILE_BBOX_MIN);
  auto hi = grid.getMetadata<openvdb::Vec3IMetadata>(openvdb::GridBase::META_FILE_BBOX_MAX);
  if (!read_tree && count && lo && hi) {
    g.active_voxels = count->value();
    for (int a = 0; a < 3; ++a) {
      g.min[a] = lo->value()[a];
      g.max[a] = hi->value()[a];
    }
    return g;
  }
  g.active_voxels = static_cast<int64_t>(grid.activeVoxelCount());
  const openvdb::CoordBBox box = grid.evalActiveVoxelBoundingBox();
  for (int a = 0; a < 3; ++a) {
    g.min[a] = box.min()[a];
    g.max[a] = box.max()[a];
  }
  return g;
}

std::string grid_names(const openvdb::GridPtrVec& grids) {
  std::string out;
  for (const openvdb::GridBase::Ptr& g : grids) out += (out.empty() ? "'" : ", '") + g->getName() + "'";
  return out.empty() ? "none" : out;
}

// What a grid of `value_type` becomes: a field type and its components.
struct FieldKind {
  DataType type = DataType::unknown;
  int components = 1;
};
FieldKind field_kind(const std::string& value_type) {
  if (value_type == "float") return {DataType::f32, 1};
  if (value_type == "double") return {DataType::f64, 1};
  if (value_type == "int32") return {DataType::i32, 1};
  if (value_type == "vec3s") return {DataType::f32, 3};
  if (value_type == "bool" || value_type == "mask") return {DataType::u8, 1};
  return {};
}

// The grid's active voxels (tiles voxel by voxel): coordinates, three per
// voxel, and values, `components` per voxel, as `T`, leaf by leaf. The
// tree is copied only to voxelize active tiles where it has any (a level
// set's narrow band has none).
template <typename GridT, typename T>
void gather(const GridT& grid, int components, std::vector<int32_t>& ijk, std::vector<T>& values) {
  using TreeT = typename GridT::TreeType;
  const TreeT* tree = &grid.tree();
  std::optional<TreeT> voxelized;
  if (tree->hasActiveTiles()) {
    voxelized.emplace(*tree);
    voxelized->voxelizeActiveTiles();
    tree = &*voxelized;
  }
  const size_t count = static_cast<size_t>(tree->activeLeafVoxelCount());
  ijk.reserve(count * 3);
  values.reserve(count * static_cast<size_t>(components));
  for (auto leaf = tree->cbeginLeaf(); leaf; ++leaf) {
    for (auto it = leaf->cbeginValueOn(); it; ++it) {
      const openvdb::Coord c = it.getCoord();
      ijk.insert(ijk.end(), {c.x(), c.y(), c.z()});
      using V = typename GridT::ValueType;
      if constexpr (std::is_same_v<V, openvdb::Vec3s>) {
        const openvdb::Vec3s v = *it;
        values.insert(values.end(), {v[0], v[1], v[2]});
      } else if constexpr (std::is_same_v<V, openvdb::ValueMask>) {
        values.push_back(T{1});
      } else {
        values.push_back(static_cast<T>(*it));
      }
    }
  }
}

int64_t floor_to(int64_t v, int64_t block) { return v >= 0 ? v / block * block : -((-v + block - 1) / block) * block; }

// Declares the imported field and its SNodes; writes the voxels through a
// staging tree and one kernel.
template <typename T>
void place_voxels(Program& prog, Imported& out, const FieldKind& kind, const ImportOptions& options,
                  const std::string& what, const std::vector<int32_t>& ijk, const std::vector<T>& values) {
  const int64_t block = options.block;
  const int64_t n = static_cast<int64_t>(ijk.size() / 3);
  // Blocks cover the active voxels' bounds, aligned to the block size as
  // VDB's leaves are to 8.
  std::vector<int64_t> offset(3), blocks(3);
  for (int a = 0; a < 3; ++a) {
    const int64_t lo = n > 0 ? out.info.min[a] : 0, hi = n > 0 ? out.info.max[a] : 0;
    offset[a] = floor_to(lo, block);
    blocks[a] = (hi - offset[a]) / block + 1;
  }
  const std::string name = !options.field.empty() ? options.field : out.info.name.empty() ? "vdb" : out.info.name;
  try {
    out.field = kind.components == 1 ? prog.field(kind.type, name) : prog.vector_field(kind.components, kind.type, name);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what() + " (ImportOptions::field names the new field)");
  }
  out.blocks = &prog.root().pointer(grove::ijk, blocks);
  out.voxels = &out.blocks->bitmasked(grove::ijk, block);
  out.voxels->place({out.field}, offset);
  if (n == 0) return;

  // The staging arrays: n coordinates and n values.
  const TreeType stage = prog.tree_type(fresh("import"), [&](TreeTypeBuilder& b) {
    Field c = b.vector_field(3, DataType::i32, "ijk");
    Field v = kind.components == 1 ? b.field(kind.type, "v") : b.vector_field(kind.components, kind.type, "v");
    b.root().dense(i, n).place(c, v);
  });
  Tree staged = prog.instantiate(stage, "vdb import");
  staged.field("ijk").from_vector(ijk);
  staged.field("v").from_vector(values);
  Field x = out.field;
  const int components = kind.components;
  Kernel put = prog.kernel(fresh("put"), {arg(stage, "s")}, [x, n, components](Args a) {
    const Field c = a.tree(0).field("ijk"), v = a.tree(0).field("v");
    for_range(0, static_cast<int32_t>(n), [&](Expr q) {
      const Indices at{c(q)[0], c(q)[1], c(q)[2]};
      if (components == 1) x(at) = v(q);
      else x(at) = v(q).vec();
    });
  });
  put(staged);
  prog.sync();
  staged.destroy();
}

}  // namespace

std::vector<GridInfo> info(const std::string& path) {
  initialize();
  return guarded("reading '" + path + "' (an OpenVDB .vdb file)", [&] {
    openvdb::io::File file(path);
    file.open(false);
    openvdb::GridPtrVecPtr grids = file.readAllGridMetadata();
    file.close();
    std::vector<GridInfo> out;
    for (const openvdb::GridBase::Ptr& g : *grids) out.push_back(describe(*g, false));
    return out;
  });
}

Imported import_grid(Program& prog, const std::string& path, const ImportOptions& options) {
  initialize();
  if (options.block < 1 || options.block > 64 || (options.block & (options.block - 1)) != 0)
    throw Error("vdb::ImportOptions::block is " + std::to_string(options.block) +
                "; give a power of two from 1 to 64 (8 matches VDB's leaves)");
  const std::string what = "importing " + (options.grid.empty() ? std::string("the first grid") : "grid '" + options.grid + "'") +
                           " of '" + path + "'";
  openvdb::GridBase::Ptr grid = guarded(what, [&] {
    openvdb::io::File file(path);
    file.open(false);
    openvdb::GridBase::Ptr g;
    if (options.grid.empty()) {
      openvdb::GridPtrVecPtr all = file.getGrids();
      if (all->empty()) throw Error(what + ": the file holds no grid");
      g = all->front();
    } else if (file.hasGrid(options.grid)) {
      g = file.readGrid(options.grid);
    } else {
      const std::string names = grid_names(*file.readAllGridMetadata());
      throw Error(what + ": the file has no grid of that name (its grids: " + names + ")");
    }
    file.close();
    return g;
  });
  Imported out;
  // What is active in the tree read (the file's metadata may be stale).
  out.info = describe(*grid, true);
  const FieldKind kind = field_kind(out.info.value_type);
  if (kind.type == DataType::unknown)
    throw Error(what + ": its values are of type '" + out.info.value_type +
                "', which Grove does not import (float, double, int32, vec3s, bool and mask grids do)");
  std::vector<int32_t> ijk;
  auto run = [&](auto& typed, auto sample) {
    using T = decltype(sample);
    std::vector<T> values;
    gather(typed, kind.components, ijk, values);
    place_voxels(prog, out, kind, options, what, ijk, values);
  };
  if (auto g = openvdb::gridPtrCast<openvdb::FloatGrid>(grid)) {
    out.info.background = g->background();
    run(*g, float{});
  } else if (auto g = openvdb::gridPtrCast<openvdb::DoubleGrid>(grid)) {
    out.info.background = g->background();
    run(*g, double{});
  } else if (auto g = openvdb::gridPtrCast<openvdb::Int32Grid>(grid)) {
    out.info.background = g->background();
    run(*g, int32_t{});
  } else if (auto g = openvdb::gridPtrCast<openvdb::Vec3SGrid>(grid)) {
    run(*g, float{});
  } else if (auto g = openvdb::gridPtrCast<openvdb::BoolGrid>(grid)) {
    out.info.background = g->background() ? 1 : 0;
    run(*g, uint8_t{});
  } else if (auto g = openvdb::gridPtrCast<openvdb::MaskGrid>(grid)) {
    run(*g, uint8_t{});
  } else {
    throw Error(what + ": (a Grove bug) value type '" + out.info.value_type + "' has a field kind but no grid type");
  }
  return out;
}

namespace {

// The field's active elements: coordinates and values, through a count, a
// staging tree of that size and a struct-for that fills it.
template <typename T>
void collect(Program& prog, const Field& field, std::vector<int32_t>& ijk, std::vector<T>& values) {
  const int components = field.components();
  const TreeType counter = prog.tree_type(fresh("count"), [&](TreeTypeBuilder& b) {
    Field n = b.field(DataType::i32, "n");
    b.root().dense(i, 1).place(n);
  });
  Tree counted = prog.instantiate(counter, "vdb export count");
  Kernel count = prog.kernel(fresh("count"), {arg(counter, "c")}, [field](Args a) {
    const Field n = a.tree(0).field("n");
    for_each(field, [&](Indices) { atomic_add(n(0), 1); });
  });
  count(counted);
  const int32_t n = counted.field("n").read<int32_t>({0});
  counted.destroy();
  if (n == 0) return;

  const TreeType stage = prog.tree_type(fresh("export"), [&](TreeTypeBuilder& b) {
    Field c = b.vector_field(3, DataType::i32, "ijk");
    Field v = components == 1 ? b.field(field.dtype(), "v") : b.vector_field(components, field.dtype(), "v");
    Field next = b.field(DataType::i32, "next");
    b.root().dense(i, n).place(c, v);
    b.root().dense(i, 1).place(next);
  });
  Tree staged = prog.instantiate(stage, "vdb export");
  Kernel take = prog.kernel(fresh("take"), {arg(stage, "s")}, [field, components](Args a) {
    const Field c = a.tree(0).field("ijk"), v = a.tree(0).field("v"), next = a.tree(0).field("next");
    for_each(field, [&](Indices I) {
      Var q = atomic_add(next(0), 1);
      c(q) = Vec{I[0], I[1], I[2]};
      if (components == 1) v(q) = field(I);
      else v(q) = field(I).vec();
    });
  });
  take(staged);
  ijk = staged.field("ijk").to_vector<int32_t>();
  values = staged.field("v").to_vector<T>();
  staged.destroy();
}

template <typename GridT, typename T>
typename GridT::Ptr build(const std::vector<int32_t>& ijk, const std::vector<T>& values, int components,
                          const ExportOptions& options) {
  using V = typename GridT::ValueType;
  V background{};
  if constexpr (!std::is_same_v<V, openvdb::Vec3s>) background = static_cast<V>(options.background);
  typename GridT::Ptr grid = GridT::create(background);
  auto acc = grid->getAccessor();
  for (size_t e = 0; e < ijk.size() / 3; ++e) {
    const openvdb::Coord c(ijk[3 * e], ijk[3 * e + 1], ijk[3 * e + 2]);
    const size_t at = e * static_cast<size_t>(components);
    if constexpr (std::is_same_v<V, openvdb::Vec3s>) acc.setValue(c, V(values[at], values[at + 1], values[at + 2]));
    else acc.setValue(c, static_cast<V>(values[at]));
  }
  return grid;
}

// The NanoVDB form of a grid make_grid() built. NanoVDB's own
// openToNanoVDB(GridBase) converts any of sixteen grid types, each a large
// template; Grove exports four, so only they are instantiated.
nanovdb::GridHandle<nanovdb::HostBuffer> to_nano(const openvdb::GridBase::Ptr& grid) {
  using Buffer = nanovdb::HostBuffer;
  if (auto f = openvdb::gridConstPtrCast<openvdb::FloatGrid>(grid)) return nanovdb::openToNanoVDB<Buffer>(*f);
  if (auto d = openvdb::gridConstPtrCast<openvdb::DoubleGrid>(grid)) return nanovdb::openToNanoVDB<Buffer>(*d);
  if (auto i = openvdb::gridConstPtrCast<openvdb::Int32Grid>(grid)) return nanovdb::openToNanoVDB<Buffer>(*i);
  if (auto v = openvdb::gridConstPtrCast<openvdb::Vec3SGrid>(grid)) return nanovdb::openToNanoVDB<Buffer>(*v);
  throw Error("grid '" + grid->getName() + "' of type " + grid->type() + " has no NanoVDB export here");
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

namespace {

// The field's active elements as an OpenVDB grid, checked and described as
// `options` say; `what` names the operation in errors.
openvdb::GridBase::Ptr make_grid(Program& prog, const Field& field, const ExportOptions& options,
                                 const std::string& what) {
  initialize();
  if (field.ndim() != 3)
    throw Error(what + ": the field has " + std::to_string(field.ndim()) + " indices; a grid's voxels have 3 (i, j, k)");
  const DataType t = field.dtype();
  const int components = field.components();
  const bool vec3 = components == 3 && field.m() == 1 && t == DataType::f32;
  if (!(components == 1 && (t == DataType::f32 || t == DataType::f64 || t == DataType::i32)) && !vec3)
    throw Error(what + ": the field holds " + (components == 1 ? "" : std::to_string(components) + " x ") +
                std::string(type_name(t)) + "; grids are exported from scalar f32, f64 and i32 fields and 3-vectors of f32");
  if (options.voxel_size <= 0)
    throw Error(what + ": ExportOptions::voxel_size is " + std::to_string(options.voxel_size) + "; give a positive size");
  openvdb::GridClass cls = openvdb::GRID_UNKNOWN;
  if (!options.grid_class.empty()) {
    cls = openvdb::GridBase::stringToGridClass(options.grid_class);
    if (cls == openvdb::GRID_UNKNOWN && options.grid_class != "unknown")
      throw Error(what + ": ExportOptions::grid_class is '" + options.grid_class +
                  "'; give \"level set\", \"fog volume\", \"staggered\" or \"\"");
  }
  std::vector<int32_t> ijk;
  openvdb::GridBase::Ptr grid;
  if (t == DataType::f64) {
    std::vector<double> values;
    collect(prog, field, ijk, values);
    grid = build<openvdb::DoubleGrid>(ijk, values, 1, options);
  } else if (t == DataType::i32) {
    std::vector<int32_t> values;
    collect(prog, field, ijk, values);
    grid = build<openvdb::Int32Grid>(ijk, values, 1, options);
  } else {
    std::vector<float> values;
    collect(prog, field, ijk, values);
    if (vec3) grid = build<openvdb::Vec3SGrid>(ijk, values, 3, options);
    else grid = build<openvdb::FloatGrid>(ijk, values, 1, options);
  }
  // A level set's inactive voxels inside the surface are -background, as
  // OpenVDB's own level sets have them (Grove's inactive cells hold none).
  if (cls == openvdb::GRID_LEVEL_SET) {
    if (auto f = openvdb::gridPtrCast<openvdb::FloatGrid>(grid)) openvdb::tools::signedFloodFill(f->tree());
    if (auto d = openvdb::gridPtrCast<openvdb::DoubleGrid>(grid)) openvdb::tools::signedFloodFill(d->tree());
  }
  grid->setName(options.name);
  grid->setGridClass(cls);
  grid->setTransform(openvdb::math::Transform::createLinearTransform(options.voxel_size));
  return grid;
}

}  // namespace

void export_grid(Program& prog, const Field& field, const std::string& path, const ExportOptions& options) {
  const std::string what = "exporting field '" + field.name() + "' to '" + path + "'";
  const bool nano = ends_with(path, ".nvdb");
  if (!nano && !ends_with(path, ".vdb"))
    throw Error(what + ": give a file name ending in .vdb (OpenVDB) or .nvdb (NanoVDB)");
  const openvdb::GridBase::Ptr grid = make_grid(prog, field, options, what);
  guarded(what, [&] {
    if (nano) {
      nanovdb::GridHandle<nanovdb::HostBuffer> handle = to_nano(grid);
      nanovdb::io::writeGrid(path, handle);
    } else {
      openvdb::io::File file(path);
      file.write({grid});
      file.close();
    }
    return 0;
  });
}

std::vector<uint8_t> to_nanovdb(Program& prog, const Field& field, const ExportOptions& options) {
  const std::string what = "converting field '" + field.name() + "' to a NanoVDB grid";
  const openvdb::GridBase::Ptr grid = make_grid(prog, field, options, what);
  return guarded(what, [&] {
    nanovdb::GridHandle<nanovdb::HostBuffer> handle = to_nano(grid);
    const auto* bytes = handle.data();
    return std::vector<uint8_t>(bytes, bytes + handle.size());
  });
}

}  // namespace grove::vdb
