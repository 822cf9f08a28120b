// examples/smoke_sparse/smoke.h — 2-D smoke on a sparse grid: density and
// velocity live in `pointer` blocks of 8 x 8 cells that exist only where
// there is smoke and next to it. A step grows the active region by one
// block, emits smoke from a source, advects density and velocity
// (semi-Lagrangian, bilinear) with buoyancy lifting the dense smoke, and projects the velocity onto a divergence-
// free field by Jacobi iterations of the pressure Poisson equation over the
// active cells (an inactive cell reads 0: pressure 0 outside the smoke),
// then frees the blocks the smoke has left (no density, no motion). Every step is struct-fors over
// the active cells and blocks. Shared by the example (main.cpp), its test
// (tests/api/mpm_test.cpp) and its model (model.h).
#pragma once

#include <cstdint>

#include <grove/grove.h>

namespace smoke {

struct Params {
  int grid = 256;        // cells per side
  int block = 8;         // cells per block side
  float dt = 0.5f;       // time step, in cells per unit of velocity
  float source_x = 0.5f, source_y = 0.15f;  // the source's centre, as a fraction of the grid
  float source_radius = 0.04f;              // as a fraction of the grid
  float source_speed = 2.0f;                // upwards, cells per time unit
  float fade = 0.995f;                      // density kept per step
  float buoyancy = 0.5f;                    // upward acceleration per unit of density
  int jacobi = 20;                          // pressure iterations per step (even)
  float empty = 1e-3f;  // a block whose density is all below this
  float still = 0.05f;  // and whose speed is all below this is freed
};

class Simulation {
 public:
  Simulation(grove::Program& prog, const Params& p) : p_(p) {
    using namespace grove;
    const int n = p.grid, nb = p.grid / p.block, b = p.block;
    dens = prog.field(f32, "dens");
    dens2 = prog.field(f32, "dens2");
    vel = prog.vector_field(2, f32, "vel");
    vel2 = prog.vector_field(2, f32, "vel2");
    pres = prog.field(f32, "pres");
    pres2 = prog.field(f32, "pres2");
    div = prog.field(f32, "div");
    blocks = &prog.root().pointer(ij, nb);
    blocks->dense(ij, b).place({dens, dens2, vel, vel2, pres, pres2, div});

    // A read at (i, j) clamped to the grid; inactive cells read 0.
    auto clamp = [n](const Expr& v) { return max(min(v, Expr(n - 1)), Expr(0)); };
    auto at = [clamp](const Field& f, const Expr& i, const Expr& j) { return Expr(f(clamp(i), clamp(j))); };

    grow = prog.kernel("grow", [=, this] {
      for_each(*blocks, [&](Expr bi, Expr bj) {
        for (int di = -1; di <= 1; ++di)
          for (int dj = -1; dj <= 1; ++dj) {
            if (di == 0 && dj == 0) continue;
            const Expr ni = bi + di, nj = bj + dj;
            if_(ni >= 0 && ni < nb && nj >= 0 && nj < nb, [&] { activate(*blocks, {ni, nj}); });
          }
      });
    });

    const int r = static_cast<int>(p.source_radius * static_cast<float>(n));
    const int cx = static_cast<int>(p.source_x * static_cast<float>(n)), cy = static_cast<int>(p.source_y * static_cast<float>(n));
    emit = prog.kernel("emit", [=, this] {
      for_range({{cx - r, cx + r + 1}, {cy - r, cy + r + 1}}, [&](Expr i, Expr j) {
        if_((i - cx) * (i - cx) + (j - cy) * (j - cy) <= r * r, [&] {
          dens(i, j) = 1.0f;
          vel(i, j) = Vec{Expr(0.0f), Expr(p.source_speed)};
        });
      });
    });

    advect = prog.kernel("advect", [=, this] {
      for_each(dens, [&](Expr i, Expr j) {
        const Expr x = cast(f32, i) - p.dt * vel[0](i, j).load(), y = cast(f32, j) - p.dt * vel[1](i, j).load();
        const Expr x0 = floor(x), y0 = floor(y);
        const Expr fx = x - x0, fy = y - y0;
        const Expr i0 = cast(i32, x0), j0 = cast(i32, y0);
        auto lerp = [&](const Field& f) {
          const Expr a = at(f, i0, j0) * (1.0f - fx) + at(f, i0 + 1, j0) * fx;
          const Expr c = at(f, i0, j0 + 1) * (1.0f - fx) + at(f, i0 + 1, j0 + 1) * fx;
          return a * (1.0f - fy) + c * fy;
        };
        const Expr d = p.fade * lerp(dens);
        dens2(i, j) = d;
        vel2(i, j) = Vec{lerp(vel[0]), lerp(vel[1]) + p.dt * p.buoyancy * d};
      });
    });

    settle = prog.kernel("settle", [=, this] {
      for_each(dens, [&](Expr i, Expr j) {
        dens(i, j) = dens2(i, j).load();
        vel(i, j) = vel2(i, j).vec();
      });
    });

    divergence = prog.kernel("divergence", [=, this] {
      for_each(dens, [&](Expr i, Expr j) {
        div(i, j) = 0.5f * ((at(vel[0], i + 1, j) - at(vel[0], i - 1, j)) + (at(vel[1], i, j + 1) - at(vel[1], i, j - 1)));
        pres(i, j) = 0.0f;
      });
    });

    auto jacobi_step = [=, this](const Field& from, const Field& to) {
      return [=, this] {
        for_each(dens, [&](Expr i, Expr j) {
          to(i, j) = (at(from, i - 1, j) + at(from, i + 1, j) + at(from, i, j - 1) + at(from, i, j + 1) - div(i, j).load()) *
                     0.25f;
        });
      };
    };
    jacobi_a = prog.kernel("jacobi_a", jacobi_step(pres, pres2));
    jacobi_b = prog.kernel("jacobi_b", jacobi_step(pres2, pres));

    project = prog.kernel("project", [=, this] {
      for_each(dens, [&](Expr i, Expr j) {
        const Vec grad{0.5f * (at(pres, i + 1, j) - at(pres, i - 1, j)), 0.5f * (at(pres, i, j + 1) - at(pres, i, j - 1))};
        vel(i, j) = vel(i, j).vec() - grad;
      });
    });

    prune = prog.kernel("prune", [=, this] {
      for_each(*blocks, [&](Expr bi, Expr bj) {
        Var any = 0;
        for_range(0, b * b, [&](Expr k) {
          const Expr ci = bi * b + k / b, cj = bj * b + k % b;
          const Vec v = vel(ci, cj).vec();
          any = any | cast(i32, dens(ci, cj) > p.empty || dot(v, v) > p.still * p.still);
        });
        if_(any == 0, [&] { deactivate(*blocks, {bi, bj}); });
      });
    });
  }

  void step() {
    grow();
    emit();
    advect();
    settle();
    divergence();
    for (int k = 0; k < p_.jacobi; k += 2) {
      jacobi_a();
      jacobi_b();
    }
    project();
    prune();
  }

  int64_t active_blocks(grove::Program& prog) const { return prog.stats().at(blocks->name()).active_cells; }

  grove::Field dens, dens2, vel, vel2, pres, pres2, div;
  grove::SNode* blocks = nullptr;
  grove::Kernel grow, emit, advect, settle, divergence, jacobi_a, jacobi_b, project, prune;

 private:
  Params p_;
};

}  // namespace smoke
