// vulkan_common.cpp — see vulkan_common.h.
#include "vulkan_common.h"

#include <utility>

#include "program/program_impl.h"
#include "program/test_hooks.h"
#include "shaders/embedded.h"

namespace grove_bench::vkb {

bool device_available(std::string* why) {
  try {
    for (const grove::vk::DeviceInfo& info : grove::vk::enumerate_devices()) {
      if (info.unsupported_reason.empty()) return true;
    }
    *why = "no usable Vulkan device";
  } catch (const grove::Error& e) {
    *why = e.what();
  }
  return false;
}

std::unique_ptr<grove::vk::Device> open_device() {
  grove::vk::DeviceOptions options;  // select "": GROVE_VULKAN_DEVICE, else the best device
  return grove::vk::Device::create(options);
}

std::shared_ptr<grove::vk::Device> device_of(std::shared_ptr<const void> owner, const grove::Program& program) {
  grove::vk::Device* device = grove::detail::vulkan_device(program);
  if (device == nullptr) throw grove::Error("the program does not run on Vulkan");
  return {std::move(owner), device};
}

grove::vk::PipelineId shader_pipeline(grove::vk::Device& device, std::span<const std::uint32_t> spirv,
                                      std::uint32_t num_buffers, std::uint32_t push_constant_bytes,
                                      const std::string& name) {
  if (spirv.empty()) throw grove::Error("shader '" + name + "' is not embedded (shaders/CMakeLists.txt)");
  return device.create_pipeline(spirv, "main", num_buffers, push_constant_bytes, name);
}

namespace {

class VulkanHandWritten : public gpu::HandWritten {
 public:
  explicit VulkanHandWritten(std::shared_ptr<grove::vk::Device> device) : dev_(std::move(device)) {}

  Buffer create_buffer(std::uint64_t bytes, const std::string& name) override {
    buffers_.push_back(dev_->create_buffer(bytes, name));
    return static_cast<Buffer>(buffers_.size() - 1);
  }
  void write(Buffer buffer, std::uint64_t offset, const void* data, std::uint64_t bytes) override {
    dev_->write_buffer(buffers_.at(static_cast<size_t>(buffer)), offset, data, bytes);
  }
  void fill(Buffer buffer, std::uint64_t offset, std::uint64_t bytes, std::uint32_t word) override {
    dev_->fill_buffer(buffers_.at(static_cast<size_t>(buffer)), offset, bytes, word);
  }
  void read(Buffer buffer, std::uint64_t offset, void* out, std::uint64_t bytes) override {
    dev_->read_buffer(buffers_.at(static_cast<size_t>(buffer)), offset, out, bytes);
  }
  // The shader declares its group size (local_size_x); `group_size` only
  // says what it is.
  Launch prepare(const std::string& kernel, std::vector<Buffer> buffers, std::vector<std::uint32_t> params,
                 std::uint32_t groups, std::uint32_t /*group_size*/) override {
    grove::vk::Dispatch d;
    d.pipeline = shader_pipeline(*dev_, grove::shaders::find(kernel), static_cast<std::uint32_t>(buffers.size()),
                                 static_cast<std::uint32_t>(params.size() * 4), kernel);
    for (Buffer b : buffers) d.buffers.push_back(buffers_.at(static_cast<size_t>(b)));
    d.push_constants = std::move(params);
    d.group_count_x = groups;
    launches_.push_back({std::move(d)});
    return static_cast<Launch>(launches_.size() - 1);
  }
  void launch(Launch launch) override { dev_->launch(launches_.at(static_cast<size_t>(launch))); }
  void sync() override { dev_->sync(); }
  bool float_atomic_add() const override { return dev_->info().atomic_float32_add; }
  double peak_bytes_per_second() const override { return 0; }  // Vulkan does not say

 private:
  std::shared_ptr<grove::vk::Device> dev_;
  std::vector<grove::vk::BufferId> buffers_;
  std::vector<std::vector<grove::vk::Dispatch>> launches_;  // one dispatch each
};

}  // namespace

std::shared_ptr<gpu::HandWritten> hand_written(std::shared_ptr<const void> owner, const grove::Program& program) {
  return std::make_shared<VulkanHandWritten>(device_of(std::move(owner), program));
}

}  // namespace grove_bench::vkb
