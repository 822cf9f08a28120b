// src/program/test_hooks.cpp — the process-wide state behind test_hooks.h.
#include "program/test_hooks.h"

#include <mutex>

namespace grove::detail {

namespace {
std::mutex g_mutex;
VulkanTestProfile g_profile;
std::vector<std::string> g_messages;
}  // namespace

void set_vulkan_test_profile(const VulkanTestProfile& profile) {
  std::lock_guard lock(g_mutex);
  g_profile = profile;
}

VulkanTestProfile vulkan_test_profile() {
  std::lock_guard lock(g_mutex);
  return g_profile;
}

std::vector<std::string> vulkan_validation_messages() {
  std::lock_guard lock(g_mutex);
  return g_messages;
}

void record_vulkan_validation_message(std::string message) {
  std::lock_guard lock(g_mutex);
  g_messages.push_back(std::move(message));
}

}  // namespace grove::detail
