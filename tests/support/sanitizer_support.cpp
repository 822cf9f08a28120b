// tests/support/sanitizer_support.cpp — linked into the test programs of an
// AddressSanitizer build (GROVE_SANITIZE=address,...), nowhere else.
//
// LeakSanitizer reports at exit what was never freed. Mesa's lavapipe driver
// (with the LLVM it compiles shaders with) keeps allocations for the life of
// the process that it never frees, and the Vulkan loader unloads the driver
// when the instance goes, so those reports point into an unloaded module
// that no suppression can name. Here the driver and layer libraries the
// loader would open are opened first with RTLD_NODELETE, so they stay
// mapped, and their leaks (and only theirs: third-party code, not Grove's)
// are suppressed by library name below. Every other leak still fails the
// test.
#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

// The "library_path" of every Vulkan ICD and explicit layer manifest.
void pin_vulkan_libraries() {
  dlopen("libvulkan.so.1", RTLD_NOW | RTLD_NODELETE);
  for (const char* dir : {"/usr/share/vulkan/icd.d", "/usr/share/vulkan/explicit_layer.d",
                          "/etc/vulkan/icd.d", "/etc/vulkan/explicit_layer.d"}) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string json = text.str();
      const size_t key = json.find("\"library_path\"");
      if (key == std::string::npos) continue;
      const size_t open = json.find('"', json.find(':', key) + 1);
      const size_t close = json.find('"', open + 1);
      if (open == std::string::npos || close == std::string::npos) continue;
      dlopen(json.substr(open + 1, close - open - 1).c_str(), RTLD_NOW | RTLD_NODELETE);
    }
  }
}

const bool pinned = (pin_vulkan_libraries(), true);

}  // namespace

extern "C" const char* __lsan_default_suppressions() {
  (void)pinned;
  // Mesa's Vulkan drivers and the LLVM they compile shaders with; the Khronos
  // loader and validation layer.
  return "leak:libvulkan_lvp.so\n"
         "leak:libvulkan_radeon.so\n"
         "leak:libvulkan_intel\n"
         "leak:libLLVM\n"
         "leak:libvulkan.so\n"
         "leak:libVkLayer_\n";
}
