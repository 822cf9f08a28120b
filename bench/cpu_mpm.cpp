// cpu_mpm.cpp — examples/mpm88 (Taichi's mpm88: 8192 particles, a 128^2
// grid) on the CPU backend against the same substep in plain C++
// (examples/mpm88/model.h, -O3 -march=native like the other baselines), on
// one thread (the model is serial: its particle-to-grid sums need no
// atomics). One run is one substep from the same state; both sides start
// from the example's first state, and each advances its own copy.
//
//   cpu_mpm88_1t  one substep (clear, P2G, grid update, G2P)
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "harness.h"
#include "mpm88/model.h"
#include "mpm88/mpm88.h"

namespace grove_bench {
namespace {

Pair mpm88_pair() {
  struct Grove {
    grove::Program prog;
    mpm88::Simulation sim;
    explicit Grove(const mpm88::Params& p) : prog(cpu_config(1)), sim(prog, p) {}
  };
  const mpm88::Params params;
  const std::vector<float> start = mpm88::initial_positions(params.particles);
  std::vector<float> velocity(start.size(), 0.0f);
  for (size_t q = 1; q < velocity.size(); q += 2) velocity[q] = -1.0f;
  auto g = std::make_shared<Grove>(params);
  auto m = std::make_shared<mpm88::Model>(params, start, velocity);
  g->sim.reset(start, velocity);
  g->sim.substep();
  m->substep();
  // The same first substep on both sides (up to the order of the grid's sums).
  const std::vector<float> x = g->sim.x.to_vector<float>();
  for (size_t k = 0; k < x.size(); ++k)
    check(std::abs(x[k] - m->x[k]) <= 1e-6f, "Grove mpm88 position " + std::to_string(k) + " (against the C++ model)");
  return {.grove = {[g] {
                      g->sim.substep();
                      g->prog.sync();
                    },
                    {}},
          .baseline = {[m] { m->substep(); }, {}},
          .items_per_run = params.particles};
}

}  // namespace

void register_cpu_mpm() {
  register_pair(workload("cpu_mpm88", 1), grove::Arch::Cpu, "cpp", 20, 3, [] { return mpm88_pair(); });
}

}  // namespace grove_bench
