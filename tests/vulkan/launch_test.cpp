// tests/vulkan/launch_test.cpp — pipelines from SPIR-V (the embedded
// fill_u32 shader and test shaders compiled by glslang), ordered dispatches
// in one launch, many launches in flight, and launch errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shaders/embedded.h"
#include "tests/vulkan/vulkan_fixture.h"

namespace grove::vk::testing {
namespace {

const std::uint32_t kAddU32[] = {
#include "add_u32.inc"
};
const std::uint32_t kCopyAddU32[] = {
#include "copy_add_u32.inc"
};

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

class VulkanLaunch : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (!device_) return;
    fill_ = device().create_pipeline(shaders::fill_u32, "main", 1, 12, "fill_u32");
    add_ = device().create_pipeline(kAddU32, "main", 1, 8, "add_u32");
    copy_add_ = device().create_pipeline(kCopyAddU32, "main", 2, 8, "copy_add_u32");
  }

  Dispatch fill(BufferId b, std::uint32_t first, std::uint32_t count, std::uint32_t value,
                std::uint32_t groups = 4) {
    return Dispatch{fill_, {b}, {first, count, value}, groups};
  }
  Dispatch add(BufferId b, std::uint32_t count, std::uint32_t addend, std::uint32_t groups = 3) {
    return Dispatch{add_, {b}, {count, addend}, groups};
  }
  Dispatch copy_add(BufferId src, BufferId dst, std::uint32_t count, std::uint32_t addend,
                    std::uint32_t groups = 5) {
    return Dispatch{copy_add_, {src, dst}, {count, addend}, groups};
  }

  PipelineId fill_, add_, copy_add_;
};

TEST(VulkanShaders, FillShaderIsEmbedded) {
  ASSERT_GT(shaders::fill_u32.size(), 5u);
  EXPECT_EQ(shaders::fill_u32[0], 0x07230203u);  // SPIR-V magic
  EXPECT_EQ(shaders::find("fill_u32").data(), shaders::fill_u32.data());
  EXPECT_TRUE(shaders::find("no_such_shader").empty());
  bool listed = false;
  for (const shaders::EmbeddedShader& s : shaders::all()) listed |= s.name == "fill_u32";
  EXPECT_TRUE(listed);
}

TEST_F(VulkanLaunch, EmbeddedFillShaderFillsARange) {
  const BufferId b = device().create_buffer(4 * 5000, "target");
  // 4 groups of 64 invocations: the grid-stride loop covers 3000 words.
  device().launch({fill(b, 1000, 3000, 0xabcd1234u)});
  const std::vector<std::uint32_t> words = read_words(b);
  for (std::size_t i = 0; i < words.size(); ++i) {
    ASSERT_EQ(words[i], (i >= 1000 && i < 4000) ? 0xabcd1234u : 0u) << "word " << i;
  }
}

// Each dispatch reads what the one before it wrote: without the barriers
// the sums would be wrong (and synchronization validation would complain).
TEST_F(VulkanLaunch, DispatchesInOneLaunchRunInOrder) {
  const std::uint32_t n = 3000;
  const BufferId a = device().create_buffer(4 * n, "a");
  const BufferId b = device().create_buffer(4 * n, "b");
  device().launch({
      fill(a, 0, n, 7),       // a = 7
      add(a, n, 1),           // a = 8
      add(a, n, 2),           // a = 10
      copy_add(a, b, n, 10),  // b = 20
      add(b, n, 5),           // b = 25
      copy_add(b, a, n, 100), // a = 125
      fill(b, 0, n / 2, 1),   // b = 1 in the first half
  });
  const std::vector<std::uint32_t> wa = read_words(a);
  const std::vector<std::uint32_t> wb = read_words(b);
  for (std::uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(wa[i], 125u) << "a[" << i << "]";
    ASSERT_EQ(wb[i], i < n / 2 ? 1u : 25u) << "b[" << i << "]";
  }
}

// Far more launches than submissions kept in flight, queued before one read.
TEST_F(VulkanLaunch, ManyLaunchesBeforeOneSync) {
  const std::uint32_t n = 1000;
  const BufferId a = device().create_buffer(4 * n, "counter");
  for (int i = 0; i < 100; ++i) device().launch({add(a, n, 1), add(a, n, 2)});
  device().sync();
  for (std::uint32_t w : read_words(a)) ASSERT_EQ(w, 300u);
}

TEST_F(VulkanLaunch, TransfersAreOrderedWithLaunches) {
  const std::uint32_t n = 512;
  const BufferId a = device().create_buffer(4 * n, "a");
  device().launch({add(a, n, 1)});
  std::vector<std::uint32_t> hundred(n, 100);
  device().write_buffer(a, 0, hundred.data(), 4 * n);  // after the add
  device().launch({add(a, n, 1)});                      // after the write
  device().fill_buffer(a, 0, 4 * 16, 9);                // after the second add
  device().launch({add(a, n, 1)});
  const std::vector<std::uint32_t> words = read_words(a);
  for (std::uint32_t i = 0; i < n; ++i) ASSERT_EQ(words[i], i < 16 ? 10u : 102u) << i;
}

