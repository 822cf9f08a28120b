// viewer.cpp — frames to a window and to PNG (viewer.h).
#include "viewer.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "image.h"
#if GROVE_EXAMPLES_WINDOW
#include "window.h"
#endif

namespace grove_examples {

#if !GROVE_EXAMPLES_WINDOW
// Without GLFW there is no Window to own; its destructor is never needed.
class Window {};
#endif

Viewer::Viewer(const Options& options, std::string_view name, int width, int height)
    : options_(options), name_(name), width_(width), height_(height) {
  const bool required = options.window == WindowMode::on || !options.screenshot.empty();
  if (options.window == WindowMode::off) return;
  std::string why;
#if GROVE_EXAMPLES_WINDOW
  const char* device = std::getenv("GROVE_VULKAN_DEVICE");  // as Grove picks its own
  window_ = Window::open(name_, width, height, device ? device : "", &why);
#else
  why =
      "this build has no window support (GLFW was not found: install libglfw3-dev and reconfigure)";
#endif
  if (window_ == nullptr) {
    if (required) throw std::runtime_error("--window: " + why);
    std::printf("%s: %s; writing PNG only\n", name_.c_str(), why.c_str());
  }
#if GROVE_EXAMPLES_WINDOW
  else {
    std::printf("%s: a %d x %d window on %s\n", name_.c_str(), width, height,
                window_->device_name().c_str());
  }
#endif
}

Viewer::~Viewer() = default;

grove::Config Viewer::config() const {
  grove::Config c = options_.config();
#if GROVE_EXAMPLES_WINDOW
  if (window_ != nullptr &&
      (c.arch == grove::Arch::Vulkan || (c.arch == grove::Arch::Auto && !window_->device_is_cpu())))
    c.vulkan_external = window_->vulkan();
#endif
  return c;
}

bool Viewer::show([[maybe_unused]] const std::vector<uint8_t>& rgb) {
#if GROVE_EXAMPLES_WINDOW
  if (window_ != nullptr) return window_->show(rgb);
#endif
  return true;
}

void Viewer::finish(const std::filesystem::path& file, const std::vector<uint8_t>& rgb) {
  make_out_dir(file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path());
  write_png(file, width_, height_, 3, rgb);
  std::printf("%s: wrote %s\n", name_.c_str(), file.string().c_str());
#if GROVE_EXAMPLES_WINDOW
  if (window_ != nullptr && !options_.screenshot.empty()) {
    window_->show(rgb);
    if (!options_.screenshot.parent_path().empty()) make_out_dir(options_.screenshot.parent_path());
    write_png(options_.screenshot, width_, height_, 3, window_->screenshot());
    std::printf("%s: wrote the window's screenshot %s\n", name_.c_str(),
                options_.screenshot.string().c_str());
  }
#endif
}

}  // namespace grove_examples
