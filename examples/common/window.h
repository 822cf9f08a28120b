// window.h — a window that shows an example's frames through a Vulkan
// swapchain (GLFW from Debian's libglfw3-dev), on a Vulkan device the
// window opens and hands to Grove (Config::vulkan_external) so that the
// kernels compute on the device that presents. Built only where GLFW is
// found; display.h is what the examples use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grove/vulkan_handles.h>

namespace grove_examples {

class Window {
 public:
  // A window of width x height pixels titled `title`, with a Vulkan device
  // (whose name contains `device`, if given; GPUs before CPU drivers) that
  // can present to it and run compute. nullptr when there is no display or
  // no such device; `why` then says which.
  static std::unique_ptr<Window> open(const std::string& title, int width, int height,
                                      const std::string& device, std::string* why);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  // The instance, device and queue, for Config::vulkan_external; the
  // window owns them and outlives the Program that uses them.
  grove::runtime::VulkanHandles vulkan() const;
  std::string device_name() const;
  bool device_is_cpu() const;  // a driver that runs on the CPU (lavapipe)

  // Shows a frame of width x height RGB pixels, rows top to bottom, and
  // handles the window's events. False once the user has closed it.
  bool show(const std::vector<uint8_t>& rgb);
  // What the display server shows in the window now (RGB, rows top to
  // bottom), after the frames shown so far have been presented: a
  // screenshot, read back through X11. Throws std::runtime_error elsewhere.
  std::vector<uint8_t> screenshot();

  int width() const;
  int height() const;

 private:
  struct Impl;
  explicit Window(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace grove_examples