TEST_F(VulkanLaunch, DestroyingWhatQueuedWorkUsesIsDeferred) {
  const std::uint32_t n = 1 << 16;
  const BufferId a = device().create_buffer(4 * n, "short_lived");
  const BufferId keep = device().create_buffer(4 * n, "kept");
  const PipelineId extra = device().create_pipeline(kAddU32, "main", 1, 8, "add_u32_extra");
  device().launch({Dispatch{extra, {a}, {n, 1}, 16}, copy_add(a, keep, n, 1)});
  device().destroy_buffer(a);
  device().destroy_pipeline(extra);
  EXPECT_NE(error_of([&] { device().launch({Dispatch{extra, {keep}, {n, 1}, 1}}); }).find("destroyed"),
            std::string::npos);
  for (std::uint32_t w : read_words(keep)) ASSERT_EQ(w, 2u);
}

TEST_F(VulkanLaunch, ZeroGroupsRunsNothing) {
  const BufferId a = device().create_buffer(64);
  device().launch({add(a, 16, 1, 0), add(a, 16, 1, 1)});
  for (std::uint32_t w : read_words(a)) ASSERT_EQ(w, 1u);
}

TEST_F(VulkanLaunch, MismatchedDispatchesAreRejectedBeforeAnythingRuns) {
  const BufferId a = device().create_buffer(64, "a");
  const std::string wrong_buffers = error_of([&] { device().launch({Dispatch{copy_add_, {a}, {1, 1}, 1}}); });
  EXPECT_NE(wrong_buffers.find("dispatch 0 of pipeline 'copy_add_u32' binds 1 buffers"), std::string::npos)
      << wrong_buffers;
  const std::string wrong_push = error_of([&] { device().launch({add(a, 16, 1), Dispatch{add_, {a}, {1}, 1}}); });
  EXPECT_NE(wrong_push.find("dispatch 1 of pipeline 'add_u32' passes 4 push-constant bytes"), std::string::npos)
      << wrong_push;
  const std::string too_many = error_of([&] {
    device().launch({add(a, 16, 1, device().info().max_compute_workgroup_count[0] + 1)});
  });
  EXPECT_NE(too_many.find("workgroups"), std::string::npos) << too_many;
  EXPECT_NE(error_of([&] { device().launch({Dispatch{PipelineId{}, {a}, {}, 1}}); }).find("PipelineId"),
            std::string::npos);
  // The first dispatch of the rejected launch did not run.
  for (std::uint32_t w : read_words(a)) ASSERT_EQ(w, 0u);
}

TEST_F(VulkanLaunch, BadPipelinesNameTheirDebugName) {
  const std::vector<std::uint32_t> not_spirv = {1, 2, 3, 4, 5, 6};
  const std::string bad = error_of([&] { device().create_pipeline(not_spirv, "main", 1, 0, "my_kernel"); });
  EXPECT_NE(bad.find("compute pipeline 'my_kernel'"), std::string::npos) << bad;
  EXPECT_NE(bad.find("not a SPIR-V module"), std::string::npos) << bad;
  const std::string push = error_of([&] { device().create_pipeline(kAddU32, "main", 1, 6, "odd_push"); });
  EXPECT_NE(push.find("'odd_push'"), std::string::npos) << push;
  const std::string big_push = error_of([&] {
    device().create_pipeline(kAddU32, "main", 1, device().info().max_push_constants_size + 4, "big_push");
  });
  EXPECT_NE(big_push.find("at most"), std::string::npos) << big_push;
}

// Pipelines made together (compiled on several threads) come back in the
// order asked, each running its own shader; one bad request keeps none of
// them and names itself.
TEST_F(VulkanLaunch, PipelinesMadeTogetherKeepTheirOrderAndFailTogether) {
  std::vector<PipelineRequest> requests;
  for (int k = 0; k < 6; ++k) {
    if (k % 2 == 0) requests.push_back({kAddU32, "main", 1, 8, "add_" + std::to_string(k)});
    else requests.push_back({kCopyAddU32, "main", 2, 8, "copy_add_" + std::to_string(k)});
  }
  const std::vector<PipelineId> ids = device().create_pipelines(requests);
  ASSERT_EQ(ids.size(), requests.size());
  const std::uint32_t n = 1000;
  const BufferId a = device().create_buffer(4 * n, "a");
  const BufferId b = device().create_buffer(4 * n, "b");
  // a = 0 + 1 (add), b = a + 10 (copy_add), a = 1 + 2 (add), b = a + 20,
  // a = 3 + 3, b = a + 30.
  std::vector<Dispatch> dispatches;
  for (std::uint32_t k = 0; k < ids.size(); ++k) {
    if (k % 2 == 0) dispatches.push_back(Dispatch{ids[k], {a}, {n, k / 2 + 1}, 4});
    else dispatches.push_back(Dispatch{ids[k], {a, b}, {n, 10 * (k / 2 + 1)}, 4});
  }
  device().launch(dispatches);
  for (std::uint32_t w : read_words(a)) ASSERT_EQ(w, 6u);
  for (std::uint32_t w : read_words(b)) ASSERT_EQ(w, 36u);
  for (PipelineId id : ids) device().destroy_pipeline(id);

  const std::vector<std::uint32_t> not_spirv = {1, 2, 3, 4, 5, 6};
  requests[4] = {not_spirv, "main", 1, 8, "broken_4"};
  const std::string bad = error_of([&] { device().create_pipelines(requests); });
  EXPECT_NE(bad.find("compute pipeline 'broken_4'"), std::string::npos) << bad;
  // The device goes on: the same requests without the bad one are fine.
  requests.erase(requests.begin() + 4);
  const std::vector<PipelineId> again = device().create_pipelines(requests);
  EXPECT_EQ(again.size(), 5u);
  for (PipelineId id : again) device().destroy_pipeline(id);
}

}  // namespace
}  // namespace grove::vk::testing
