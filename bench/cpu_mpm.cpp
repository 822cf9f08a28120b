// cpu_mpm.cpp — examples/mpm88 (Taichi's mpm88: 8192 particles, a 128^2
// grid) on the CPU backend against the same substep in plain C++
// (examples/mpm88/model.h, -O3 -march=native like the other baselines), on
// one thread (the model is serial: its particle-to-grid sums need no
// atomics). One run is one substep from the same state; both sides start
// from the example's first state, and each advances its own copy.
//
//   cpu_mpm88_1t  one substep (clear, P2G, grid update, G2P)
//
// and examples/mpm3d_sparse (32,768 particles of a spinning elastic cube, a
// 64^3 grid of pointer blocks of 4^3 cells) against its model
// (examples/mpm3d_sparse/model.h: a dense grid, and the rotation of F by
// Higham's iteration in double where Grove takes an SVD):
//
//   cpu_mpm3d_sparse_1t  one substep (blocks freed, P2G, grid update over
//                        the active blocks, G2P); counter active_blocks
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "harness.h"
#include "mpm3d_sparse/model.h"
#include "mpm3d_sparse/mpm3d.h"
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

Pair mpm3d_pair() {
  struct Grove {
    grove::Program prog;
    mpm3d::Simulation sim;
    explicit Grove(const mpm3d::Params& p) : prog(cpu_config(1)), sim(prog, p) {}
  };
  const mpm3d::Params params;
  const std::vector<float> start = mpm3d::initial_positions(params.particles);
  std::vector<float> velocity(start.size(), 0.0f);
  for (size_t q = 0; q < start.size(); q += 3) {  // the example's spin and fall
    velocity[q] = -4.0f * (start[q + 1] - 0.45f);
    velocity[q + 1] = 4.0f * (start[q] - 0.45f) - 1.0f;
  }
  auto g = std::make_shared<Grove>(params);
  auto m = std::make_shared<mpm3d::Model>(params, start, velocity);
  g->sim.reset(start, velocity);
  g->sim.substep();
  m->substep();
  check(g->sim.active_blocks(g->prog) == static_cast<int64_t>(m->blocks), "active blocks against the C++ model");
  const std::vector<float> x = g->sim.x.to_vector<float>();
  for (size_t k = 0; k < x.size(); ++k)
    check(std::abs(x[k] - m->x[k]) <= 1e-6f, "Grove mpm3d position " + std::to_string(k) + " (against the C++ model)");
  m->count_blocks = false;
  const double blocks = static_cast<double>(m->blocks);
  return {.grove = {[g] {
                      g->sim.substep();
                      g->prog.sync();
                    },
                    {}},
          .baseline = {[m] { m->substep(); }, {}},
          .items_per_run = params.particles,
          .counters = {{"active_blocks", blocks}}};
}

}  // namespace

void register_cpu_mpm() {
  register_pair(workload("cpu_mpm88", 1), grove::Arch::Cpu, "cpp", 20, 3, [] { return mpm88_pair(); });
  register_pair(workload("cpu_mpm3d_sparse", 1), grove::Arch::Cpu, "cpp", 5, 2, [] { return mpm3d_pair(); });
}

}  // namespace grove_bench
