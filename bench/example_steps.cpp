// example_steps.cpp — a step of the simulation examples on every backend
// that runs here (but the interpreter), against the plain C++ model each
// example is tested with, run serially on the host (one run advances each
// side's own copy by one step):
//
//   smoke_step   examples/smoke_sparse, 256^2 grid in 8^2 blocks, after 100
//                warm-up steps (about 230 of 1024 blocks active);
//                counters active_blocks, ns_per_active_cell (Grove's side)
//   mpm3d_step   examples/mpm3d_sparse's substep (32,768 particles, 64^3
//                grid of 4^3 blocks), on the GPU backends (the CPU row is
//                cpu_mpm3d_sparse_1t, bench/cpu_mpm.cpp); counter active_blocks
#include <memory>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "harness.h"
#include "mpm3d_sparse/model.h"
#include "mpm3d_sparse/mpm3d.h"
#include "smoke_sparse/model.h"
#include "smoke_sparse/smoke.h"

namespace grove_bench {
namespace {

Pair smoke_pair(grove::Arch arch) {
  struct Grove {
    grove::Program prog;
    smoke::Simulation sim;
    Grove(grove::Arch a, const smoke::Params& p) : prog(steady_config(a)), sim(prog, p) {}
  };
  const smoke::Params params;
  auto g = std::make_shared<Grove>(arch, params);
  auto m = std::make_shared<smoke::Model>(params);
  for (int s = 0; s < 100; ++s) {
    g->sim.step();
    m->step();
  }
  check(g->sim.active_blocks(g->prog) == m->active_blocks(), "active blocks against the C++ model");
  const double blocks = static_cast<double>(m->active_blocks());
  const double cells = blocks * params.block * params.block;
  return {.grove = {[g] {
                      g->sim.step();
                      g->prog.sync();
                    },
                    {}},
          .baseline = {[m] { m->step(); }, {}},
          .items_per_run = static_cast<int64_t>(cells),
          .counters = {{"active_blocks", blocks}},
          .derive = [cells](double grove_s, double, Counters& c) {
            c.push_back({"ns_per_active_cell", grove_s * 1e9 / cells});
          }};
}

Pair mpm3d_pair(grove::Arch arch) {
  struct Grove {
    grove::Program prog;
    mpm3d::Simulation sim;
    Grove(grove::Arch a, const mpm3d::Params& p) : prog(steady_config(a)), sim(prog, p) {}
  };
  const mpm3d::Params params;
  const std::vector<float> start = mpm3d::initial_positions(params.particles);
  std::vector<float> velocity(start.size(), 0.0f);
  for (size_t q = 0; q < start.size(); q += 3) {  // the example's spin and fall
    velocity[q] = -4.0f * (start[q + 1] - 0.45f);
    velocity[q + 1] = 4.0f * (start[q] - 0.45f) - 1.0f;
  }
  auto g = std::make_shared<Grove>(arch, params);
  auto m = std::make_shared<mpm3d::Model>(params, start, velocity);
  g->sim.reset(start, velocity);
  g->sim.substep();
  m->substep();
  check(g->sim.active_blocks(g->prog) == static_cast<int64_t>(m->blocks), "active blocks against the C++ model");
  m->count_blocks = false;
  return {.grove = {[g] {
                      g->sim.substep();
                      g->prog.sync();
                    },
                    {}},
          .baseline = {[m] { m->substep(); }, {}},
          .items_per_run = params.particles,
          .counters = {{"active_blocks", static_cast<double>(m->blocks)}}};
}

}  // namespace

void register_example_steps() {
  for (const grove::Arch arch : runnable_backends()) {
    if (arch == grove::Arch::Interp) continue;
    register_pair("smoke_step", arch, "cpp", 10, 2, [arch] { return smoke_pair(arch); });
    if (arch != grove::Arch::Cpu)
      register_pair("mpm3d_step", arch, "cpp", 3, 2, [arch] { return mpm3d_pair(arch); });
  }
}

}  // namespace grove_bench
