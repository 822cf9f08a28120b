// shaders/grove_tree.glsl, run in an application's own compute shader on
// its own device: every element of a field under a pointer, a bitmasked and
// a dynamic SNode is looked up from the tree's VkBuffer and the field's path
// words (grove::runtime::FieldInfo::path) and compared with a plain C++
// model of what the kernel stored: values where cells are active, "inactive"
// everywhere else. (examples/vulkan_embed draws through the pointer and
// dense paths; this covers bitmasked and dynamic too.)
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "examples/vulkan_embed/app.h"
#include "grove/aot.h"
#include "grove/grove.h"
#include "tests/api/backend_fixture.h"

namespace {

using namespace grove;
using vulkan_embed::App;
using vulkan_embed::Buffer;
using vulkan_embed::check;

const uint32_t kProbeSpirv[] = {
#include "probe.comp.inc"
};
constexpr uint32_t kInactive = 0xFFFFFFFFu;

// The application's compute pipeline that runs probe.comp over a field.
struct Probe {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkShaderModule module = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkCommandPool commands = VK_NULL_HANDLE;

  explicit Probe(const App& app) {
    vulkan_embed::storage_layouts(app, 3, VK_SHADER_STAGE_COMPUTE_BIT, 20, set_layout, layout);
    pipeline = vulkan_embed::compute_pipeline(app, kProbeSpirv, sizeof kProbeSpirv, layout, module);
    pool = vulkan_embed::storage_pool(app, 8, 3);
    commands = vulkan_embed::command_pool(app);
  }

  // Every element of a field of extents n0 x n1 (first indices 0), row-major.
  std::vector<uint32_t> run(const App& app, grove::runtime::Module& m, const grove::runtime::Tree& tree,
                            const std::string& field) {
    const grove::runtime::FieldInfo f = tree.field(field);
    const int n0 = static_cast<int>(f.shape.at(0)), n1 = static_cast<int>(f.shape.at(1));
    Buffer paths, out;
    paths.create(app, f.path.size() * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
    std::memcpy(paths.mapped, f.path.data(), f.path.size() * 4);
    out.create(app, static_cast<VkDeviceSize>(n0) * n1 * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
    VkDescriptorSet set = vulkan_embed::allocate_set(app, pool, set_layout);
    vulkan_embed::bind_storage(app, set, {static_cast<VkBuffer>(tree.vulkan_buffer()), paths.buffer, out.buffer});
    VkCommandBuffer cmd = vulkan_embed::begin_commands(app, commands);
    m.record_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, nullptr);
    const int32_t push[5] = {0, 0, 0, n0, n1};
    vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, push);
    vkCmdDispatch(cmd, static_cast<uint32_t>((n0 * n1 + 63) / 64), 1, 1);
    vulkan_embed::finish_to_host(app, cmd);
    std::vector<uint32_t> result(static_cast<size_t>(n0) * n1);
    std::memcpy(result.data(), out.mapped, result.size() * 4);
    vkFreeCommandBuffers(app.device, commands, 1, &cmd);
    paths.destroy(app.device);
    out.destroy(app.device);
    return result;
  }

  void destroy(VkDevice d) {
    vkDestroyCommandPool(d, commands, nullptr);
    vkDestroyDescriptorPool(d, pool, nullptr);
    vkDestroyPipeline(d, pipeline, nullptr);
    vkDestroyShaderModule(d, module, nullptr);
    vkDestroyPipelineLayout(d, layout, nullptr);
    vkDestroyDescriptorSetLayout(d, set_layout, nullptr);
  }
};

TEST(GlslInclude, FindsEveryElementUnderPointerBitmaskedAndDynamicNodes) {
  if (!grove::testing::vulkan_unavailable_reason().empty())
    GTEST_SKIP() << "no Vulkan: " << grove::testing::vulkan_unavailable_reason();
  // The module: saved from a Program on Vulkan.
  Config c;
  c.arch = Arch::Vulkan;
  Program prog(c);
  SNode* lists = nullptr;
  TreeType type = prog.tree_type("world", [&](TreeTypeBuilder& t) {
    Field x = t.field(i32, "x"), m = t.field(i32, "m"), d = t.field(i32, "d");
    t.root().pointer(ij, 4).dense(ij, 4).place(x);
    t.root().bitmasked(ij, {16, 16}).place(m);
    lists = &t.root().dense(i, 4).dynamic(j, 32, 4);
    lists->place(d);
  });
  Kernel seed = prog.kernel("seed", {arg(type, "w")}, [&](Args a) {
    TreeArg w = a.tree("w");
    Field x = w.field("x"), m = w.field("m");
    SNodeRef l = w[*lists];
    for_range(0, 16, [&](Expr k) {  // distinct cells for distinct k
      x(k * 7 % 16, k * 5 % 16) = k + 1;
      m(k * 3 % 16, k * 11 % 16) = k + 1;
    });
    Var k(i32, 0);
    while_([&] { return k < 22; }, [&] {  // one after the other: each list's order is known
      append(l, {k % 4}, k + 1);
      k += 1;
    });
  });
  aot::Module saved(prog, Arch::Vulkan);
  saved.add_tree_type("world", type);
  saved.add_kernel("seed", seed);

  // The application: its own device, the module loaded onto it.
  App app;
  app.open("");
  {
    grove::runtime::Options o;
    o.external = app.handles();
    grove::runtime::Module m = grove::runtime::Module::load(saved.bytes(), "probe module", o);
    grove::runtime::Tree w = m.instantiate("world");
    m.launch("seed", {w});
    m.sync();
    Probe probe(app);

    // The model: what seed stored, and where cells are active.
    std::map<std::pair<int, int>, uint32_t> x, mm;
    std::set<std::pair<int, int>> blocks;
    for (int k = 0; k < 16; ++k) {
      x[{k * 7 % 16, k * 5 % 16}] = static_cast<uint32_t>(k + 1);
      blocks.insert({k * 7 % 16 / 4, k * 5 % 16 / 4});
      mm[{k * 3 % 16, k * 11 % 16}] = static_cast<uint32_t>(k + 1);
    }
    const std::vector<uint32_t> gx = probe.run(app, m, w, "x"), gm = probe.run(app, m, w, "m"),
                                gd = probe.run(app, m, w, "d");
    int inactive = 0;
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        const size_t k = static_cast<size_t>(i * 16 + j);
        const bool block = blocks.count({i / 4, j / 4}) != 0;
        const std::pair<int, int> at{i, j};
        const uint32_t want_x = !block ? kInactive : x.count(at) ? x[at] : 0u;
        const uint32_t want_m = mm.count(at) ? mm[at] : kInactive;
        EXPECT_EQ(gx[k], want_x) << "x(" << i << ", " << j << ")";
        EXPECT_EQ(gm[k], want_m) << "m(" << i << ", " << j << ")";
        inactive += gx[k] == kInactive;
      }
    for (int r = 0; r < 4; ++r)
      for (int n = 0; n < 32; ++n) {
        const int k = r + 4 * n;  // the n-th append to list r
        EXPECT_EQ(gd[static_cast<size_t>(r * 32 + n)], k < 22 ? static_cast<uint32_t>(k + 1) : kInactive)
            << "d(" << r << ", " << n << ")";
      }
    EXPECT_GT(inactive, 0);  // some blocks stay inactive: both branches ran
    probe.destroy(app.device);
  }
  app.close();
}

}  // namespace
