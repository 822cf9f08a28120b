// window.cpp — GLFW window, Vulkan device and swapchain of window.h. A frame
// goes from the host into a staging buffer, is copied into the swapchain
// image the presentation engine hands out, and is presented; one frame in
// flight (the examples draw on the host between steps).
#include "window.h"

#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>
#define GLFW_EXPOSE_NATIVE_X11
#include <GLFW/glfw3native.h>
#include <X11/Xutil.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

// The instance, device and host-visible buffers an application makes
// (shared with examples/vulkan_embed and the application-side tests).
#include "examples/vulkan_embed/app.h"

namespace grove_examples {
namespace {

using vulkan_embed::check;

// GLFW is initialised once per process and left so (glfwTerminate would
// close every window of the process).
bool glfw_ready(std::string* why) {
  static std::string error;
  static const bool ok = [] {
    glfwSetErrorCallback([](int, const char* text) { error = text; });
    if (glfwInit() != GLFW_TRUE) return false;
    if (glfwVulkanSupported() != GLFW_TRUE) {
      error = "GLFW found no Vulkan loader";
      return false;
    }
    return true;
  }();
  if (!ok) *why = "no window: " + (error.empty() ? std::string("GLFW did not start") : error);
  return ok;
}

}  // namespace

struct Window::Impl {
  GLFWwindow* window = nullptr;
  int width = 0, height = 0;
  vulkan_embed::App app;  // instance, device and queue (compute and present)
  VkSurfaceKHR surface = VK_NULL_HANDLE;
  VkSwapchainKHR swapchain = VK_NULL_HANDLE;
  VkFormat format = VK_FORMAT_UNDEFINED;
  VkExtent2D extent{};
  std::vector<VkImage> images;
  vulkan_embed::Buffer staging;  // host-visible, mapped: the frame's BGRA or RGBA bytes
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkSemaphore acquired = VK_NULL_HANDLE, copied = VK_NULL_HANDLE;
  VkFence done = VK_NULL_HANDLE;
  bool in_flight = false;

  ~Impl() {
    if (VkDevice device = app.device; device != VK_NULL_HANDLE) {
      vkDeviceWaitIdle(device);
      vkDestroyFence(device, done, nullptr);
      vkDestroySemaphore(device, copied, nullptr);
      vkDestroySemaphore(device, acquired, nullptr);
      vkDestroyCommandPool(device, pool, nullptr);
      staging.destroy(device);
      vkDestroySwapchainKHR(device, swapchain, nullptr);
      vkDestroyDevice(device, nullptr);
      app.device = VK_NULL_HANDLE;
    }
    if (surface != VK_NULL_HANDLE) vkDestroySurfaceKHR(app.instance, surface, nullptr);
    app.close();  // the instance
    if (window != nullptr) glfwDestroyWindow(window);
  }

  // The device whose name contains `want` with a queue family that runs
  // compute and presents to the surface.
  void open_device(const std::string& want) {
    const VkSurfaceKHR target = surface;
    app.open_device(want,
                    [target](VkPhysicalDevice d, uint32_t f, const VkQueueFamilyProperties& props) {
                      VkBool32 present = VK_FALSE;
                      vkGetPhysicalDeviceSurfaceSupportKHR(d, f, target, &present);
                      return (props.queueFlags & VK_QUEUE_COMPUTE_BIT) != 0 && present == VK_TRUE;
                    },
                    "a queue that computes and presents to this display",
                    {VK_KHR_SWAPCHAIN_EXTENSION_NAME});
  }

