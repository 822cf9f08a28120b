// examples/mpm3d_sparse/mpm3d.h — a 3-D MLS-MPM elastic body (Taichi's
// mpm3d with a fixed-corotated material, Stomakhin et al. 2012) on a sparse
// grid: the grid's velocity and mass live in `pointer` blocks of 4^3 cells
// that the particles' scatter activates and every substep frees
// (deactivate_all), so only the blocks around the particles exist, and the
// grid update is a struct-for over them. The stress needs the rotation of
// each particle's deformation gradient F, from grove::svd (R = U V^T).
// Shared by the example (main.cpp), its test (tests/api/mpm_test.cpp) and
// bench/ (cpu_mpm3d_sparse), all checked against a plain C++ model (model.h).
#pragma once

#include <cstdint>
#include <vector>

#include <grove/grove.h>
#include <grove/matrix.h>

#include "../common/random.h"

namespace mpm3d {

struct Params {
  int particles = 32768;
  int grid = 64;       // cells per axis of the unit cube
  int block = 4;       // cells per block edge: pointer(ijk, grid / block).dense(ijk, block)
  float dt = 1e-4f;
  float gravity = 9.8f;
  float young = 3000.0f;  // E
  float poisson = 0.2f;   // nu
  int bound = 3;          // cells of the border that stop motion outwards
};

// Lamé's parameters of (E, nu).
inline float mu(const Params& p) { return p.young / (2.0f * (1.0f + p.poisson)); }
inline float lambda(const Params& p) {
  return p.young * p.poisson / ((1.0f + p.poisson) * (1.0f - 2.0f * p.poisson));
}

// The initial state: particles in the cube [0.3, 0.6]^3 from a fixed LCG.
// Positions interleaved (x0, y0, z0, x1, ...).
inline std::vector<float> initial_positions(int particles, std::uint32_t seed = 1) {
  return grove_examples::uniform_floats(3 * static_cast<size_t>(particles), 0.3f, 0.3f, seed);
}

class Simulation {
 public:
  Simulation(grove::Program& prog, const Params& p) : p_(p) {
    using namespace grove;
    const int n = p.particles, g = p.grid;
    x = prog.vector_field(3, f32, "x", {n});
    v = prog.vector_field(3, f32, "v", {n});
    C = prog.matrix_field(3, 3, f32, "C", {n});
    F = prog.matrix_field(3, 3, f32, "F", {n});
    A = prog.matrix_field(3, 3, f32, "A", {n});  // each particle's affine momentum term, from `stress`
    grid_v = prog.vector_field(3, f32, "grid_v");
    grid_m = prog.field(f32, "grid_m");
    blocks = &prog.root().pointer(ijk, g / p.block);
    blocks->dense(ijk, p.block).place(grid_v, grid_m);

    const float dx = 1.0f / static_cast<float>(g), inv_dx = static_cast<float>(g);
    const float p_vol = (dx * 0.5f) * (dx * 0.5f) * (dx * 0.5f), p_mass = p_vol;  // density 1
    const float dt = p.dt, mu_0 = mu(p), lambda_0 = lambda(p);

    // The quadratic B-spline weights of a particle's 3^3 nodes.
    struct Stencil {
      Expr base[3];
      Vec fx;
      Vec w[3];
    };
    auto stencil = [inv_dx](const Vec& xp) {
      Vec X = xp * inv_dx;
      Stencil s;
      for (int d = 0; d < 3; ++d) s.base[d] = cast(i32, X[d] - 0.5f);
      s.fx = X - Vec{cast(f32, s.base[0]), cast(f32, s.base[1]), cast(f32, s.base[2])};
      s.w[0] = 0.5f * (1.5f - s.fx) * (1.5f - s.fx);
      s.w[1] = 0.75f - (s.fx - 1.0f) * (s.fx - 1.0f);
      s.w[2] = 0.5f * (s.fx - 0.5f) * (s.fx - 0.5f);
      return s;
    };
    auto offset = [](int a, int b, int c) {
      return Vec{Expr(static_cast<float>(a)), Expr(static_cast<float>(b)), Expr(static_cast<float>(c))};
    };

    // The stress of every particle first, in a loop of its own: with no
    // scatter in it, the compiler computes several particles' SVDs at once
    // in vector lanes (the SVD is a long chain of dependent square roots
    // and divisions, which one particle at a time leaves waiting).
    stress = prog.kernel("stress", [=, this] {
      for_range(0, n, [&](Expr q) {
        // Fixed corotated: P F^T = 2 mu (F - R) F^T + lambda J (J - 1) I.
        const Mat Fq = F(q).mat();
        const Svd d = svd(Fq);
        const Mat R = d.U * transpose(d.V);
        const Expr J = determinant(Fq);
        const Mat PF = 2.0f * mu_0 * (Fq - R) * transpose(Fq) + Mat::identity(3, f32) * (lambda_0 * J * (J - 1.0f));
        A(q) = (-dt * p_vol * 4.0f * inv_dx * inv_dx) * PF + p_mass * C(q).mat();
      });
    });

    p2g = prog.kernel("p2g", [=, this] {
      for_range(0, n, [&](Expr q) {
        const Stencil s = stencil(x(q).vec());
        const Mat affine = A(q).mat();
        const Vec mv = p_mass * v(q).vec();
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b)
            for (int c = 0; c < 3; ++c) {
              const Vec dpos = (offset(a, b, c) - s.fx) * dx;
              const Expr weight = s.w[a][0] * s.w[b][1] * s.w[c][2];
              const Indices node{s.base[0] + a, s.base[1] + b, s.base[2] + c};
              grid_v(node) += weight * (mv + affine * dpos);
              grid_m(node) += weight * p_mass;
            }
      });
    });

