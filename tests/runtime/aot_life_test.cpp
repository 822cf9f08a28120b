// grove_runtime alone (this binary links no compiler): the AOT modules of
// examples/sparse_life that `grove aot sparse_life --size 128` wrote, for
// Vulkan and for CUDA (GROVE_TEST_LIFE_MODULE names the first, made by a
// ctest fixture; the CUDA one lies next to it, "life128_cuda.grove"), are loaded, seeded
// through host writes, stepped, and checked against a plain C++ Game of
// Life on the same 128 x 128 domain (cells outside it are dead). Where there
// is no CUDA driver or GPU, the CUDA module's tests skip, saying so.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "grove/runtime.h"

namespace {

constexpr int kN = 128, kBlock = 8;  // the snapshot window (128 x 128) is the whole domain
using Cells = std::set<std::pair<int, int>>;

Cells life_step(const Cells& live) {
  std::vector<int> count(kN * kN, 0);
  for (auto [i, j] : live)
    for (int di = -1; di <= 1; ++di)
      for (int dj = -1; dj <= 1; ++dj) {
        const int ni = i + di, nj = j + dj;
        if ((di || dj) && ni >= 0 && ni < kN && nj >= 0 && nj < kN) ++count[ni * kN + nj];
      }
  Cells next;
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j) {
      const int c = count[i * kN + j];
      if (c == 3 || (c == 2 && live.count({i, j}))) next.insert({i, j});
    }
  return next;
}

int64_t blocks_of(const Cells& live) {
  std::set<std::pair<int, int>> blocks;
  for (auto [i, j] : live) blocks.insert({i / kBlock, j / kBlock});
  return static_cast<int64_t>(blocks.size());
}

// One step of the module's kernels on `world`.
void step_life(grove::runtime::Module& m, const grove::runtime::Tree& world) {
  m.launch("count", {world});
  m.launch("update", {world});
  m.launch("prune", {world});
}

// The live cells of `world`, read back in one copy.
Cells live_cells(const grove::runtime::Tree& world) {
  const std::vector<int32_t> alive = world.to_vector<int32_t>("alive");
  Cells got;
  for (int k = 0; k < kN * kN; ++k)
    if (alive[static_cast<size_t>(k)] != 0) got.insert({k / kN, k % kN});
  return got;
}

// Parameterised over the module's backend.
class AotLife : public ::testing::TestWithParam<std::string> {
 protected:
  std::string module_path() const {
    const char* p = std::getenv("GROVE_TEST_LIFE_MODULE");
    std::string path = p ? p : "";
    const std::string suffix = ".grove";
    if (GetParam() == "cuda" && path.size() > suffix.size())
      path = path.substr(0, path.size() - suffix.size()) + "_cuda" + suffix;
    return path;
  }
  // The module, or why it cannot be loaded here (`skip`): its file was not
  // made by this build, or a CUDA module has no CUDA driver or GPU.
  std::optional<grove::runtime::Module> load(std::string& skip, const grove::runtime::Options& options = {}) const {
    if (module_path().empty()) {
      skip = "GROVE_TEST_LIFE_MODULE is not set (ctest sets it)";
      return std::nullopt;
    }
    if (GetParam() == "cuda" && !std::ifstream(module_path())) {
      skip = module_path() + " was not made: this Grove was built without the CUDA backend";
      return std::nullopt;
    }
    try {
      return grove::runtime::Module::load(module_path(), options);
    } catch (const grove::Error& e) {
      const std::string what = e.what();
      if (GetParam() != "cuda" ||
          (what.find("no CUDA driver was found") == std::string::npos && what.find("found no CUDA device") == std::string::npos))
        throw;
      skip = "no CUDA: " + what;
      return std::nullopt;
    }
  }
};

#define LOAD_OR_SKIP(m)                           \
  std::string skip_reason;                        \
  std::optional<grove::runtime::Module> m = load(skip_reason); \
  if (!m) GTEST_SKIP() << skip_reason

