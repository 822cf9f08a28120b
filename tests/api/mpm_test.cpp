// examples/mpm88 (Taichi's mpm88, MLS-MPM) on every backend, against a
// plain C++ model of the same substep written here: positions, velocities
// and J after a few substeps, and the mass the particles give the grid
// (the B-spline weights of a particle sum to 1).
#include <cmath>
#include <cstddef>
#include <vector>

#include "backend_fixture.h"
#include "mpm88/mpm88.h"

using namespace grove;

namespace {

class Mpm : public grove::testing::BackendTest {};
GROVE_ALL_BACKENDS(Mpm);

// The substep of mpm88.h in plain C++, one particle after another.
struct Model {
  mpm88::Params p;
  std::vector<float> x, v, C, J, gv, gm;

  Model(const mpm88::Params& params, const std::vector<float>& positions, const std::vector<float>& velocities)
      : p(params), x(positions), v(velocities) {
    const size_t n = static_cast<size_t>(p.particles);
    C.assign(4 * n, 0.0f);
    J.assign(n, 1.0f);
  }

  void substep() {
    const int g = p.grid;
    const float dx = 1.0f / static_cast<float>(g), inv_dx = static_cast<float>(g);
    const float p_vol = (dx * 0.5f) * (dx * 0.5f), p_mass = p_vol, dt = p.dt;
    gv.assign(2 * static_cast<size_t>(g * g), 0.0f);
    gm.assign(static_cast<size_t>(g * g), 0.0f);
    struct Stencil {
      int base[2];
      float fx[2], w[3][2];
    };
    auto stencil = [&](size_t q) {
      Stencil s;
      for (int d = 0; d < 2; ++d) {
        const float X = x[2 * q + d] * inv_dx;
        s.base[d] = static_cast<int>(X - 0.5f);
        s.fx[d] = X - static_cast<float>(s.base[d]);
        s.w[0][d] = 0.5f * (1.5f - s.fx[d]) * (1.5f - s.fx[d]);
        s.w[1][d] = 0.75f - (s.fx[d] - 1.0f) * (s.fx[d] - 1.0f);
        s.w[2][d] = 0.5f * (s.fx[d] - 0.5f) * (s.fx[d] - 0.5f);
      }
      return s;
    };
    const size_t n = static_cast<size_t>(p.particles);
    for (size_t q = 0; q < n; ++q) {
      const Stencil s = stencil(q);
      const float stress = -dt * 4.0f * p.young * p_vol * (J[q] - 1.0f) * inv_dx * inv_dx;
      const float A[2][2] = {{stress + p_mass * C[4 * q], p_mass * C[4 * q + 1]},
                             {p_mass * C[4 * q + 2], stress + p_mass * C[4 * q + 3]}};
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
          const float dpos[2] = {(static_cast<float>(a) - s.fx[0]) * dx, (static_cast<float>(b) - s.fx[1]) * dx};
          const float weight = s.w[a][0] * s.w[b][1];
          const size_t node = static_cast<size_t>((s.base[0] + a) * g + s.base[1] + b);
          for (int d = 0; d < 2; ++d)
            gv[2 * node + static_cast<size_t>(d)] +=
                weight * (p_mass * v[2 * q + static_cast<size_t>(d)] + (A[d][0] * dpos[0] + A[d][1] * dpos[1]));
          gm[node] += weight * p_mass;
        }
    }
    for (int i = 0; i < g; ++i)
      for (int j = 0; j < g; ++j) {
        const size_t node = static_cast<size_t>(i * g + j);
        const float m = gm[node];
        if (!(m > 0.0f)) continue;
        float vx = gv[2 * node] / m, vy = gv[2 * node + 1] / m - dt * p.gravity;
        if (i < p.bound && vx < 0.0f) vx = 0.0f;
        if (i > g - p.bound && vx > 0.0f) vx = 0.0f;
        if (j < p.bound && vy < 0.0f) vy = 0.0f;
        if (j > g - p.bound && vy > 0.0f) vy = 0.0f;
        gv[2 * node] = vx;
        gv[2 * node + 1] = vy;
      }
    for (size_t q = 0; q < n; ++q) {
      const Stencil s = stencil(q);
      float nv[2] = {0, 0}, nc[4] = {0, 0, 0, 0};
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
          const float dpos[2] = {static_cast<float>(a) - s.fx[0], static_cast<float>(b) - s.fx[1]};
          const size_t node = static_cast<size_t>((s.base[0] + a) * g + s.base[1] + b);
          const float weight = s.w[a][0] * s.w[b][1];
          for (int d = 0; d < 2; ++d) nv[d] += weight * gv[2 * node + static_cast<size_t>(d)];
          for (int r = 0; r < 2; ++r)
            for (int c = 0; c < 2; ++c)
              nc[2 * r + c] += 4.0f * inv_dx * weight * gv[2 * node + static_cast<size_t>(r)] * dpos[c];
        }
      for (int d = 0; d < 2; ++d) {
        v[2 * q + static_cast<size_t>(d)] = nv[d];
        x[2 * q + static_cast<size_t>(d)] += dt * nv[d];
      }
      J[q] *= 1.0f + dt * (nc[0] + nc[3]);
      for (int k = 0; k < 4; ++k) C[4 * q + static_cast<size_t>(k)] = nc[k];
    }
  }
};

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
  Model model(params, start, velocity);
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

}  // namespace
