// examples/vulkan_embed draws sparse_life's tree with its own graphics
// pipeline on its own Vulkan device, stepping the AOT module through
// grove_runtime in its own command buffers. Its frames must equal those of
// the same simulation run through grove::Program (the JIT path), with the
// colours of scene.h worked out here on the host from the fields' values.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <stb_image.h>

#include "examples/sparse_life/life.h"
#include "examples/vulkan_embed/scene.h"
#include "tests/api/backend_fixture.h"

namespace {

using namespace grove;
namespace scene = vulkan_embed;

constexpr int kN = 128;  // the world of the module the test made (grove aot sparse_life --size 128)

std::vector<uint8_t> expected_frame(const std::vector<int32_t>& alive, const std::vector<uint8_t>& map) {
  std::vector<uint8_t> px(static_cast<size_t>(scene::kWidth) * scene::kHeight * 4);
  const int zoom = scene::zoom_for(kN), blocks = kN / sparse_life::kBlock;
  auto put = [&](int x, int y, const std::array<uint8_t, 4>& c) {
    for (int k = 0; k < 4; ++k) px[(static_cast<size_t>(y) * scene::kWidth + x) * 4 + k] = c[static_cast<size_t>(k)];
  };
  for (int y = 0; y < scene::kHeight; ++y)
    for (int x = 0; x < scene::kPanel; ++x) {
      const int i = y / zoom, j = x / zoom;
      // A block is active when the snapshot marked it on the map.
      const int bi = i / sparse_life::kBlock, bj = j / sparse_life::kBlock;
      const bool active = i < kN && j < kN &&
                          map[static_cast<size_t>(bi * sparse_life::kMap / blocks) * sparse_life::kMap +
                              static_cast<size_t>(bj * sparse_life::kMap / blocks)] != 0;
      put(x, y, !active ? scene::kInactive : alive[static_cast<size_t>(i) * kN + j] != 0 ? scene::kLive : scene::kDead);
      put(scene::kPanel + x, y,
          map[static_cast<size_t>(y) * sparse_life::kMap + x] != 0 ? scene::kMapMark : scene::kMapEmpty);
    }
  return px;
}

TEST(EmbedFrames, EqualTheSameSimulationRunThroughProgram) {
  if (!grove::testing::vulkan_unavailable_reason().empty())
    GTEST_SKIP() << "no Vulkan: " << grove::testing::vulkan_unavailable_reason();
  const char* dir = std::getenv("GROVE_EMBED_FRAMES");
  ASSERT_TRUE(dir != nullptr) << "run through ctest (it sets GROVE_EMBED_FRAMES)";
  int frames = 0;  // frame_000.png, frame_001.png, ... as the example wrote them
  while (std::filesystem::exists(std::string(dir) + "/frame_" + std::string(frames < 10 ? "00" : frames < 100 ? "0" : "") +
                                 std::to_string(frames) + ".png"))
    ++frames;
  ASSERT_GT(frames, 0) << "no frames in " << dir;

  Config c;
  c.arch = Arch::Vulkan;
  c.vulkan_validation = true;
  Program prog(c);
  sparse_life::Life life(prog, kN);
  for (const scene::Patch& p : scene::kPatches) life.seed(life.world, p.x0, p.y0, p.salt);
  int live_pixels = 0, inactive_pixels = 0;
  for (int f = 0; f < frames; ++f) {
    life.step();
    life.snapshot(life.world, kN / 2, kN / 2);
    const std::vector<uint8_t> want =
        expected_frame(life.world.field("alive").to_vector<int32_t>(), life.world.field("map").to_vector<uint8_t>());
    char name[32];
    std::snprintf(name, sizeof name, "/frame_%03d.png", f);
    int w = 0, h = 0, channels = 0;
    stbi_uc* got = stbi_load((std::string(dir) + name).c_str(), &w, &h, &channels, 4);
    ASSERT_NE(got, nullptr) << dir << name << ": " << stbi_failure_reason();
    std::vector<uint8_t> pixels(got, got + static_cast<size_t>(w) * static_cast<size_t>(h) * 4);
    stbi_image_free(got);
    ASSERT_EQ(w, scene::kWidth);
    ASSERT_EQ(h, scene::kHeight);
    size_t wrong = 0, first = 0;
    for (size_t k = 0; k < want.size(); k += 4)
      if (std::equal(want.begin() + static_cast<long>(k), want.begin() + static_cast<long>(k) + 4,
                     pixels.begin() + static_cast<long>(k)) == false && wrong++ == 0)
        first = k / 4;
    EXPECT_EQ(wrong, 0u) << "frame " << f << ": first differing pixel at x=" << first % scene::kWidth
                         << " y=" << first / scene::kWidth;
    for (size_t k = 0; k < want.size(); k += 4) {
      live_pixels += want[k] == scene::kLive[0] && want[k + 1] == scene::kLive[1];
      inactive_pixels += want[k] == 0 && want[k + 1] == 0 && want[k + 2] == 0;
    }
  }
  // The frames show live cells and inactive blocks both (a test that can fail).
  EXPECT_GT(live_pixels, 0);
  EXPECT_GT(inactive_pixels, 0);
}

}  // namespace