TEST_P(AotLife, TheLoadedModuleStepsLikeThePlainModel) {
  LOAD_OR_SKIP(loaded);
  grove::runtime::Module& m = *loaded;
  EXPECT_EQ(m.kernels(), (std::vector<std::string>{"seed", "count", "update", "prune", "snapshot"}));
  grove::runtime::Tree world = m.instantiate("life", "world");
  // A glider, a blinker across a block edge, and a block at the domain's corner.
  Cells live = {{1, 2}, {2, 3}, {3, 1}, {3, 2}, {3, 3}, {20, 23}, {20, 24}, {20, 25}, {126, 126}, {126, 127}, {127, 126}, {127, 127}};
  for (auto [i, j] : live) world.write("alive", {i, j}, 1);
  auto active_blocks = [&] {
    for (const grove::runtime::SNodeStats& s : world.stats())
      if (s.kind == "pointer") return s.active_cells;
    return int64_t{-1};
  };
  EXPECT_EQ(active_blocks(), blocks_of(live));
  for (int step = 1; step <= 24; ++step) {
    step_life(m, world);
    live = life_step(live);
    ASSERT_EQ(live_cells(world), live) << "step " << step;
    ASSERT_EQ(active_blocks(), blocks_of(live)) << "step " << step;
  }
  // The snapshot kernel's window around the centre: here the whole domain.
  m.launch("snapshot", {world, kN / 2, kN / 2});
  const std::vector<uint8_t> view = world.to_vector<uint8_t>("view");
  for (int i = 0; i < 128; ++i)
    for (int j = 0; j < 128; ++j) {
      const int ci = kN / 2 - 64 + i, cj = kN / 2 - 64 + j;
      ASSERT_EQ(view[static_cast<size_t>(i * 128 + j)], live.count({ci, cj}) ? 1 : 0) << i << "," << j;
    }
  // deactivate_all frees every block.
  world.deactivate_all();
  EXPECT_EQ(active_blocks(), 0);
  EXPECT_EQ(world.read<int32_t>("alive", {126, 126}), 0);
}

