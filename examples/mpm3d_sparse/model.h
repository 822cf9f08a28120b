// examples/mpm3d_sparse/model.h — the substep of mpm3d.h in plain C++, one
// particle after another on a dense grid, with no Grove: the reference
// tests/api/mpm_test.cpp checks every backend against, and the baseline of
// bench/ row cpu_mpm3d_sparse. Its rotation of F is found by another
// method than Grove's SVD (Higham's iteration R <- (R + R^-T) / 2, in
// double), so the test checks the SVD too; the rest is the same float
// arithmetic, but for the order in which the grid's sums are made. It also
// counts the blocks the scatter touches, which the sparse grid must have.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <set>
#include <tuple>
#include <vector>

#include "mpm3d.h"

namespace mpm3d {

struct Model {
  Params p;
  std::vector<float> x, v, C, F, gv, gm;
  size_t blocks = 0;  // blocks the last substep's scatter touched
  bool count_blocks = true;  // off: blocks is not counted (bench/'s baseline)

  Model(const Params& params, const std::vector<float>& positions, const std::vector<float>& velocities)
      : p(params), x(positions), v(velocities) {
    const size_t n = static_cast<size_t>(p.particles);
    C.assign(9 * n, 0.0f);
    F.assign(9 * n, 0.0f);
    for (size_t q = 0; q < n; ++q) F[9 * q] = F[9 * q + 4] = F[9 * q + 8] = 1.0f;
  }

  // 3x3 row-major helpers.
  using M3 = std::array<double, 9>;
  static M3 mul(const M3& a, const M3& b) {
    M3 r{};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 3; ++k) r[3 * i + j] += a[3 * i + k] * b[3 * k + j];
    return r;
  }
  static double det(const M3& a) {
    return a[0] * (a[4] * a[8] - a[5] * a[7]) - a[1] * (a[3] * a[8] - a[5] * a[6]) + a[2] * (a[3] * a[7] - a[4] * a[6]);
  }
  // The rotation of the polar decomposition of a (det a > 0).
  static M3 rotation(const M3& a) {
    M3 r = a;
    for (int it = 0; it < 100; ++it) {
      // r^-T = cofactor(r) / det(r).
      const double d = det(r);
      M3 cof{r[4] * r[8] - r[5] * r[7], r[5] * r[6] - r[3] * r[8], r[3] * r[7] - r[4] * r[6],
             r[2] * r[7] - r[1] * r[8], r[0] * r[8] - r[2] * r[6], r[1] * r[6] - r[0] * r[7],
             r[1] * r[5] - r[2] * r[4], r[2] * r[3] - r[0] * r[5], r[0] * r[4] - r[1] * r[3]};
      double change = 0;
      for (int k = 0; k < 9; ++k) {
        const double next = 0.5 * (r[k] + cof[k] / d);
        change = std::max(change, std::abs(next - r[k]));
        r[k] = next;
      }
      if (change < 1e-15) break;
    }
    return r;
  }

