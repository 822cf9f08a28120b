// examples/mpm88 (Taichi's mpm88, MLS-MPM) on every backend, against a
// plain C++ model of the same substep (examples/mpm88/model.h, no Grove): positions, velocities
// and J after a few substeps, and the mass the particles give the grid
// (the B-spline weights of a particle sum to 1).
#include <cmath>
#include <cstddef>
#include <vector>

#include "backend_fixture.h"
#include "mpm88/model.h"
#include "mpm88/mpm88.h"
#include "mpm3d_sparse/model.h"
#include "mpm3d_sparse/mpm3d.h"

using namespace grove;

namespace {

class Mpm : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(Mpm);

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, double tolerance, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t k = 0; k < got.size(); ++k)
    if (!(std::fabs(static_cast<double>(got[k]) - want[k]) <= tolerance) && bad++ < 5)
      ADD_FAILURE() << what << "[" << k << "] = " << got[k] << ", the model's " << want[k];
}

TEST_P(Mpm, Mpm88FollowsAPlainModelAndConservesMass) {
  mpm88::Params params;
  params.particles = 128;  // small: the interpreter runs it too
  params.grid = 32;
  Program prog(config());
  mpm88::Simulation sim(prog, params);
  // A block low in the box, spinning and spreading, so that its velocity
  // varies (C and J change) and the floor and left wall stop some of it.
  std::vector<float> start = mpm88::initial_positions(params.particles), velocity(start.size());
  for (size_t q = 0; q < start.size(); q += 2) {
    start[q] = 0.05f + 0.5f * (start[q] - 0.2f);
    start[q + 1] = 0.08f + 0.5f * (start[q + 1] - 0.2f);
    const float rx = start[q] - 0.15f, ry = start[q + 1] - 0.18f;
    velocity[q] = 3.0f * rx - 4.0f * ry - 0.5f;
    velocity[q + 1] = 3.0f * ry + 4.0f * rx - 1.0f;
  }
  sim.reset(start, velocity);
  mpm88::Model model(params, start, velocity);
  constexpr int kSubsteps = 30;
  for (int s = 0; s < kSubsteps; ++s) {
    sim.substep();
    model.substep();
  }
  // The grid mass of the last substep: every particle's, p_mass each.
  double mass = 0;
  for (float m : sim.grid_m.to_vector<float>()) mass += m;
  const double dx = 1.0 / params.grid, p_mass = (dx * 0.5) * (dx * 0.5);
  EXPECT_NEAR(mass, params.particles * p_mass, 1e-5 * params.particles * p_mass);
  // The same arithmetic but for the order of the grid's additions.
  expect_near_all(sim.grid_m.to_vector<float>(), model.gm, 1e-9, "grid_m");
  expect_near_all(sim.x.to_vector<float>(), model.x, 1e-6, "x");
  expect_near_all(sim.v.to_vector<float>(), model.v, 1e-5, "v");
  expect_near_all(sim.C.to_vector<float>(), model.C, 1e-3, "C");
  expect_near_all(sim.J.to_vector<float>(), model.J, 1e-6, "J");
  // Something happened: J moved away from 1, and the floor's nodes that
  // particles reach (j < bound) were left no velocity downwards.
  const std::vector<float> J = sim.J.to_vector<float>();
  EXPECT_GT(std::fabs(J[0] - 1.0f), 1e-4f);
  const std::vector<float> gm = sim.grid_m.to_vector<float>(), gv = sim.grid_v.to_vector<float>();
  int floor_nodes = 0;
  for (int i = 0; i < params.grid; ++i)
    for (int j = 0; j < params.bound; ++j) {
      const size_t node = static_cast<size_t>(i * params.grid + j);
      if (gm[node] <= 0.0f) continue;
      ++floor_nodes;
      EXPECT_GE(gv[2 * node + 1], 0.0f) << "node " << i << ", " << j;
    }
  EXPECT_GT(floor_nodes, 0);
}

TEST_P(Mpm, Mpm3dSparseFollowsAPlainModelOnTheBlocksItTouches) {
  mpm3d::Params params;
  params.particles = 192;  // small: the interpreter runs it too
  params.grid = 32;
  Program prog(config());
  mpm3d::Simulation sim(prog, params);
  // A cube low in the box, spinning about z and y and falling, so that F
  // rotates and strains (the stress needs its SVD) and the floor stops it.
  std::vector<float> start = mpm3d::initial_positions(params.particles), velocity(start.size());
  for (size_t q = 0; q < start.size(); q += 3) {
    start[q + 1] -= 0.2f;
    const float rx = start[q] - 0.45f, ry = start[q + 1] - 0.25f, rz = start[q + 2] - 0.45f;
    velocity[q] = -6.0f * ry + 3.0f * rz;
    velocity[q + 1] = 6.0f * rx - 2.0f;
    velocity[q + 2] = -3.0f * rx + 1.5f * rz;
  }
  sim.reset(start, velocity);
  mpm3d::Model model(params, start, velocity);
  constexpr int kSubsteps = 12;
  for (int s = 0; s < kSubsteps; ++s) {
    sim.substep();
    model.substep();
    // The sparse grid holds exactly the blocks the scatter touched.
    ASSERT_EQ(sim.active_blocks(prog), static_cast<int64_t>(model.blocks)) << "substep " << s;
  }
  EXPECT_GT(model.blocks, 8u);
  EXPECT_LT(model.blocks, 512u);  // of (32 / 4)^3
  expect_near_all(sim.x.to_vector<float>(), model.x, 1e-6, "x");
  expect_near_all(sim.v.to_vector<float>(), model.v, 2e-4, "v");
  expect_near_all(sim.C.to_vector<float>(), model.C, 2e-2, "C");
  expect_near_all(sim.F.to_vector<float>(), model.F, 2e-5, "F");
  // Something happened: F strained away from a rotation (det F != 1).
  const std::vector<float> F = sim.F.to_vector<float>();
  double worst = 0;
  for (size_t q = 0; q < F.size(); q += 9) {
    const double det = F[q] * (F[q + 4] * F[q + 8] - F[q + 5] * F[q + 7]) -
                       F[q + 1] * (F[q + 3] * F[q + 8] - F[q + 5] * F[q + 6]) +
                       F[q + 2] * (F[q + 3] * F[q + 7] - F[q + 4] * F[q + 6]);
    worst = std::max(worst, std::fabs(det - 1.0));
  }
  EXPECT_GT(worst, 1e-4);
}

}  // namespace