// Whole-field copies in: a sparse field's cells activated by the module's
// filler (every block, then emptied by prune), a dense field filled; both
// followed by the same steps as the plain model; counts and values that do
// not fit refused with the field named.
TEST_P(AotLife, AWholeFieldCopyInSeedsTheGridAndItStepsLikeThePlainModel) {
  LOAD_OR_SKIP(loaded);
  grove::runtime::Module& m = *loaded;
  grove::runtime::Tree world = m.instantiate("life", "copied");
  Cells live = {{1, 2}, {2, 3}, {3, 1}, {3, 2}, {3, 3}, {40, 63}, {40, 64}, {40, 65}, {100, 7}, {100, 8}, {101, 7}, {101, 8}};
  std::vector<int32_t> grid(kN * kN, 0);
  for (auto [i, j] : live) grid[static_cast<size_t>(i * kN + j)] = 1;
  world.from_vector("alive", grid);
  EXPECT_EQ(world.to_vector<int32_t>("alive"), grid);
  std::vector<int32_t> held(kN * kN, -1);
  world.to_span("alive", std::span<int32_t>(held));
  EXPECT_EQ(held, grid);
  for (int step = 1; step <= 6; ++step) {
    step_life(m, world);
    live = life_step(live);
    ASSERT_EQ(live_cells(world), live) << "step " << step;
  }
  // A second copy in, into blocks prune freed and blocks still active.
  world.from_span("alive", std::span<const int32_t>(grid));
  EXPECT_EQ(world.to_vector<int32_t>("alive"), grid);

  // A fill of a sparse field in its own type, on a fresh instance: every block activated.
  grove::runtime::Tree other = m.instantiate("life", "filled");
  other.fill("neighbours", int32_t{5});
  EXPECT_EQ(other.to_vector<int32_t>("neighbours"), std::vector<int32_t>(kN * kN, 5));

  world.fill("view", uint8_t{7});
  const std::vector<uint8_t> view = world.to_vector<uint8_t>("view");
  EXPECT_EQ(view, std::vector<uint8_t>(view.size(), 7));
  auto error_of = [](const auto& f) {
    try {
      f();
    } catch (const grove::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of([&] { world.fill("view", 300); }).find("Tree::fill of field 'view' (u8) was given"),
            std::string::npos);
  EXPECT_NE(error_of([&] { world.from_vector("alive", std::vector<int32_t>(10)); })
                .find("Tree::from_vector of field 'alive': got 10 values, the field holds 16384"),
            std::string::npos);
  std::vector<int32_t> small(10);
  EXPECT_NE(error_of([&] { world.to_span("alive", std::span<int32_t>(small)); })
                .find("Tree::to_span of field 'alive': the span holds 10 values, the field 16384"),
            std::string::npos);
  EXPECT_EQ(world.read<uint8_t>("view", {5, 5}), 7);  // nothing stored by the refused fill
}

TEST_P(AotLife, TheSeedKernelRunsWithItsArguments) {
  LOAD_OR_SKIP(loaded);
  grove::runtime::Module& m = *loaded;
  grove::runtime::Tree a = m.instantiate("life"), b = m.instantiate("life");
  m.launch("seed", {a, 10, 12, 7u});
  // The seed's patch (40 x 40 from (10, 12)) holds about a third of its cells, and nothing lies outside it.
  const std::vector<int32_t> alive = a.to_vector<int32_t>("alive");
  int inside = 0;
  for (int k = 0; k < kN * kN; ++k) {
    const int i = k / kN, j = k % kN;
    const bool in = i >= 10 && i < 50 && j >= 12 && j < 52;
    if (!in) {
      ASSERT_EQ(alive[static_cast<size_t>(k)], 0) << i << "," << j;
    }
    inside += alive[static_cast<size_t>(k)];
  }
  EXPECT_GT(inside, 40 * 40 / 4);
  EXPECT_LT(inside, 40 * 40 / 2);
  EXPECT_EQ(b.to_vector<int32_t>("alive"), std::vector<int32_t>(kN * kN, 0));  // another instance
  std::vector<int32_t> kept(3, 9);  // a buffer the caller keeps: resized, every element written
  a.to_vector("alive", kept);
  EXPECT_EQ(kept, alive);
}

TEST_P(AotLife, AProfiledModuleReportsItsKernelsTasks) {
  std::string skip_reason;
  grove::runtime::Options options;
  options.profile = true;
  std::optional<grove::runtime::Module> loaded = load(skip_reason, options);
  if (!loaded) GTEST_SKIP() << skip_reason;
  grove::runtime::Module& m = *loaded;
  grove::runtime::Tree world = m.instantiate("life", "world");
  m.launch("seed", {world, 10, 12, 7u});
  for (int step = 0; step < 3; ++step) {
    m.launch("count", {world});
    m.launch("update", {world});
  }
  const std::string report = m.profile_report();
  EXPECT_NE(report.find("Grove profile"), std::string::npos) << report;
  EXPECT_NE(report.find(m.device_name()), std::string::npos) << report;
  // count's struct-for over the active cells ran in each of the 3 launches.
  const size_t count = report.find("\n  count ");
  ASSERT_NE(count, std::string::npos) << report;
  const size_t loop = report.find("struct_for", count);
  ASSERT_NE(loop, std::string::npos) << report;
  std::istringstream line(report.substr(loop, report.find('\n', loop) - loop));
  std::string kind, node;
  int64_t launches = 0;
  line >> kind >> node >> launches;
  EXPECT_EQ(launches, 3) << report;

  std::optional<grove::runtime::Module> plain = load(skip_reason);
  ASSERT_TRUE(plain);
  try {
    plain->profile_report();
    ADD_FAILURE() << "an unprofiled module gave a report";
  } catch (const grove::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Options::profile"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Modules, AotLife, ::testing::Values("vulkan", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
