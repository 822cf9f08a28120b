// mpm88 — Taichi's mpm88 in Grove: a block of elastic fluid falls and
// splashes in a box (MLS-MPM, 8192 particles on a 128^2 grid, 50 substeps
// per frame), shown in a window while there is a display, and the
// particles of the last frame are written as DIR/mpm88.png. The simulation
// itself is mpm88.h.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "image.h"
#include "mpm88.h"
#include "options.h"
#include "viewer.h"

namespace {

constexpr int kSubsteps = 50;  // per frame, as Taichi's mpm88

}  // namespace

int main(int argc, char** argv) {
  const grove_examples::ExampleInfo info{
      .name = "mpm88",
      .summary =
          "Simulates Taichi's mpm88 (a falling block of elastic fluid, MLS-MPM) for the given "
          "frames "
          "and writes DIR/mpm88.png.",
      .size_help = "image side in pixels",
      .default_size = 512,
      .max_size = 4096,
      .default_steps = 20,
  };
  grove_examples::Options options;
  if (const auto code = grove_examples::parse_options(argc, argv, info, &options)) return *code;

  try {
    grove_examples::Viewer viewer(options, "mpm88", options.size, options.size);
    grove::Program prog(viewer.config());
    std::printf("mpm88: running on %s\n", std::string(grove::arch_name(prog.arch())).c_str());
    const mpm88::Params params;
    mpm88::Simulation sim(prog, params);
    sim.reset(mpm88::initial_positions(params.particles));
    auto draw = [&](const std::vector<float>& x) {
      return grove_examples::plot_particles(x, 2, options.size, {6, 133, 135});
    };
    int frames = 0;
    for (bool open = true; frames < options.steps && open;) {
      for (int s = 0; s < kSubsteps; ++s) sim.substep();
      ++frames;
      if (viewer.has_window()) open = viewer.show(draw(sim.x.to_vector<float>()));
    }
    const std::vector<float> x = sim.x.to_vector<float>();
    double height = 0;
    for (size_t q = 1; q < x.size(); q += 2) height += x[q];
    std::printf("mpm88: %d frames of %d substeps; mean height %.4f (it starts at 0.4000)\n", frames,
                kSubsteps, height / params.particles);
    viewer.finish(options.out_dir / "mpm88.png", draw(x));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
