// examples/mpm88/mpm88.h — Taichi's mpm88 (the 88-line MLS-MPM of a falling
// block of elastic fluid, Hu et al. 2018), written in Grove's DSL: particles
// in dense vector and matrix fields, a 2-D grid of velocity and mass, and
// one substep as three kernels (particle to grid, grid update, grid to
// particle). Shared by the example (main.cpp) and its test
// (tests/api/mpm_test.cpp), which checks it against a plain C++ model.
#pragma once

#include <cstdint>
#include <vector>

#include <grove/grove.h>
#include <grove/matrix.h>

#include "../common/random.h"

namespace mpm88 {

struct Params {
  int particles = 8192;
  int grid = 128;
  float dt = 2e-4f;
  float gravity = 9.8f;
  float young = 400.0f;  // E
  int bound = 3;         // cells of the border that stop motion outwards
};

// The initial state: particles in [0.2, 0.6]^2 from a fixed LCG, falling
// at 1; J = 1, C = 0. Positions interleaved (x0, y0, x1, y1, ...).
inline std::vector<float> initial_positions(int particles, std::uint32_t seed = 1) {
  return grove_examples::uniform_floats(2 * static_cast<size_t>(particles), 0.2f, 0.4f, seed);
}

class Simulation {
 public:
  Simulation(grove::Program& prog, const Params& p) : p_(p) {
    using namespace grove;
    const int n = p.particles, g = p.grid;
    x = prog.vector_field(2, f32, "x", {n});
    v = prog.vector_field(2, f32, "v", {n});
    C = prog.matrix_field(2, 2, f32, "C", {n});
    J = prog.field(f32, "J", {n});
    grid_v = prog.vector_field(2, f32, "grid_v", {g, g});
    grid_m = prog.field(f32, "grid_m", {g, g});

    const float dx = 1.0f / static_cast<float>(g), inv_dx = static_cast<float>(g);
    const float p_vol = (dx * 0.5f) * (dx * 0.5f), p_mass = p_vol;  // density 1
    const float dt = p.dt;

    // The quadratic B-spline weights of a particle's 3 x 3 nodes.
    struct Stencil {
      Expr base_x, base_y;
      Vec fx;
      Vec w[3];
    };
    auto stencil = [inv_dx](const Vec& xp) {
      Vec X = xp * inv_dx;
      Stencil s;
      s.base_x = cast(i32, X[0] - 0.5f);
      s.base_y = cast(i32, X[1] - 0.5f);
      s.fx = X - Vec{cast(f32, s.base_x), cast(f32, s.base_y)};
      s.w[0] = 0.5f * (1.5f - s.fx) * (1.5f - s.fx);
      s.w[1] = 0.75f - (s.fx - 1.0f) * (s.fx - 1.0f);
      s.w[2] = 0.5f * (s.fx - 0.5f) * (s.fx - 0.5f);
      return s;
    };

    clear = prog.kernel("clear", [=, this] {
      for_range({g, g}, [&](Expr i, Expr j) {
        grid_v(i, j) = Vec{Expr(0.0f), Expr(0.0f)};
        grid_m(i, j) = 0.0f;
      });
    });

    p2g = prog.kernel("p2g", [=, this] {
      for_range(0, n, [&](Expr q) {
        const Stencil s = stencil(x(q).vec());
        const Expr stress = -dt * 4.0f * p.young * p_vol * (J(q).load() - 1.0f) * inv_dx * inv_dx;
        const Mat affine = Mat{{stress, Expr(0.0f)}, {Expr(0.0f), stress}} + p_mass * C(q).mat();
        const Vec vp = v(q).vec();
        for (int a = 0; a < 3; ++a) {
          for (int b = 0; b < 3; ++b) {
            const Vec dpos = (Vec{Expr(static_cast<float>(a)), Expr(static_cast<float>(b))} - s.fx) * dx;
            const Expr weight = s.w[a][0] * s.w[b][1];
            grid_v(s.base_x + a, s.base_y + b) += weight * (p_mass * vp + affine * dpos);
            grid_m(s.base_x + a, s.base_y + b) += weight * p_mass;
          }
        }
      });
    });

    grid_update = prog.kernel("grid_update", [=, this] {
      for_range({g, g}, [&](Expr i, Expr j) {
        const Expr m = grid_m(i, j).load();
        if_(m > 0.0f, [&] {
          Var vx = grid_v[0](i, j).load() / m;
          Var vy = grid_v[1](i, j).load() / m - dt * p.gravity;
          if_(i < p.bound && vx < 0.0f, [&] { vx = 0.0f; });
          if_(i > g - p.bound && vx > 0.0f, [&] { vx = 0.0f; });
          if_(j < p.bound && vy < 0.0f, [&] { vy = 0.0f; });
          if_(j > g - p.bound && vy > 0.0f, [&] { vy = 0.0f; });
          grid_v(i, j) = Vec{Expr(vx), Expr(vy)};
        });
      });
    });

    g2p = prog.kernel("g2p", [=, this] {
      for_range(0, n, [&](Expr q) {
        const Stencil s = stencil(x(q).vec());
        Vec new_v{Expr(0.0f), Expr(0.0f)};
        Mat new_C = Mat::zeros(2, 2, f32);
        for (int a = 0; a < 3; ++a) {
          for (int b = 0; b < 3; ++b) {
            const Vec dpos = Vec{Expr(static_cast<float>(a)), Expr(static_cast<float>(b))} - s.fx;
            const Vec gv = grid_v(s.base_x + a, s.base_y + b).vec();
            const Expr weight = s.w[a][0] * s.w[b][1];
            new_v = new_v + weight * gv;
            new_C = new_C + (4.0f * inv_dx * weight) * outer(gv, dpos);
          }
        }
        v(q) = new_v;
        x(q) = x(q).vec() + dt * new_v;
        J(q) = J(q).load() * (1.0f + dt * trace(new_C));
        C(q) = new_C;
      });
    });
  }

  // Positions and velocities interleaved (x0, y0, x1, y1, ...); without
  // velocities, every particle falls at 1.
  void reset(const std::vector<float>& positions, std::vector<float> velocities = {}) {
    const size_t n = static_cast<size_t>(p_.particles);
    x.from_vector(positions);
    if (velocities.empty()) {
      velocities.assign(2 * n, 0.0f);
      for (size_t q = 0; q < n; ++q) velocities[2 * q + 1] = -1.0f;
    }
    v.from_vector(velocities);
    C.fill(0.0f);
    J.fill(1.0f);
  }

  void substep() {
    clear();
    p2g();
    grid_update();
    g2p();
  }

  grove::Field x, v, C, J, grid_v, grid_m;
  grove::Kernel clear, p2g, grid_update, g2p;

 private:
  Params p_;
};

}  // namespace mpm88
