// vulkan_embed: Grove inside an application's own Vulkan renderer.
//
// The application creates its instance, device and queue, loads the AOT
// module of sparse_life (`grove aot sparse_life --size 128 -o life.grove`)
// onto them with grove_runtime alone (no compiler), and records, once, a
// command buffer holding a simulation step (Grove's kernels), the barrier
// Grove exposes, and its own render pass: a fragment shader that reads the
// sparse tree straight from its VkBuffer through shaders/grove_tree.glsl.
// Each frame submits that command buffer again and saves the image as a PNG.
// Runs headless: on lavapipe in the tests, on any GPU otherwise.
//
//   vulkan_embed --module life.grove [--frames 8] [--steps 1] [--out out/vulkan_embed] [--device NAME]
#include <vulkan/vulkan.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <grove/runtime.h>

#include "app.h"
#include "image.h"
#include "scene.h"

namespace {

using vulkan_embed::App;
using vulkan_embed::Buffer;
using vulkan_embed::check;

const uint32_t kVertexSpirv[] = {
#include "draw.vert.inc"
};
const uint32_t kFragmentSpirv[] = {
#include "draw.frag.inc"
};


struct Options {
  std::string module, out = "out/vulkan_embed", device;
  int frames = 8, steps = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("usage: vulkan_embed --module life.grove [--frames N] [--steps N] [--out DIR] [--device NAME]\n"
                  "  the module comes from: grove aot sparse_life --size 128 -o life.grove\n");
      std::exit(0);
    }
    if (i + 1 >= argc) throw std::runtime_error(a + " needs a value (vulkan_embed --help)");
    const std::string v = argv[++i];
    if (a == "--module") o.module = v;
    else if (a == "--out") o.out = v;
    else if (a == "--device") o.device = v;
    else if (a == "--frames" || a == "--steps") {
      const int n = std::atoi(v.c_str());
      if (n < 1 || n > 100000) throw std::runtime_error(a + " takes a count from 1, got '" + v + "'");
      (a == "--frames" ? o.frames : o.steps) = n;
    } else {
      throw std::runtime_error("unknown option '" + a + "' (vulkan_embed --help)");
    }
  }
  if (o.module.empty())
    throw std::runtime_error("name the module: vulkan_embed --module life.grove (made by: grove aot sparse_life --size 128 -o life.grove)");
  return o;
}

// The application's renderer: an offscreen colour image, a render pass, and
// a pipeline whose fragment shader reads the tree.
struct Renderer {
  VkImage image = VK_NULL_HANDLE;
  VkDeviceMemory image_memory = VK_NULL_HANDLE;
  VkImageView view = VK_NULL_HANDLE;
  VkRenderPass pass = VK_NULL_HANDLE;
  VkFramebuffer framebuffer = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkShaderModule modules[2]{};

