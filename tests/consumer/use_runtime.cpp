// use_runtime.cpp — the runtime alone, through an installed Grove: a kernel
// plan round-trips through its byte form, a corrupted one is refused, and
// (when Grove was built with Vulkan and a driver is present) a device opens.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <grove/error.h>

#include "runtime/core/plan.h"
#ifdef GROVE_RUNTIME_VULKAN
#include "runtime/vulkan/vulkan_device.h"
#endif

int main() {
  using namespace grove;
  rt::KernelPlan plan;
  plan.name = "consumer";
  plan.args.push_back({"n", DataType::i32, 0, 1});
  plan.arg_words = 1;
  rt::TaskPlan task;
  task.kind = rt::TaskKind::range_for;
  task.label = "range_for";
  task.parallel = true;
  task.static_iterations = 64;
  plan.tasks.push_back(task);
  plan.code = rt::SpirvCode{.modules = {{0x07230203u, 0x00010300u}}};

  const std::vector<uint8_t> bytes = rt::serialize(plan);
  const rt::KernelPlan back = rt::deserialize_plan(bytes);
  if (back.name != "consumer" || back.tasks.size() != 1 || back.spirv().modules != plan.spirv().modules ||
      back.args.size() != 1 || back.args[0].name != "n") {
    std::printf("the plan did not round-trip\n");
    return 1;
  }
  std::vector<uint8_t> bad(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2));
  try {
    rt::deserialize_plan(bad, "half a plan");
    std::printf("a truncated plan was accepted\n");
    return 1;
  } catch (const Error& e) {
    std::printf("refused: %s\n", e.what());
  }
#ifdef GROVE_RUNTIME_VULKAN
  try {
    std::unique_ptr<rt::Device> device = vk::make_vulkan_device({});
    std::printf("device: %s\n", device->name().c_str());
  } catch (const Error& e) {
    std::printf("no Vulkan device: %s\n", e.what());
  }
#endif
  return 0;
}
