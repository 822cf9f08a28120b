// examples/smoke_sparse on every backend, against a plain C++ model of the
// same step (examples/smoke_sparse/model.h, no Grove): the active blocks
// after every step, density and velocity after a few. The sparse grid must
// grow with the smoke, keep pressure 0 outside it, and free what it left.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "backend_fixture.h"
#include "smoke_sparse/model.h"
#include "smoke_sparse/smoke.h"

using namespace grove;

namespace {

class Smoke : public grove::testing::BackendTest {};

// The highest row with smoke in the model.
int top_row(const smoke::Model& m) {
  int top = -1;
  for (size_t c = 0; c < m.dens.size(); ++c)
    if (m.dens[c] > 0.01f) top = std::max(top, static_cast<int>(c % static_cast<size_t>(m.n)));
  return top;
}
GROVE_ALL_BACKENDS(Smoke);

TEST_P(Smoke, SmokeOnPointerBlocksFollowsAPlainModel) {
  smoke::Params params;
  params.grid = 64;  // small: the interpreter runs it too
  params.source_radius = 0.08f;
  params.jacobi = 10;
  Program prog(config());
  smoke::Simulation sim(prog, params);
  smoke::Model model(params);
  constexpr int kSteps = 12;
  for (int s = 0; s < kSteps; ++s) {
    sim.step();
    model.step();
    ASSERT_EQ(sim.active_blocks(prog), model.active_blocks()) << "step " << s;
  }
  // The smoke rose well above its source (row 9), the blocks around it
  // moving with it, and not all of the grid's blocks are active.
  EXPECT_GT(top_row(model), 9 + 8);
  EXPECT_GT(model.active_blocks(), 6);
  EXPECT_LT(model.active_blocks(), 64);
  const std::vector<float> dens = sim.dens.to_vector<float>(), vel = sim.vel.to_vector<float>();
  size_t bad = 0;
  for (size_t c = 0; c < dens.size(); ++c) {
    if (std::fabs(dens[c] - model.dens[c]) > 1e-4f && bad++ < 5)
      ADD_FAILURE() << "dens[" << c << "] = " << dens[c] << ", the model's " << model.dens[c];
    if (std::fabs(vel[2 * c] - model.vx[c]) > 1e-3f && bad++ < 5)
      ADD_FAILURE() << "vx[" << c << "] = " << vel[2 * c] << ", the model's " << model.vx[c];
    if (std::fabs(vel[2 * c + 1] - model.vy[c]) > 1e-3f && bad++ < 5)
      ADD_FAILURE() << "vy[" << c << "] = " << vel[2 * c + 1] << ", the model's " << model.vy[c];
  }
}

}  // namespace