  void create(const App& app) {
    VkImageCreateInfo ici{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    ici.imageType = VK_IMAGE_TYPE_2D;
    ici.format = VK_FORMAT_R8G8B8A8_UNORM;
    ici.extent = {vulkan_embed::kWidth, vulkan_embed::kHeight, 1};
    ici.mipLevels = 1;
    ici.arrayLayers = 1;
    ici.samples = VK_SAMPLE_COUNT_1_BIT;
    ici.tiling = VK_IMAGE_TILING_OPTIMAL;
    ici.usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
    check(vkCreateImage(app.device, &ici, nullptr, &image), "vkCreateImage");
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(app.device, image, &req);
    VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = app.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    check(vkAllocateMemory(app.device, &mai, nullptr, &image_memory), "vkAllocateMemory");
    check(vkBindImageMemory(app.device, image, image_memory, 0), "vkBindImageMemory");
    VkImageViewCreateInfo vci{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    vci.image = image;
    vci.viewType = VK_IMAGE_VIEW_TYPE_2D;
    vci.format = ici.format;
    vci.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    check(vkCreateImageView(app.device, &vci, nullptr, &view), "vkCreateImageView");

    VkAttachmentDescription color{};
    color.format = ici.format;
    color.samples = VK_SAMPLE_COUNT_1_BIT;
    color.loadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;  // the triangle covers every pixel
    color.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    color.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
    color.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    color.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    color.finalLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    VkAttachmentReference ref{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkSubpassDescription sub{};
    sub.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
    sub.colorAttachmentCount = 1;
    sub.pColorAttachments = &ref;
    // The copy that reads the image waits for the pass's writes.
    VkSubpassDependency after{};
    after.srcSubpass = 0;
    after.dstSubpass = VK_SUBPASS_EXTERNAL;
    after.srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    after.dstStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT;
    after.srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
    after.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    // The pass's writes wait for the previous frame's copy.
    VkSubpassDependency before{};
    before.srcSubpass = VK_SUBPASS_EXTERNAL;
    before.dstSubpass = 0;
    before.srcStageMask = VK_PIPELINE_STAGE_TRANSFER_BIT;
    before.dstStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    before.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    before.dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT;
    const VkSubpassDependency deps[2] = {before, after};
    VkRenderPassCreateInfo rci{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
    rci.attachmentCount = 1;
    rci.pAttachments = &color;
    rci.subpassCount = 1;
    rci.pSubpasses = &sub;
    rci.dependencyCount = 2;
    rci.pDependencies = deps;
    check(vkCreateRenderPass(app.device, &rci, nullptr, &pass), "vkCreateRenderPass");
    VkFramebufferCreateInfo fci{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
    fci.renderPass = pass;
    fci.attachmentCount = 1;
    fci.pAttachments = &view;
    fci.width = vulkan_embed::kWidth;
    fci.height = vulkan_embed::kHeight;
    fci.layers = 1;
    check(vkCreateFramebuffer(app.device, &fci, nullptr, &framebuffer), "vkCreateFramebuffer");

    // Binding 0: the tree's buffer; binding 1: the fields' path words.
    vulkan_embed::storage_layouts(app, 2, VK_SHADER_STAGE_FRAGMENT_BIT, 16, set_layout, layout);

    const std::pair<const uint32_t*, size_t> code[2] = {{kVertexSpirv, sizeof kVertexSpirv},
                                                        {kFragmentSpirv, sizeof kFragmentSpirv}};
    VkPipelineShaderStageCreateInfo stages[2]{};
    for (int s = 0; s < 2; ++s) {
      VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
      smi.codeSize = code[s].second;
      smi.pCode = code[s].first;
      check(vkCreateShaderModule(app.device, &smi, nullptr, &modules[s]), "vkCreateShaderModule");
      stages[s].sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
      stages[s].stage = s == 0 ? VK_SHADER_STAGE_VERTEX_BIT : VK_SHADER_STAGE_FRAGMENT_BIT;
      stages[s].module = modules[s];
      stages[s].pName = "main";
    }
    VkPipelineVertexInputStateCreateInfo vin{VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
    VkPipelineInputAssemblyStateCreateInfo ia{VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
    ia.topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
    VkViewport vp{0, 0, float(vulkan_embed::kWidth), float(vulkan_embed::kHeight), 0, 1};
    VkRect2D scissor{{0, 0}, {vulkan_embed::kWidth, vulkan_embed::kHeight}};
    VkPipelineViewportStateCreateInfo vs{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
    vs.viewportCount = 1;
    vs.pViewports = &vp;
    vs.scissorCount = 1;
    vs.pScissors = &scissor;
    VkPipelineRasterizationStateCreateInfo rs{VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
    rs.polygonMode = VK_POLYGON_MODE_FILL;
    rs.cullMode = VK_CULL_MODE_NONE;
    rs.lineWidth = 1.0f;
    VkPipelineMultisampleStateCreateInfo ms{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
    ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
    VkPipelineColorBlendAttachmentState blend{};
    blend.colorWriteMask = VK_COLOR_COMPONENT_R_BIT | VK_COLOR_COMPONENT_G_BIT | VK_COLOR_COMPONENT_B_BIT |
                           VK_COLOR_COMPONENT_A_BIT;
    VkPipelineColorBlendStateCreateInfo cb{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
    cb.attachmentCount = 1;
    cb.pAttachments = &blend;
    VkGraphicsPipelineCreateInfo gpi{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
    gpi.stageCount = 2;
    gpi.pStages = stages;
    gpi.pVertexInputState = &vin;
    gpi.pInputAssemblyState = &ia;
    gpi.pViewportState = &vs;
    gpi.pRasterizationState = &rs;
    gpi.pMultisampleState = &ms;
    gpi.pColorBlendState = &cb;
    gpi.layout = layout;
    gpi.renderPass = pass;
    check(vkCreateGraphicsPipelines(app.device, VK_NULL_HANDLE, 1, &gpi, nullptr, &pipeline),
          "vkCreateGraphicsPipelines");

    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dpi.maxSets = 1;
    dpi.poolSizeCount = 1;
    dpi.pPoolSizes = &size;
    check(vkCreateDescriptorPool(app.device, &dpi, nullptr, &pool), "vkCreateDescriptorPool");
    VkDescriptorSetAllocateInfo dai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    dai.descriptorPool = pool;
    dai.descriptorSetCount = 1;
    dai.pSetLayouts = &set_layout;
    check(vkAllocateDescriptorSets(app.device, &dai, &set), "vkAllocateDescriptorSets");
  }

  // Binds the tree's buffer (Grove's) and the path words (the application's).
  void bind(const App& app, VkBuffer tree, VkBuffer paths) {
    vulkan_embed::bind_storage(app, set, {tree, paths});
  }

  void destroy(VkDevice d) {
    vkDestroyDescriptorPool(d, pool, nullptr);
    vkDestroyPipeline(d, pipeline, nullptr);
    for (VkShaderModule m : modules) vkDestroyShaderModule(d, m, nullptr);
    vkDestroyPipelineLayout(d, layout, nullptr);
    vkDestroyDescriptorSetLayout(d, set_layout, nullptr);
    vkDestroyFramebuffer(d, framebuffer, nullptr);
    vkDestroyRenderPass(d, pass, nullptr);
    vkDestroyImageView(d, view, nullptr);
    vkDestroyImage(d, image, nullptr);
    vkFreeMemory(d, image_memory, nullptr);
  }
};

int run(const Options& o) {
  App app;
  app.open(o.device);
  {
    // Grove on the application's device: its buffers and pipelines live
    // there, and its kernels are recorded into the application's commands.
    grove::runtime::Options go;
    go.external = app.handles();
    grove::runtime::Module life = grove::runtime::Module::load(o.module, go);
    grove::runtime::Tree world = life.instantiate("life", "world");
    const grove::runtime::FieldInfo alive = world.field("alive"), map = world.field("map");
    const int n = static_cast<int>(alive.shape.at(0));
    std::printf("vulkan_embed: %s on %s, a %d x %d world\n", o.module.c_str(), app.name.c_str(), n, n);
    for (const vulkan_embed::Patch& p : vulkan_embed::kPatches) life.launch("seed", {world, p.x0, p.y0, p.salt});

    // The path words of both fields, one after the other.
    std::vector<uint32_t> paths = alive.path;
    const auto map_path = static_cast<uint32_t>(paths.size());
    paths.insert(paths.end(), map.path.begin(), map.path.end());
    Buffer path_buffer, readback;
    path_buffer.create(app, paths.size() * 4, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
    std::memcpy(path_buffer.mapped, paths.data(), paths.size() * 4);
    const VkDeviceSize frame_bytes = VkDeviceSize{vulkan_embed::kWidth} * vulkan_embed::kHeight * 4;
    readback.create(app, frame_bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT);

    Renderer r;
    r.create(app);
    r.bind(app, static_cast<VkBuffer>(world.vulkan_buffer()), path_buffer.buffer);

    // One command buffer, recorded once, submitted every frame: the
    // simulation steps, the snapshot that fills the map, Grove's barrier,
    // the application's render pass, and the copy to the host.
    VkCommandPool pool = vulkan_embed::command_pool(app);
    VkCommandBuffer cmd = vulkan_embed::begin_commands(app, pool);
    for (int s = 0; s < o.steps; ++s) {
      life.record(cmd, "count", {world});
      life.record(cmd, "update", {world});
      life.record(cmd, "prune", {world});
    }
    life.record(cmd, "snapshot", {world, n / 2, n / 2});
    life.record_barrier(cmd, VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
    VkRenderPassBeginInfo rbi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
    rbi.renderPass = r.pass;
    rbi.framebuffer = r.framebuffer;
    rbi.renderArea = {{0, 0}, {vulkan_embed::kWidth, vulkan_embed::kHeight}};
    vkCmdBeginRenderPass(cmd, &rbi, VK_SUBPASS_CONTENTS_INLINE);
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, r.pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, r.layout, 0, 1, &r.set, 0, nullptr);
    const int32_t push[4] = {0, static_cast<int32_t>(map_path), vulkan_embed::zoom_for(n), vulkan_embed::kPanel};
    vkCmdPushConstants(cmd, r.layout, VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof push, push);
    vkCmdDraw(cmd, 3, 1, 0, 0);
    vkCmdEndRenderPass(cmd);
    VkBufferImageCopy copy{};
    copy.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    copy.imageExtent = {vulkan_embed::kWidth, vulkan_embed::kHeight, 1};
    vkCmdCopyImageToBuffer(cmd, r.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, readback.buffer, 1, &copy);
    VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr,
                         0, nullptr);
    check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");

    VkFence fence = VK_NULL_HANDLE;
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(app.device, &fci, nullptr, &fence), "vkCreateFence");
    std::filesystem::create_directories(o.out);
    std::vector<uint8_t> pixels(frame_bytes);
    for (int f = 0; f < o.frames; ++f) {
      vulkan_embed::submit(app, cmd, fence);
      check(vkWaitForFences(app.device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
      check(vkResetFences(app.device, 1, &fence), "vkResetFences");
      std::memcpy(pixels.data(), readback.mapped, frame_bytes);
      char name[32];
      std::snprintf(name, sizeof name, "frame_%03d.png", f);
      grove_examples::write_png(std::filesystem::path(o.out) / name, vulkan_embed::kWidth, vulkan_embed::kHeight, 4,
                                pixels);
    }
    // Raises what the recorded kernels reported (a full pool), if anything.
    life.sync();
    int64_t blocks = 0;
    for (const grove::runtime::SNodeStats& s : world.stats())
      if (s.kind == "pointer") blocks = s.active_cells;
    std::printf("vulkan_embed: %d frame(s) of %d step(s) in %s; %lld active block(s) after the last\n", o.frames,
                o.steps, o.out.c_str(), static_cast<long long>(blocks));

    vkDestroyFence(app.device, fence, nullptr);
    vkDestroyCommandPool(app.device, pool, nullptr);
    r.destroy(app.device);
    path_buffer.destroy(app.device);
    readback.destroy(app.device);
    // `life` (Grove's buffers and pipelines on the device) goes here, before the device.
  }
  app.close();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vulkan_embed: %s\n", e.what());
    return 1;
  }
}
