// examples/mpm88/model.h — the substep of mpm88.h in plain C++, one
// particle after another, with no Grove: the reference tests/api/mpm_test.cpp
// checks every backend against, and the baseline of bench/ row
// cpu_mpm88_1t. The same float operations in the same order as the
// kernels, except the order in which the grid's sums are made.
#pragma once

#include <cstddef>
#include <vector>

#include "mpm88.h"

namespace mpm88 {

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

}  // namespace mpm88