    grid_update = prog.kernel("grid_update", [=, this] {
      for_each(grid_m, [&](Expr i, Expr j, Expr k) {
        const Expr m = grid_m(i, j, k).load();
        if_(m > 0.0f, [&] {
          const Vec mv = grid_v(i, j, k).vec();
          const Expr at[3] = {i, j, k};
          Var vel[3] = {Var(mv[0] / m), Var(mv[1] / m - dt * p.gravity), Var(mv[2] / m)};
          for (int d = 0; d < 3; ++d) {
            if_(at[d] < p.bound && vel[d] < 0.0f, [&] { vel[d] = 0.0f; });
            if_(at[d] > g - p.bound && vel[d] > 0.0f, [&] { vel[d] = 0.0f; });
          }
          grid_v(i, j, k) = Vec{Expr(vel[0]), Expr(vel[1]), Expr(vel[2])};
        });
      });
    });

    g2p = prog.kernel("g2p", [=, this] {
      for_range(0, n, [&](Expr q) {
        const Stencil s = stencil(x(q).vec());
        Vec new_v{Expr(0.0f), Expr(0.0f), Expr(0.0f)};
        Mat new_C = Mat::zeros(3, 3, f32);
        for (int a = 0; a < 3; ++a)
          for (int b = 0; b < 3; ++b)
            for (int c = 0; c < 3; ++c) {
              const Vec dpos = offset(a, b, c) - s.fx;
              const Vec gv = grid_v(s.base[0] + a, s.base[1] + b, s.base[2] + c).vec();
              const Expr weight = s.w[a][0] * s.w[b][1] * s.w[c][2];
              new_v = new_v + weight * gv;
              new_C = new_C + (4.0f * inv_dx * weight) * outer(gv, dpos);
            }
        v(q) = new_v;
        x(q) = x(q).vec() + dt * new_v;
        C(q) = new_C;
        F(q) = (Mat::identity(3, f32) + dt * new_C) * F(q).mat();
      });
    });
  }

  // Positions and velocities interleaved (x0, y0, z0, x1, ...); F = I, C = 0.
  void reset(const std::vector<float>& positions, const std::vector<float>& velocities) {
    x.from_vector(positions);
    v.from_vector(velocities);
    C.fill(0.0f);
    std::vector<float> identity(9 * static_cast<size_t>(p_.particles), 0.0f);
    for (size_t q = 0; q < static_cast<size_t>(p_.particles); ++q)
      identity[9 * q] = identity[9 * q + 4] = identity[9 * q + 8] = 1.0f;
    F.from_vector(identity);
  }

  // One substep: the grid's blocks freed, then scatter, update, gather.
  void substep() {
    blocks->deactivate_all();
    stress();
    p2g();
    grid_update();
    g2p();
  }

  // The grid's blocks that exist now (those the last scatter touched).
  int64_t active_blocks(grove::Program& prog) const { return prog.stats().at(blocks->name()).active_cells; }

  grove::Field x, v, C, F, A, grid_v, grid_m;
  grove::SNode* blocks = nullptr;
  grove::Kernel stress, p2g, grid_update, g2p;

 private:
  Params p_;
};

}  // namespace mpm3d
