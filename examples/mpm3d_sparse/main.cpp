// mpm3d_sparse — a 3-D elastic jelly cube (MLS-MPM, fixed-corotated
// material through grove::svd) thrown spinning against the floor of a box,
// on a grid of pointer blocks that exist only around the particles. Prints
// the active blocks of each frame, and writes the particles of the last
// frame, seen from the front, as DIR/mpm3d_sparse.png (and every frame in a
// window while there is a display). The simulation is
// mpm3d.h.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "image.h"
#include "mpm3d.h"
#include "options.h"
#include "viewer.h"

namespace {

constexpr int kSubsteps = 25;  // per frame

}  // namespace

int main(int argc, char** argv) {
  const grove_examples::ExampleInfo info{
      .name = "mpm3d_sparse",
      .summary =
          "Simulates a spinning elastic cube falling in a box (3-D MLS-MPM on a grid of pointer "
          "blocks), "
          "prints the active blocks per frame and writes DIR/mpm3d_sparse.png.",
      .size_help = "image side in pixels",
      .default_size = 512,
      .max_size = 4096,
      .default_steps = 20,
  };
  grove_examples::Options options;
  if (const auto code = grove_examples::parse_options(argc, argv, info, &options)) return *code;

  try {
    grove_examples::Viewer viewer(options, "mpm3d_sparse", options.size, options.size);
    grove::Program prog(viewer.config());
    const mpm3d::Params params;
    std::printf("mpm3d_sparse: running on %s: %d particles, a %d^3 grid in %d^3 blocks of %d^3\n",
                std::string(grove::arch_name(prog.arch())).c_str(), params.particles, params.grid,
                params.grid / params.block, params.block);
    mpm3d::Simulation sim(prog, params);
    const std::vector<float> x0 = mpm3d::initial_positions(params.particles);
    std::vector<float> v0(x0.size());
    for (size_t q = 0; q < x0.size(); q += 3) {  // spinning about z, falling
      v0[q] = -4.0f * (x0[q + 1] - 0.45f);
      v0[q + 1] = 4.0f * (x0[q] - 0.45f) - 1.0f;
      v0[q + 2] = 0.0f;
    }
    sim.reset(x0, v0);
    const int64_t all_blocks = static_cast<int64_t>(params.grid / params.block) *
                               (params.grid / params.block) * (params.grid / params.block);
    auto draw = [&] {
      return grove_examples::plot_particles(sim.x.to_vector<float>(), 3, options.size,
                                            {237, 85, 59});
    };
    for (int frame = 1; frame <= options.steps; ++frame) {
      for (int s = 0; s < kSubsteps; ++s) sim.substep();
      const int64_t active = sim.active_blocks(prog);
      std::printf("frame %3d: %lld of %lld blocks active (%.1f%%)\n", frame,
                  static_cast<long long>(active), static_cast<long long>(all_blocks),
                  100.0 * static_cast<double>(active) / static_cast<double>(all_blocks));
      if (viewer.has_window() && !viewer.show(draw())) break;  // closed
    }
    viewer.finish(options.out_dir / "mpm3d_sparse.png", draw());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