  void substep() {
    const int g = p.grid;
    const float dx = 1.0f / static_cast<float>(g), inv_dx = static_cast<float>(g);
    const float p_vol = (dx * 0.5f) * (dx * 0.5f) * (dx * 0.5f), p_mass = p_vol, dt = p.dt;
    const float mu_0 = mu(p), lambda_0 = lambda(p);
    const size_t cells = static_cast<size_t>(g) * g * g;
    gv.assign(3 * cells, 0.0f);
    gm.assign(cells, 0.0f);
    auto cell = [g](int i, int j, int k) { return (static_cast<size_t>(i) * g + j) * g + k; };
    struct Stencil {
      int base[3];
      float fx[3], w[3][3];
    };
    auto stencil = [&](size_t q) {
      Stencil s;
      for (int d = 0; d < 3; ++d) {
        const float X = x[3 * q + d] * inv_dx;
        s.base[d] = static_cast<int>(X - 0.5f);
        s.fx[d] = X - static_cast<float>(s.base[d]);
        s.w[0][d] = 0.5f * (1.5f - s.fx[d]) * (1.5f - s.fx[d]);
        s.w[1][d] = 0.75f - (s.fx[d] - 1.0f) * (s.fx[d] - 1.0f);
        s.w[2][d] = 0.5f * (s.fx[d] - 0.5f) * (s.fx[d] - 0.5f);
      }
      return s;
    };
    std::set<std::tuple<int, int, int>> touched;
    const size_t n = static_cast<size_t>(p.particles);
    for (size_t q = 0; q < n; ++q) {
      const Stencil s = stencil(q);
      M3 f{};
      for (int k = 0; k < 9; ++k) f[k] = F[9 * q + k];
      const M3 r = rotation(f);
      const float J = static_cast<float>(det(f));
      // P F^T = 2 mu (F - R) F^T + lambda J (J - 1) I, then the affine matrix.
      float affine[9];
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
          double pf = 0;
          for (int k = 0; k < 3; ++k) pf += (f[3 * i + k] - r[3 * i + k]) * f[3 * j + k];
          float value = 2.0f * mu_0 * static_cast<float>(pf) + (i == j ? lambda_0 * J * (J - 1.0f) : 0.0f);
          affine[3 * i + j] = (-dt * p_vol * 4.0f * inv_dx * inv_dx) * value + p_mass * C[9 * q + 3 * i + j];
        }
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
          for (int c = 0; c < 3; ++c) {
            const int o[3] = {a, b, c};
            float dpos[3];
            for (int d = 0; d < 3; ++d) dpos[d] = (static_cast<float>(o[d]) - s.fx[d]) * dx;
            const float weight = s.w[a][0] * s.w[b][1] * s.w[c][2];
            const int ni = s.base[0] + a, nj = s.base[1] + b, nk = s.base[2] + c;
            const size_t at = cell(ni, nj, nk);
            for (int d = 0; d < 3; ++d) {
              const float ad = affine[3 * d] * dpos[0] + affine[3 * d + 1] * dpos[1] + affine[3 * d + 2] * dpos[2];
              gv[3 * at + d] += weight * (p_mass * v[3 * q + d] + ad);
            }
            gm[at] += weight * p_mass;
            if (count_blocks) touched.insert({ni / p.block, nj / p.block, nk / p.block});
          }
    }
    blocks = touched.size();
    for (int i = 0; i < g; ++i)
      for (int j = 0; j < g; ++j)
        for (int k = 0; k < g; ++k) {
          const size_t at = cell(i, j, k);
          const float m = gm[at];
          if (!(m > 0.0f)) continue;
          float vel[3] = {gv[3 * at] / m, gv[3 * at + 1] / m - dt * p.gravity, gv[3 * at + 2] / m};
          const int idx[3] = {i, j, k};
          for (int d = 0; d < 3; ++d) {
            if (idx[d] < p.bound && vel[d] < 0.0f) vel[d] = 0.0f;
            if (idx[d] > g - p.bound && vel[d] > 0.0f) vel[d] = 0.0f;
          }
          for (int d = 0; d < 3; ++d) gv[3 * at + d] = vel[d];
        }
    for (size_t q = 0; q < n; ++q) {
      const Stencil s = stencil(q);
      float nv[3] = {0, 0, 0}, nc[9] = {};
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
          for (int c = 0; c < 3; ++c) {
            const int o[3] = {a, b, c};
            const size_t at = cell(s.base[0] + a, s.base[1] + b, s.base[2] + c);
            const float weight = s.w[a][0] * s.w[b][1] * s.w[c][2];
            for (int d = 0; d < 3; ++d) nv[d] += weight * gv[3 * at + d];
            for (int r = 0; r < 3; ++r)
              for (int col = 0; col < 3; ++col)
                nc[3 * r + col] += 4.0f * inv_dx * weight * gv[3 * at + r] * (static_cast<float>(o[col]) - s.fx[col]);
          }
      for (int d = 0; d < 3; ++d) {
        v[3 * q + d] = nv[d];
        x[3 * q + d] += dt * nv[d];
      }
      float nf[9];
      for (int r = 0; r < 3; ++r)
        for (int col = 0; col < 3; ++col) {
          float sum = 0;
          for (int k = 0; k < 3; ++k) sum += ((r == k ? 1.0f : 0.0f) + dt * nc[3 * r + k]) * F[9 * q + 3 * k + col];
          nf[3 * r + col] = sum;
        }
      for (int k = 0; k < 9; ++k) {
        C[9 * q + k] = nc[k];
        F[9 * q + k] = nf[k];
      }
    }
  }
};

}  // namespace mpm3d
