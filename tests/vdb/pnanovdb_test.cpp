// A Grove field read by an application's own shader through PNanoVDB: a
// level-set sphere made by OpenVDB comes into a Program, goes out as
// grove::vdb::to_nanovdb's bytes, and tests/vdb/pnanovdb_probe.comp, on the
// application's own Vulkan device with no Grove code, reads back every
// voxel's value and activity as OpenVDB has them (and the background
// outside the band).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <openvdb/openvdb.h>
#include <openvdb/io/File.h>
#include <openvdb/tools/LevelSetSphere.h>

#include "examples/vulkan_embed/app.h"
#include "grove/grove.h"
#include "grove/vdb.h"
#include "tests/api/backend_fixture.h"
#include "tests/support/scratch_dir.h"

namespace {

using vulkan_embed::App;
using vulkan_embed::Buffer;
using vulkan_embed::check;

const uint32_t kProbeSpirv[] = {
#include "pnanovdb_probe.comp.inc"
};

// (value, active) at each coordinate, read by the probe shader from a
// storage buffer holding `grid`.
std::vector<float> probe(const App& app, const std::vector<uint8_t>& grid, const std::vector<openvdb::Coord>& at) {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  vulkan_embed::storage_layouts(app, 3, VK_SHADER_STAGE_COMPUTE_BIT, 4, set_layout, layout);
  VkShaderModule module = VK_NULL_HANDLE;
  VkPipeline pipeline = vulkan_embed::compute_pipeline(app, kProbeSpirv, sizeof kProbeSpirv, layout, module);
  VkDescriptorPool pool = vulkan_embed::storage_pool(app, 1, 3);
  VkCommandPool commands = vulkan_embed::command_pool(app);

  Buffer nano, coords, out;
  nano.create(app, grid.size(), VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
  std::memcpy(nano.mapped, grid.data(), grid.size());
  coords.create(app, at.size() * 16, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
  std::vector<int32_t> c;
  for (const openvdb::Coord& p : at) c.insert(c.end(), {p.x(), p.y(), p.z(), 0});
  std::memcpy(coords.mapped, c.data(), c.size() * 4);
  out.create(app, at.size() * 8, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
  VkDescriptorSet set = vulkan_embed::allocate_set(app, pool, set_layout);
  vulkan_embed::bind_storage(app, set, {nano.buffer, coords.buffer, out.buffer});
  VkCommandBuffer cmd = vulkan_embed::begin_commands(app, commands);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
  const uint32_t count = static_cast<uint32_t>(at.size());
  vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &count);
  vkCmdDispatch(cmd, (count + 63) / 64, 1, 1);
  vulkan_embed::finish_to_host(app, cmd);
  std::vector<float> result(2 * at.size());
  std::memcpy(result.data(), out.mapped, result.size() * 4);

  vkFreeCommandBuffers(app.device, commands, 1, &cmd);
  nano.destroy(app.device);
  coords.destroy(app.device);
  out.destroy(app.device);
  vkDestroyCommandPool(app.device, commands, nullptr);
  vkDestroyDescriptorPool(app.device, pool, nullptr);
  vkDestroyPipeline(app.device, pipeline, nullptr);
  vkDestroyShaderModule(app.device, module, nullptr);
  vkDestroyPipelineLayout(app.device, layout, nullptr);
  vkDestroyDescriptorSetLayout(app.device, set_layout, nullptr);
  return result;
}

TEST(PNanoVdb, AnApplicationsShaderReadsAGroveFieldThroughPNanoVdb) {
  if (!grove::testing::vulkan_unavailable_reason().empty())
    GTEST_SKIP() << "no Vulkan: " << grove::testing::vulkan_unavailable_reason();
  openvdb::initialize();
  openvdb::FloatGrid::Ptr want =
      openvdb::tools::createLevelSetSphere<openvdb::FloatGrid>(8.0f, openvdb::Vec3f(-2.0f, 3.0f, 1.0f), 0.5f, 3.0f);
  want->setName("sphere");
  grove::testing::ScratchDir dir("pnanovdb");
  const std::string file = (dir.path() / "sphere.vdb").string();
  openvdb::io::File(file).write({want});

  grove::Program prog({.arch = grove::Arch::Cpu});
  const grove::vdb::Imported got = grove::vdb::import_grid(prog, file);
  const std::vector<uint8_t> nano =
      grove::vdb::to_nanovdb(prog, got.field, {.name = "sphere", .grid_class = "level set", .background = want->background()});

  // Every active voxel, and a shell of inactive ones around the band.
  std::vector<openvdb::Coord> at;
  for (auto it = want->cbeginValueOn(); it; ++it) at.push_back(it.getCoord());
  const size_t active = at.size();
  for (int k = -40; k <= 40; k += 5) at.push_back(openvdb::Coord(k, 60, -k));
  at.push_back(openvdb::Coord(-4, 6, 2));  // the centre: inside, inactive, -background
  ASSERT_EQ(want->getConstAccessor().getValue(at.back()), -want->background());

  App app;
  app.open("");
  const std::vector<float> result = probe(app, nano, at);
  const auto acc = want->getConstAccessor();
  int bad = 0;
  for (size_t n = 0; n < at.size() && bad < 5; ++n) {
    const bool on = n < active;
    const float value = result[2 * n], flag = result[2 * n + 1];
    if (flag != (on ? 1.0f : 0.0f) || (on && value != acc.getValue(at[n])) ||
        (!on && value != acc.getValue(at[n]))) {
      ADD_FAILURE() << at[n] << ": the shader read " << value << (flag != 0 ? " (active)" : " (inactive)")
                    << "; OpenVDB has " << acc.getValue(at[n]) << (on ? " (active)" : " (inactive)");
      ++bad;
    }
  }
  app.close();
}

}  // namespace
