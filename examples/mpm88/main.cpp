// mpm88 — Taichi's mpm88 in Grove: a block of elastic fluid falls and
// splashes in a box (MLS-MPM, 8192 particles on a 128^2 grid, 50 substeps
// per frame), and the particles of the last frame are written as
// DIR/mpm88.png. The simulation itself is mpm88.h.
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

namespace {

constexpr int kSubsteps = 50;  // per frame, as Taichi's mpm88

}  // namespace

int main(int argc, char** argv) {
  const grove_examples::ExampleInfo info{
      .name = "mpm88",
      .summary = "Simulates Taichi's mpm88 (a falling block of elastic fluid, MLS-MPM) for the given frames "
                 "and writes DIR/mpm88.png.",
      .size_help = "image side in pixels",
      .default_size = 512,
      .max_size = 4096,
      .default_steps = 20,
  };
  grove_examples::Options options;
  if (const auto code = grove_examples::parse_options(argc, argv, info, &options)) return *code;

  try {
    grove::Program prog(options.config());
    std::printf("mpm88: running on %s\n", std::string(grove::arch_name(prog.arch())).c_str());
    const mpm88::Params params;
    mpm88::Simulation sim(prog, params);
    sim.reset(mpm88::initial_positions(params.particles));
    for (int frame = 0; frame < options.steps; ++frame)
      for (int s = 0; s < kSubsteps; ++s) sim.substep();
    const std::vector<float> x = sim.x.to_vector<float>();
    double height = 0;
    for (size_t q = 1; q < x.size(); q += 2) height += x[q];
    std::printf("mpm88: %d frames of %d substeps; mean height %.4f (it starts at 0.4000)\n", options.steps, kSubsteps,
                height / params.particles);
    grove_examples::make_out_dir(options.out_dir);
    const std::filesystem::path file = options.out_dir / "mpm88.png";
    grove_examples::write_png(file, options.size, options.size, 3, grove_examples::plot_particles(x, 2, options.size, {6, 133, 135}));
    std::printf("mpm88: wrote %s\n", file.string().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
