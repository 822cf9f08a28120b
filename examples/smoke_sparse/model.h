// examples/smoke_sparse/model.h — smoke.h's step in plain C++ with no Grove:
// a dense array per field and a flag per block, a cell of an inactive block
// reading 0 and a freed block's values dropped, as Grove's sparse grid
// does. The reference tests/api/mpm_test.cpp checks every backend against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "smoke.h"

namespace smoke {

struct Model {
  Params p;
  int n, nb;
  std::vector<float> dens, vx, vy, pres, div;
  std::vector<char> active;  // per block

  explicit Model(const Params& params)
      : p(params), n(params.grid), nb(params.grid / params.block) {
    const size_t cells = static_cast<size_t>(n) * static_cast<size_t>(n);
    for (auto* f : {&dens, &vx, &vy, &pres, &div}) f->assign(cells, 0.0f);
    active.assign(static_cast<size_t>(nb) * static_cast<size_t>(nb), 0);
  }

  size_t cell(int i, int j) const { return static_cast<size_t>(i) * static_cast<size_t>(n) + static_cast<size_t>(j); }
  bool on(int i, int j) const { return active[static_cast<size_t>(i / p.block * nb + j / p.block)] != 0; }
  // A read clamped to the grid; 0 in an inactive block.
  float at(const std::vector<float>& f, int i, int j) const {
    i = std::clamp(i, 0, n - 1);
    j = std::clamp(j, 0, n - 1);
    return on(i, j) ? f[cell(i, j)] : 0.0f;
  }
  // Every active cell, in any order (each update reads only the step's inputs).
  template <typename F>
  void each(F&& f) {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (on(i, j)) f(i, j);
  }
  int64_t active_blocks() const { return std::count(active.begin(), active.end(), 1); }

  void step() {
    // Grow by one block around every active one.
    std::vector<char> grown = active;
    for (int bi = 0; bi < nb; ++bi)
      for (int bj = 0; bj < nb; ++bj) {
        if (!active[static_cast<size_t>(bi * nb + bj)]) continue;
        for (int di = -1; di <= 1; ++di)
          for (int dj = -1; dj <= 1; ++dj) {
            const int ni = bi + di, nj = bj + dj;
            if (ni >= 0 && ni < nb && nj >= 0 && nj < nb) grown[static_cast<size_t>(ni * nb + nj)] = 1;
          }
      }
    active = grown;
    // Emit (writing activates).
    const int r = static_cast<int>(p.source_radius * static_cast<float>(n));
    const int cx = static_cast<int>(p.source_x * static_cast<float>(n)), cy = static_cast<int>(p.source_y * static_cast<float>(n));
    for (int i = cx - r; i <= cx + r; ++i)
      for (int j = cy - r; j <= cy + r; ++j)
        if ((i - cx) * (i - cx) + (j - cy) * (j - cy) <= r * r) {
          active[static_cast<size_t>(i / p.block * nb + j / p.block)] = 1;
          dens[cell(i, j)] = 1.0f;
          vx[cell(i, j)] = 0.0f;
          vy[cell(i, j)] = p.source_speed;
        }
    // Advect.
    std::vector<float> d2 = dens, x2 = vx, y2 = vy;
    each([&](int i, int j) {
      const float x = static_cast<float>(i) - p.dt * vx[cell(i, j)], y = static_cast<float>(j) - p.dt * vy[cell(i, j)];
      const float x0 = std::floor(x), y0 = std::floor(y);
      const float fx = x - x0, fy = y - y0;
      const int i0 = static_cast<int>(x0), j0 = static_cast<int>(y0);
      auto lerp = [&](const std::vector<float>& f) {
        const float a = at(f, i0, j0) * (1.0f - fx) + at(f, i0 + 1, j0) * fx;
        const float c = at(f, i0, j0 + 1) * (1.0f - fx) + at(f, i0 + 1, j0 + 1) * fx;
        return a * (1.0f - fy) + c * fy;
      };
      const float d = p.fade * lerp(dens);
      d2[cell(i, j)] = d;
      x2[cell(i, j)] = lerp(vx);
      y2[cell(i, j)] = lerp(vy) + p.dt * p.buoyancy * d;
    });
    dens = d2;
    vx = x2;
    vy = y2;
    // Divergence, pressure, projection.
    each([&](int i, int j) {
      div[cell(i, j)] = 0.5f * ((at(vx, i + 1, j) - at(vx, i - 1, j)) + (at(vy, i, j + 1) - at(vy, i, j - 1)));
      pres[cell(i, j)] = 0.0f;
    });
    std::vector<float> other = pres;
    for (int k = 0; k < p.jacobi; ++k) {
      const std::vector<float>& from = k % 2 == 0 ? pres : other;
      std::vector<float>& to = k % 2 == 0 ? other : pres;
      each([&](int i, int j) {
        to[cell(i, j)] =
            (at(from, i - 1, j) + at(from, i + 1, j) + at(from, i, j - 1) + at(from, i, j + 1) - div[cell(i, j)]) * 0.25f;
      });
    }
    std::vector<float> nx = vx, ny = vy;
    each([&](int i, int j) {
      nx[cell(i, j)] = vx[cell(i, j)] - 0.5f * (at(pres, i + 1, j) - at(pres, i - 1, j));
      ny[cell(i, j)] = vy[cell(i, j)] - 0.5f * (at(pres, i, j + 1) - at(pres, i, j - 1));
    });
    vx = nx;
    vy = ny;
    // Free the blocks without smoke; their values go with them.
    for (int bi = 0; bi < nb; ++bi)
      for (int bj = 0; bj < nb; ++bj) {
        if (!active[static_cast<size_t>(bi * nb + bj)]) continue;
        bool any = false;
        for (int k = 0; k < p.block * p.block; ++k) {
          const size_t c = cell(bi * p.block + k / p.block, bj * p.block + k % p.block);
          any |= dens[c] > p.empty || vx[c] * vx[c] + vy[c] * vy[c] > p.still * p.still;
        }
        if (any) continue;
        active[static_cast<size_t>(bi * nb + bj)] = 0;
        for (int k = 0; k < p.block * p.block; ++k) {
          const size_t c = cell(bi * p.block + k / p.block, bj * p.block + k % p.block);
          for (auto* f : {&dens, &vx, &vy, &pres, &div}) (*f)[c] = 0.0f;
        }
      }
  }
};

}  // namespace smoke
