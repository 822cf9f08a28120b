// use_vdb.cpp — OpenVDB exchange through an installed Grove (Grove::vdb),
// with no OpenVDB header or CMake package in this project: a sparse field
// written to a .vdb file, read back into a second field, compared.
#include <cstdio>
#include <filesystem>
#include <string>

#include <grove/grove.h>
#include <grove/vdb.h>

using namespace grove::dsl;

int main() {
  const std::string file = (std::filesystem::temp_directory_path() / "grove_consumer_use_vdb.vdb").string();
  grove::Program prog({.arch = grove::Arch::Interp});
  grove::Field d = prog.field(f32, "density");
  prog.root().pointer(ijk, 4).bitmasked(ijk, 8).place({d}, {-16, -16, -16});
  grove::Kernel seed = prog.kernel("seed", [&] {
    for_range(0, 10, [&](Expr n) { d(n - 5, 2 * n - 9, -n) = cast(f32, n) + 0.5f; });
  });
  seed();
  grove::vdb::export_grid(prog, d, file, {.name = "density", .grid_class = "fog volume"});
  const grove::vdb::GridInfo info = grove::vdb::info(file).at(0);
  const grove::vdb::Imported back = grove::vdb::import_grid(prog, file, {.field = "density_back"});
  std::filesystem::remove(file);
  int failures = info.active_voxels != 10 || info.grid_class != "fog volume";
  for (int n = 0; n < 10; ++n) failures += back.field.read<float>({n - 5, 2 * n - 9, -n}) != n + 0.5f;
  std::printf("vdb: %lld active voxels, %d wrong\n", static_cast<long long>(info.active_voxels), failures);
  return failures == 0 ? 0 : 1;
}