  void create_swapchain() {
    VkSurfaceCapabilitiesKHR caps;
    check(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(app.physical, surface, &caps),
          "vkGetPhysicalDeviceSurfaceCapabilitiesKHR");
    if (!(caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_DST_BIT))
      throw std::runtime_error("no window: the surface's images cannot be copied into");
    uint32_t n = 0;
    vkGetPhysicalDeviceSurfaceFormatsKHR(app.physical, surface, &n, nullptr);
    std::vector<VkSurfaceFormatKHR> formats(n);
    vkGetPhysicalDeviceSurfaceFormatsKHR(app.physical, surface, &n, formats.data());
    // 8-bit UNORM, so the bytes shown are the bytes written (and PNG's).
    VkSurfaceFormatKHR chosen{VK_FORMAT_UNDEFINED, VK_COLOR_SPACE_SRGB_NONLINEAR_KHR};
    for (const VkSurfaceFormatKHR& f : formats)
      if ((f.format == VK_FORMAT_B8G8R8A8_UNORM || f.format == VK_FORMAT_R8G8B8A8_UNORM) &&
          chosen.format == VK_FORMAT_UNDEFINED)
        chosen = f;
    if (chosen.format == VK_FORMAT_UNDEFINED)
      throw std::runtime_error("no window: the surface has no 8-bit RGBA format");
    format = chosen.format;
    vkGetPhysicalDeviceSurfacePresentModesKHR(app.physical, surface, &n, nullptr);
    std::vector<VkPresentModeKHR> modes(n);
    vkGetPhysicalDeviceSurfacePresentModesKHR(app.physical, surface, &n, modes.data());
    // FIFO (vsync) is always there; mailbox keeps a simulation from waiting
    // for the display where it is offered.
    VkPresentModeKHR mode = VK_PRESENT_MODE_FIFO_KHR;
    if (std::find(modes.begin(), modes.end(), VK_PRESENT_MODE_MAILBOX_KHR) != modes.end())
      mode = VK_PRESENT_MODE_MAILBOX_KHR;
    extent = caps.currentExtent;
    if (extent.width == UINT32_MAX)
      extent = {static_cast<uint32_t>(width), static_cast<uint32_t>(height)};
    VkSwapchainCreateInfoKHR sci{VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
    sci.surface = surface;
    sci.minImageCount = std::max(caps.minImageCount, 2u);
    if (caps.maxImageCount != 0)
      sci.minImageCount = std::min(sci.minImageCount, caps.maxImageCount);
    sci.imageFormat = chosen.format;
    sci.imageColorSpace = chosen.colorSpace;
    sci.imageExtent = extent;
    sci.imageArrayLayers = 1;
    sci.imageUsage = VK_IMAGE_USAGE_TRANSFER_DST_BIT;
    sci.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
    sci.preTransform = caps.currentTransform;
    sci.compositeAlpha = (caps.supportedCompositeAlpha & VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR)
                             ? VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR
                             : static_cast<VkCompositeAlphaFlagBitsKHR>(
                                   caps.supportedCompositeAlpha & -caps.supportedCompositeAlpha);
    sci.presentMode = mode;
    sci.clipped = VK_TRUE;
    sci.oldSwapchain = swapchain;
    VkSwapchainKHR made = VK_NULL_HANDLE;
    check(vkCreateSwapchainKHR(app.device, &sci, nullptr, &made), "vkCreateSwapchainKHR");
    if (swapchain != VK_NULL_HANDLE) vkDestroySwapchainKHR(app.device, swapchain, nullptr);
    swapchain = made;
    vkGetSwapchainImagesKHR(app.device, swapchain, &n, nullptr);
    images.resize(n);
    vkGetSwapchainImagesKHR(app.device, swapchain, &n, images.data());
  }

  void create_frame_objects() {
    staging.create(app, static_cast<VkDeviceSize>(width) * height * 4,
                   VK_BUFFER_USAGE_TRANSFER_SRC_BIT);
    VkDevice device = app.device;
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = app.family;
    check(vkCreateCommandPool(device, &pci, nullptr, &pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(device, &cai, &commands), "vkAllocateCommandBuffers");
    VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    check(vkCreateSemaphore(device, &si, nullptr, &acquired), "vkCreateSemaphore");
    check(vkCreateSemaphore(device, &si, nullptr, &copied), "vkCreateSemaphore");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(device, &fci, nullptr, &done), "vkCreateFence");
  }

  void wait_frame() {
    if (!in_flight) return;
    check(vkWaitForFences(app.device, 1, &done, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(app.device, 1, &done), "vkResetFences");
    in_flight = false;
  }

  static void transition(VkCommandBuffer cmd, VkImage image, VkImageLayout from, VkImageLayout to,
                         VkAccessFlags src_access, VkAccessFlags dst_access,
                         VkPipelineStageFlags src, VkPipelineStageFlags dst) {
    VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
    b.srcAccessMask = src_access;
    b.dstAccessMask = dst_access;
    b.oldLayout = from;
    b.newLayout = to;
    b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = image;
    b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdPipelineBarrier(cmd, src, dst, 0, 0, nullptr, 0, nullptr, 1, &b);
  }

  // Copies the staging buffer into `image` (the part that fits; the rest
  // black) and leaves it ready to present.
  void record_copy(VkImage image) {
    check(vkResetCommandBuffer(commands, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
    transition(commands, image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 0,
               VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
               VK_PIPELINE_STAGE_TRANSFER_BIT);
    const uint32_t w = std::min(extent.width, static_cast<uint32_t>(width));
    const uint32_t h = std::min(extent.height, static_cast<uint32_t>(height));
    if (w < extent.width || h < extent.height) {
      const VkClearColorValue black{};
      const VkImageSubresourceRange all{VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
      vkCmdClearColorImage(commands, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &black, 1, &all);
      transition(commands, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                 VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_ACCESS_TRANSFER_WRITE_BIT,
                 VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_PIPELINE_STAGE_TRANSFER_BIT);
    }
    VkBufferImageCopy region{};
    region.bufferRowLength = static_cast<uint32_t>(width);
    region.bufferImageHeight = static_cast<uint32_t>(height);
    region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = {w, h, 1};
    vkCmdCopyBufferToImage(commands, staging.buffer, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1,
                           &region);
    transition(commands, image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
               VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, VK_ACCESS_TRANSFER_WRITE_BIT, 0,
               VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
    check(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
  }
};

Window::Window(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Window::~Window() = default;

std::unique_ptr<Window> Window::open(const std::string& title, int width, int height,
                                     const std::string& device, std::string* why) {
  const char* x11 = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  if ((x11 == nullptr || *x11 == '\0') && (wayland == nullptr || *wayland == '\0')) {
    *why = "no display (DISPLAY is not set)";
    return nullptr;
  }
  if (!glfw_ready(why)) return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->width = width;
  impl->height = height;
  try {
    uint32_t count = 0;
    const char** required = glfwGetRequiredInstanceExtensions(&count);
    if (required == nullptr)
      throw std::runtime_error("no window: Vulkan cannot present to this display");
    impl->app.create_instance(required, count);
    glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
    glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
    impl->window = glfwCreateWindow(width, height, title.c_str(), nullptr, nullptr);
    if (impl->window == nullptr) throw std::runtime_error("no window: GLFW could not create one");
    check(glfwCreateWindowSurface(impl->app.instance, impl->window, nullptr, &impl->surface),
          "glfwCreateWindowSurface");
    impl->open_device(device);
    impl->create_swapchain();
    impl->create_frame_objects();
  } catch (const std::runtime_error& e) {
    *why = e.what();
    return nullptr;
  }
  return std::unique_ptr<Window>(new Window(std::move(impl)));
}

grove::runtime::VulkanHandles Window::vulkan() const { return impl_->app.handles(); }

std::string Window::device_name() const { return impl_->app.name; }
bool Window::device_is_cpu() const { return impl_->app.cpu; }
int Window::width() const { return impl_->width; }
int Window::height() const { return impl_->height; }

bool Window::show(const std::vector<uint8_t>& rgb) {
  Impl& w = *impl_;
  glfwPollEvents();
  if (glfwWindowShouldClose(w.window)) return false;
  if (rgb.size() != static_cast<size_t>(w.width) * w.height * 3)
    throw std::invalid_argument("Window::show: a frame of " + std::to_string(rgb.size()) +
                                " bytes for a " + std::to_string(w.width) + " x " +
                                std::to_string(w.height) + " RGB window");
  w.wait_frame();
  const bool bgra = w.format == VK_FORMAT_B8G8R8A8_UNORM;
  for (size_t p = 0, n = rgb.size() / 3; p < n; ++p) {
    uint8_t* out = static_cast<uint8_t*>(w.staging.mapped) + 4 * p;
    out[0] = rgb[3 * p + (bgra ? 2 : 0)];
    out[1] = rgb[3 * p + 1];
    out[2] = rgb[3 * p + (bgra ? 0 : 2)];
    out[3] = 255;
  }
  uint32_t index = 0;
  VkResult r = vkAcquireNextImageKHR(w.app.device, w.swapchain, UINT64_MAX, w.acquired,
                                     VK_NULL_HANDLE, &index);
  if (r == VK_ERROR_OUT_OF_DATE_KHR) {
    vkDeviceWaitIdle(w.app.device);
    w.create_swapchain();
    r = vkAcquireNextImageKHR(w.app.device, w.swapchain, UINT64_MAX, w.acquired, VK_NULL_HANDLE,
                              &index);
  }
  if (r != VK_SUBOPTIMAL_KHR) check(r, "vkAcquireNextImageKHR");
  w.record_copy(w.images[index]);
  const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.waitSemaphoreCount = 1;
  submit.pWaitSemaphores = &w.acquired;
  submit.pWaitDstStageMask = &wait_stage;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &w.commands;
  submit.signalSemaphoreCount = 1;
  submit.pSignalSemaphores = &w.copied;
  check(vkQueueSubmit(w.app.queue, 1, &submit, w.done), "vkQueueSubmit");
  w.in_flight = true;
  VkPresentInfoKHR present{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
  present.waitSemaphoreCount = 1;
  present.pWaitSemaphores = &w.copied;
  present.swapchainCount = 1;
  present.pSwapchains = &w.swapchain;
  present.pImageIndices = &index;
  r = vkQueuePresentKHR(w.app.queue, &present);
  if (r != VK_SUBOPTIMAL_KHR && r != VK_ERROR_OUT_OF_DATE_KHR) check(r, "vkQueuePresentKHR");
  return true;
}

std::vector<uint8_t> Window::screenshot() {
  Impl& w = *impl_;
  Display* display = glfwGetX11Display();
  if (display == nullptr) throw std::runtime_error("a screenshot needs an X11 display");
  w.wait_frame();
  vkQueueWaitIdle(w.app.queue);
  XSync(display, False);
  const ::Window xwindow = glfwGetX11Window(w.window);
  XImage* image = XGetImage(display, xwindow, 0, 0, static_cast<unsigned>(w.width),
                            static_cast<unsigned>(w.height), AllPlanes, ZPixmap);
  if (image == nullptr) throw std::runtime_error("XGetImage could not read the window");
  // Each channel's mask tells its bits, whatever the visual's order.
  auto channel = [](unsigned long pixel, unsigned long mask) {
    if (mask == 0) return uint8_t{0};
    int shift = 0;
    while (((mask >> shift) & 1u) == 0) ++shift;
    const unsigned long max = mask >> shift;
    return static_cast<uint8_t>(((pixel & mask) >> shift) * 255 / max);
  };
  std::vector<uint8_t> rgb(static_cast<size_t>(w.width) * w.height * 3);
  for (int y = 0; y < w.height; ++y)
    for (int x = 0; x < w.width; ++x) {
      const unsigned long pixel = XGetPixel(image, x, y);
      uint8_t* out = &rgb[(static_cast<size_t>(y) * w.width + x) * 3];
      out[0] = channel(pixel, image->red_mask);
      out[1] = channel(pixel, image->green_mask);
      out[2] = channel(pixel, image->blue_mask);
    }
  XDestroyImage(image);
  return rgb;
}

}  // namespace grove_examples
