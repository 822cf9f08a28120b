// viewer.h — where an example's frames go: a window while there is a
// display (window.h; built where GLFW is found), and a PNG of the last
// frame always. With a window, the kernels run on the window's Vulkan device
// when they run on Vulkan, so what they compute is presented by the device
// that computed it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <grove/program.h>

#include "options.h"

namespace grove_examples {

class Window;

class Viewer {
 public:
  // Opens a window of width x height as options.window says (auto: when a
  // display is present, else PNG only, said once on stdout). Throws
  // std::runtime_error when --window or --screenshot asked for a window and
  // none opens, saying why.
  Viewer(const Options& options, std::string_view name, int width, int height);
  ~Viewer();
  Viewer(const Viewer&) = delete;
  Viewer& operator=(const Viewer&) = delete;

  // options.config(), with the window's Vulkan device for --arch vulkan,
  // and for --arch auto when that device is a GPU. Destroy the Program
  // before the Viewer.
  grove::Config config() const;
  bool has_window() const { return window_ != nullptr; }
  // Shows a frame (width x height RGB, rows top to bottom). False once the
  // user has closed the window; true, showing nothing, without one.
  bool show(const std::vector<uint8_t>& rgb);
  // The end: writes the last frame as the PNG `file` and, with
  // --screenshot, what the window shows as a PNG too.
  void finish(const std::filesystem::path& file, const std::vector<uint8_t>& rgb);

 private:
  Options options_;
  std::string name_;
  int width_, height_;
  std::unique_ptr<Window> window_;
};

}  // namespace grove_examples
