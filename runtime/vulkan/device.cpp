// runtime/vulkan/device.cpp — opening the logical device, the submission
// machinery (recording, fences, serials, deferred destruction), validation
// messages, and the public Device forwarding to DeviceImpl.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>

#include "grove/error.h"
#include "runtime/vulkan/device_impl.h"

namespace grove::vk {

namespace detail {

namespace {

// More submissions in flight than this and the next one waits for the
// oldest: bounds the command buffers, fences and pools a burst of launches
// can create.
constexpr std::size_t kMaxInFlight = 16;

// Recorded messages kept for validation_messages(); later ones are counted.
constexpr std::size_t kMaxRecordedMessages = 1000;

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT types,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                void* user_data) {
  auto* sink = static_cast<MessageSink*>(user_data);
  std::string text = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "[error]" : "[warning]";
  if (types & VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT) text += "[validation]";
  if (types & VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT) text += "[performance]";
  if (data && data->pMessageIdName) text += std::string(" ") + data->pMessageIdName + ":";
  text += " ";
  text += (data && data->pMessage) ? data->pMessage : "(no message)";
  std::function<void(std::string_view)> callback;
  {
    std::lock_guard lock(sink->mutex);
    if (sink->messages.size() < kMaxRecordedMessages) {
      sink->messages.push_back(text);
    } else {
      ++sink->dropped;
    }
    callback = sink->callback;
  }
  if (callback) {
    try {
      callback(text);
    } catch (...) {
      // An exception must not cross the driver's C frames; the message is
      // recorded already.
    }
  }
  return VK_FALSE;  // never abort the call that triggered the message
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string_view(v) != "0";
}

InstanceOptions instance_options(const DeviceOptions& options, MessageSink& sink) {
  sink.callback = options.on_validation_message;
  InstanceOptions out;
  out.validation = options.validation || env_flag("GROVE_VULKAN_VALIDATION");
  out.callback = &on_debug_message;
  out.user_data = &sink;
  return out;
}

// The barrier every submission starts with: all earlier transfer and
// compute writes (in submission order on the one queue) become visible to
// this submission's transfers and shaders, and its writes wait for earlier
// reads. Coarse, but a launch is one submission, so it is paid once.
void record_entry_barrier(const Api& api, VkCommandBuffer cmd) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                          VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                                      VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT;
  api.vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

}  // namespace

// ---------------------------------------------------------------------------
// Recording.

DeviceImpl::Recording::Recording(DeviceImpl& device, std::uint32_t sets, std::uint32_t descriptors)
    : d_(device), s_(device.acquire_submission()) {
  try {
    if (sets > 0 && (s_->pool_sets < sets || s_->pool_descriptors < descriptors)) {
      grow_pool(sets, descriptors);
    }
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    d_.check(d_.api_.vkBeginCommandBuffer(s_->cmd, &begin), "vkBeginCommandBuffer");
    recording_ = true;
    record_entry_barrier(d_.api_, s_->cmd);
  } catch (...) {
    give_back();  // the destructor does not run for a throwing constructor
    throw;
  }
}

DeviceImpl::Recording::~Recording() { give_back(); }

void DeviceImpl::Recording::give_back() noexcept {
  if (!s_) return;  // submitted
  s_->timed.clear();
  if (recording_) d_.api_.vkResetCommandBuffer(s_->cmd, 0);
  if (s_->pool != VK_NULL_HANDLE) d_.api_.vkResetDescriptorPool(d_.device_, s_->pool, 0);
  d_.free_submissions_.push_back(std::move(s_));
}

VkDescriptorSet DeviceImpl::Recording::allocate_set(VkDescriptorSetLayout layout) {
  VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  info.descriptorPool = s_->pool;
  info.descriptorSetCount = 1;
  info.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  d_.check(d_.api_.vkAllocateDescriptorSets(d_.device_, &info, &set), "vkAllocateDescriptorSets",
           "allocating a descriptor set for a launch");
  return set;
}

VkQueryPool DeviceImpl::Recording::start_timing(const std::vector<std::uint32_t>& tags) {
  const auto count = static_cast<std::uint32_t>(tags.size() + 1);
  if (s_->query_capacity < count) {
    if (s_->queries != VK_NULL_HANDLE) d_.api_.vkDestroyQueryPool(d_.device_, s_->queries, nullptr);
    s_->queries = VK_NULL_HANDLE;
    s_->query_capacity = 0;
    VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = std::max<std::uint32_t>(std::bit_ceil(count), 8);
    d_.check(d_.api_.vkCreateQueryPool(d_.device_, &info, nullptr, &s_->queries), "vkCreateQueryPool",
             "creating timestamp queries for the profiler");
    s_->query_capacity = info.queryCount;
  }
  d_.api_.vkCmdResetQueryPool(s_->cmd, s_->queries, 0, count);
  d_.api_.vkCmdWriteTimestamp(s_->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s_->queries, 0);
  s_->timed = tags;
  return s_->queries;
}

std::uint64_t DeviceImpl::Recording::submit() {
  d_.check(d_.api_.vkEndCommandBuffer(s_->cmd), "vkEndCommandBuffer");
  recording_ = false;
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.commandBufferCount = 1;
  info.pCommandBuffers = &s_->cmd;
  d_.check(d_.api_.vkQueueSubmit(d_.queue_, 1, &info, s_->fence), "vkQueueSubmit",
           "submitting work to the compute queue");
  s_->serial = d_.next_serial_++;
  const std::uint64_t serial = s_->serial;
  d_.in_flight_.push_back(std::move(s_));
  return serial;
}

// Each submission has its own descriptor pool, reset when the submission is
// recycled; it is replaced by a larger one when a launch needs more.
void DeviceImpl::Recording::grow_pool(std::uint32_t sets, std::uint32_t descriptors) {
  if (s_->pool != VK_NULL_HANDLE) {
    d_.api_.vkDestroyDescriptorPool(d_.device_, s_->pool, nullptr);
    s_->pool = VK_NULL_HANDLE;
    s_->pool_sets = s_->pool_descriptors = 0;
  }
  // Round up so that a device running similar launches settles quickly.
  const std::uint32_t want_sets = std::max<std::uint32_t>(std::bit_ceil(sets), 8);
  const std::uint32_t want_descriptors = std::max<std::uint32_t>(std::bit_ceil(descriptors), 32);
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, want_descriptors};
  VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  info.maxSets = want_sets;
  info.poolSizeCount = 1;
  info.pPoolSizes = &size;
  d_.check(d_.api_.vkCreateDescriptorPool(d_.device_, &info, nullptr, &s_->pool),
           "vkCreateDescriptorPool",
           "creating a descriptor pool for " + std::to_string(want_sets) + " sets of " +
               std::to_string(want_descriptors) + " storage buffers");
  s_->pool_sets = want_sets;
  s_->pool_descriptors = want_descriptors;
}

// ---------------------------------------------------------------------------
// Creation and destruction.

DeviceImpl::DeviceImpl(const DeviceOptions& options)
    : instance_(instance_options(options, sink_)), api_(instance_.api()) {
  std::vector<PhysicalDevice> devices = instance_.physical_devices();
  std::string select = options.select;
  if (select.empty()) {
    if (const char* env = std::getenv("GROVE_VULKAN_DEVICE")) select = env;
  }
  const PhysicalDevice& physical = devices[select_device(devices, select)];
  info_ = apply_profile(physical.info, options.profile);
  physical_ = physical.handle;
  memory_props_ = physical.memory;
  queue_family_ = physical.queue_family;
  try {
    open_device(physical);
  } catch (...) {
    release();
    throw;
  }
}

DeviceImpl::DeviceImpl(const ExternalDevice& external, const DeviceOptions& options)
    : instance_(external), api_(instance_.api()) {
  owns_device_ = false;
  if (options.validation)
    throw Error("DeviceOptions::validation cannot be applied to an adopted Vulkan device: enable "
                "VK_LAYER_KHRONOS_validation on the application's own VkInstance");
  for (auto [handle, field] : {std::pair{external.physical_device, "physical_device (a VkPhysicalDevice)"},
                               std::pair{external.device, "device (a VkDevice)"},
                               std::pair{external.queue, "queue (a VkQueue)"}}) {
    if (handle == nullptr) throw Error(std::string("VulkanHandles::") + field + " is null");
  }
  const std::vector<PhysicalDevice> devices = instance_.physical_devices();
  const PhysicalDevice* physical = nullptr;
  for (const PhysicalDevice& d : devices)
    if (d.handle == static_cast<VkPhysicalDevice>(external.physical_device)) physical = &d;
  if (physical == nullptr)
    throw Error("VulkanHandles::physical_device is not one of the physical devices of "
                "VulkanHandles::instance (" + std::to_string(devices.size()) + " enumerated)");
  DeviceInfo info = physical->info;
  if (info.api_version < kMinApiVersion || physical->api_version < kMinApiVersion)
    throw Error("Vulkan device " + info.name + " cannot run Grove kernels: it " + info.unsupported_reason);
  std::uint32_t family_count = 0;
  api_.vkGetPhysicalDeviceQueueFamilyProperties(physical->handle, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  api_.vkGetPhysicalDeviceQueueFamilyProperties(physical->handle, &family_count, families.data());
  if (external.queue_family >= family_count || !(families[external.queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
    throw Error("VulkanHandles::queue_family " + std::to_string(external.queue_family) + " of " + info.name +
                (external.queue_family >= family_count ? " does not exist (" + std::to_string(family_count) +
                                                             " families)"
                                                       : std::string(" does not support compute")) +
                "; pass a queue of a family with VK_QUEUE_COMPUTE_BIT");
  info.unsupported_reason.clear();
  // Only what the application enabled on its VkDevice may be used.
  info.shader_int64 = info.shader_int64 && external.shader_int64;
  info.shader_float64 = info.shader_float64 && external.shader_float64;
  info.shader_int16 = info.shader_int16 && external.shader_int16;
  info.storage_buffer_16bit = info.storage_buffer_16bit && external.storage_buffer_16bit;
  info.atomic_int64 = info.atomic_int64 && external.atomic_int64;
  info.atomic_float32_add = info.atomic_float32_add && external.atomic_float32_add;
  info.atomic_float32_min_max = info.atomic_float32_min_max && external.atomic_float32_min_max;
  // Before Vulkan 1.2 float controls is an extension the application may not
  // have enabled on its VkDevice (nothing says whether it did).
  info.signed_zero_inf_nan_preserve = info.signed_zero_inf_nan_preserve && physical->api_version >= VK_API_VERSION_1_2;
  info.denorm_preserve = info.denorm_preserve && physical->api_version >= VK_API_VERSION_1_2;
  info_ = apply_profile(info, options.profile);
  physical_ = physical->handle;
  memory_props_ = physical->memory;
  queue_family_ = external.queue_family;
  device_ = static_cast<VkDevice>(external.device);
  try {
    api_.load_device(device_);
    queue_ = static_cast<VkQueue>(external.queue);
    create_command_pool();
  } catch (...) {
    release();
    throw;
  }
}

void DeviceImpl::open_device(const PhysicalDevice& physical) {
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = queue_family_;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;

  // Enable exactly the features info_ reports (the profile already applied),
  // so that a shader using a capped feature fails validation.
  VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features2.features.shaderInt64 = info_.shader_int64;
  features2.features.shaderFloat64 = info_.shader_float64;
  features2.features.shaderInt16 = info_.shader_int16;
  VkPhysicalDevice16BitStorageFeatures storage16{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  storage16.storageBuffer16BitAccess = info_.storage_buffer_16bit;
  VkPhysicalDeviceShaderAtomicInt64Features atomic_int64{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES};
  atomic_int64.shaderBufferInt64Atomics = info_.atomic_int64;
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  atomic_float.shaderBufferFloat32AtomicAdd = info_.atomic_float32_add;
  atomic_float.shaderBufferFloat32Atomics =
      (info_.atomic_float32_add || info_.atomic_float32_min_max) && physical.float32_atomic_load_store;
  VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT atomic_float2{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_2_FEATURES_EXT};
  atomic_float2.shaderBufferFloat32AtomicMinMax = info_.atomic_float32_min_max;

  std::vector<const char*> extensions;
  void** tail = &features2.pNext;
  auto append = [&tail](auto& s) {
    *tail = &s;
    tail = &s.pNext;
  };
  append(storage16);
  if (info_.atomic_int64) {
    if (physical.api_version < VK_API_VERSION_1_2) {
      extensions.push_back(VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME);
    }
    append(atomic_int64);
  }
  if (info_.atomic_float32_add || info_.atomic_float32_min_max) {
    extensions.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME);
    append(atomic_float);
  }
  if (info_.atomic_float32_min_max) {
    extensions.push_back(VK_EXT_SHADER_ATOMIC_FLOAT_2_EXTENSION_NAME);
    append(atomic_float2);
  }
  if (info_.signed_zero_inf_nan_preserve && physical.api_version < VK_API_VERSION_1_2)
    extensions.push_back(VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);

  VkDeviceCreateInfo create{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  create.pNext = &features2;
  create.queueCreateInfoCount = 1;
  create.pQueueCreateInfos = &queue_info;
  create.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  create.ppEnabledExtensionNames = extensions.data();
  check(api_.vkCreateDevice(physical_, &create, nullptr, &device_), "vkCreateDevice",
        "opening Vulkan device " + std::to_string(info_.index) + " (" + info_.name + ")");

  // Device-level pointers loaded into this DeviceImpl's copy of the table
  // call straight into the driver for this VkDevice.
  api_.load_device(device_);
  api_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  create_command_pool();
}

void DeviceImpl::create_command_pool() {
  VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = queue_family_;
  check(api_.vkCreateCommandPool(device_, &pool_info, nullptr, &command_pool_),
        "vkCreateCommandPool", "creating the command pool");
}

DeviceImpl::~DeviceImpl() { release(); }

void DeviceImpl::release() noexcept {
  if (device_ == VK_NULL_HANDLE) return;
  if (!api_.vkDestroyDevice || !api_.vkDeviceWaitIdle) {
    // Loading the device table failed (a driver without core entry points):
    // nothing else was created, and the device cannot be destroyed.
    device_ = VK_NULL_HANDLE;
    return;
  }
  // Nothing may be destroyed while the queue still uses it. A lost device
  // reports an error here; everything is destroyed regardless. On an
  // adopted device only Grove's own submissions are waited for (the
  // application's work on the device is none of Grove's business).
  if (owns_device_) {
    api_.vkDeviceWaitIdle(device_);
  } else {
    for (auto& s : in_flight_) api_.vkWaitForFences(device_, 1, &s->fence, VK_TRUE, UINT64_MAX);
  }
  for (auto& s : in_flight_) destroy_submission(*s);
  in_flight_.clear();
  for (auto& s : free_submissions_) destroy_submission(*s);
  free_submissions_.clear();
  for (const Garbage& g : garbage_) destroy_garbage(g);
  garbage_.clear();
  for (Pipeline& p : pipelines_) {
    if (p.live) destroy_garbage(Garbage{0, VK_NULL_HANDLE, VK_NULL_HANDLE, p.pipeline, p.layout, p.set_layout});
  }
  pipelines_.clear();
  for (Buffer& b : buffers_) {
    if (b.live) destroy_garbage(Garbage{0, b.buffer, b.memory});
  }
  buffers_.clear();
  destroy_garbage(Garbage{0, staging_.buffer, staging_.memory});
  staging_ = Staging{};
  if (command_pool_ != VK_NULL_HANDLE) api_.vkDestroyCommandPool(device_, command_pool_, nullptr);
  for (VkDescriptorPool p : recorded_pools_) api_.vkDestroyDescriptorPool(device_, p, nullptr);
  recorded_pools_.clear();
  recorded_sets_.clear();
  if (owns_device_) api_.vkDestroyDevice(device_, nullptr);
  command_pool_ = VK_NULL_HANDLE;
  device_ = VK_NULL_HANDLE;
  // instance_ (messenger, instance, loader) and then sink_ are destroyed
  // after this, as members.
}

// ---------------------------------------------------------------------------
// Errors and names.

void DeviceImpl::check(VkResult result, std::string_view call, std::string_view what) {
  if (result == VK_SUCCESS) return;
  if (result == VK_ERROR_DEVICE_LOST) lost_ = true;
  throw_result(result, call, what);
}

void DeviceImpl::ensure_usable() const {
  if (lost_) {
    throw Error("the Vulkan device " + info_.name +
                " was lost earlier (see the first error); create a new grove::vk::Device");
  }
}

void DeviceImpl::set_debug_name(VkObjectType type, std::uint64_t handle, const std::string& name) {
  if (!instance_.has_debug_utils() || name.empty()) return;
  VkDebugUtilsObjectNameInfoEXT info{VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT};
  info.objectType = type;
  info.objectHandle = handle;
  info.pObjectName = name.c_str();
  api_.vkSetDebugUtilsObjectNameEXT(device_, &info);  // a name is a nicety; ignore failure
}

std::vector<std::string> DeviceImpl::validation_messages() const {
  std::lock_guard lock(sink_.mutex);
  std::vector<std::string> out = sink_.messages;
  if (sink_.dropped > 0) {
    out.push_back("(" + std::to_string(sink_.dropped) + " more validation messages not kept)");
  }
  return out;
}

void DeviceImpl::clear_validation_messages() {
  std::lock_guard lock(sink_.mutex);
  sink_.messages.clear();
  sink_.dropped = 0;
}

// ---------------------------------------------------------------------------
// Submissions, serials and deferred destruction.

std::unique_ptr<DeviceImpl::Submission> DeviceImpl::acquire_submission() {
  poll_finished();
  if (in_flight_.size() >= kMaxInFlight) wait_for(in_flight_.front()->serial);
  if (!free_submissions_.empty()) {
    std::unique_ptr<Submission> s = std::move(free_submissions_.back());
    free_submissions_.pop_back();
    return s;
  }
  auto s = std::make_unique<Submission>();
  try {
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = command_pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    check(api_.vkAllocateCommandBuffers(device_, &alloc, &s->cmd), "vkAllocateCommandBuffers",
          "allocating a command buffer");
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(api_.vkCreateFence(device_, &fence, nullptr, &s->fence), "vkCreateFence",
          "creating a fence");
  } catch (...) {
    destroy_submission(*s);
    throw;
  }
  return s;
}

void DeviceImpl::destroy_submission(Submission& s) noexcept {
  if (s.queries != VK_NULL_HANDLE) api_.vkDestroyQueryPool(device_, s.queries, nullptr);
  if (s.pool != VK_NULL_HANDLE) api_.vkDestroyDescriptorPool(device_, s.pool, nullptr);
  if (s.fence != VK_NULL_HANDLE) api_.vkDestroyFence(device_, s.fence, nullptr);
  if (s.cmd != VK_NULL_HANDLE) api_.vkFreeCommandBuffers(device_, command_pool_, 1, &s.cmd);
  s = Submission{};
}

void DeviceImpl::poll_finished() {
  while (!in_flight_.empty()) {
    const VkResult r = api_.vkGetFenceStatus(device_, in_flight_.front()->fence);
    if (r == VK_NOT_READY) return;
    check(r, "vkGetFenceStatus", "checking for finished work");
    finish_oldest();
  }
}

void DeviceImpl::wait_for(std::uint64_t serial) {
  while (!in_flight_.empty() && in_flight_.front()->serial <= serial) {
    check(api_.vkWaitForFences(device_, 1, &in_flight_.front()->fence, VK_TRUE, UINT64_MAX),
          "vkWaitForFences", "waiting for queued work to finish");
    finish_oldest();
  }
}

// The oldest submission's fence has signalled: recycle it.
void DeviceImpl::finish_oldest() {
  std::unique_ptr<Submission> s = std::move(in_flight_.front());
  in_flight_.pop_front();
  completed_serial_ = s->serial;
  if (!s->timed.empty()) read_timings(*s);
  const VkResult r = api_.vkResetFences(device_, 1, &s->fence);
  if (r != VK_SUCCESS) {
    destroy_submission(*s);  // cannot reuse it; a fresh one will be made
  } else {
    if (s->pool != VK_NULL_HANDLE) api_.vkResetDescriptorPool(device_, s->pool, 0);
    free_submissions_.push_back(std::move(s));
  }
  collect_garbage();
  check(r, "vkResetFences", "recycling a finished submission");
}

void DeviceImpl::collect_garbage() noexcept {
  auto done = [this](const Garbage& g) { return g.serial <= completed_serial_; };
  for (const Garbage& g : garbage_) {
    if (done(g)) destroy_garbage(g);
  }
  std::erase_if(garbage_, done);
}

void DeviceImpl::destroy_garbage(const Garbage& g) noexcept {
  if (g.pipeline != VK_NULL_HANDLE) api_.vkDestroyPipeline(device_, g.pipeline, nullptr);
  if (g.layout != VK_NULL_HANDLE) api_.vkDestroyPipelineLayout(device_, g.layout, nullptr);
  if (g.set_layout != VK_NULL_HANDLE) api_.vkDestroyDescriptorSetLayout(device_, g.set_layout, nullptr);
  if (g.buffer != VK_NULL_HANDLE) api_.vkDestroyBuffer(device_, g.buffer, nullptr);
  if (g.memory != VK_NULL_HANDLE) api_.vkFreeMemory(device_, g.memory, nullptr);
}

void DeviceImpl::sync() {
  ensure_usable();
  wait_for(next_serial_ - 1);
}

// ---------------------------------------------------------------------------
// Timing.

void DeviceImpl::set_timing(bool on) {
  ensure_usable();
  if (on && timestamp_mask_ == 0) {
    std::uint32_t family_count = 0;
    api_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, nullptr);
    std::vector<VkQueueFamilyProperties> families(family_count);
    api_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &family_count, families.data());
    VkPhysicalDeviceProperties props{};
    api_.vkGetPhysicalDeviceProperties(physical_, &props);
    const std::uint32_t bits = queue_family_ < family_count ? families[queue_family_].timestampValidBits : 0;
    if (bits == 0 || props.limits.timestampPeriod <= 0)
      throw Error("Vulkan device " + info_.name + " has no timestamps on its compute queue (queue family " +
                  std::to_string(queue_family_) + "), so the profiler cannot time its kernels; profile on "
                  "another device or backend");
    timestamp_mask_ = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    timestamp_ns_ = props.limits.timestampPeriod;
  }
  timing_ = on;
}

void DeviceImpl::read_timings(Submission& s) noexcept {
  const std::size_t n = s.timed.size();
  std::vector<std::uint64_t> ticks;
  try {
    ticks.resize(n + 1);
  } catch (const std::bad_alloc&) {
    s.timed.clear();
    return;
  }
  const VkResult r = api_.vkGetQueryPoolResults(device_, s.queries, 0, static_cast<std::uint32_t>(n + 1),
                                                ticks.size() * sizeof(std::uint64_t), ticks.data(),
                                                sizeof(std::uint64_t), VK_QUERY_RESULT_64_BIT);
  // Called while a finished submission is recycled, which must not throw:
  // times that cannot be kept (no memory) are dropped.
  try {
    if (r == VK_SUCCESS) {
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t delta = (ticks[i + 1] - ticks[i]) & timestamp_mask_;
        timings_.push_back({s.timed[i], static_cast<double>(delta) * timestamp_ns_ * 1e-9});
      }
    }
  } catch (const std::bad_alloc&) {
  }
  s.timed.clear();
}

std::vector<DispatchTime> DeviceImpl::take_timings() {
  if (!lost_) poll_finished();
  return std::exchange(timings_, {});
}

}  // namespace detail

// ---------------------------------------------------------------------------
// The public class forwards to DeviceImpl.

Device::Device(std::unique_ptr<detail::DeviceImpl> impl) : impl_(std::move(impl)) {}
Device::~Device() = default;

std::unique_ptr<Device> Device::create(const DeviceOptions& options) {
  return std::unique_ptr<Device>(new Device(std::make_unique<detail::DeviceImpl>(options)));
}

std::unique_ptr<Device> Device::adopt(const ExternalDevice& external, const DeviceOptions& options) {
  return std::unique_ptr<Device>(new Device(std::make_unique<detail::DeviceImpl>(external, options)));
}

const DeviceInfo& Device::info() const { return impl_->info(); }
BufferId Device::create_buffer(std::uint64_t bytes, std::string_view debug_name) {
  return impl_->create_buffer(bytes, debug_name);
}
void Device::destroy_buffer(BufferId buffer) { impl_->destroy_buffer(buffer); }
std::uint64_t Device::buffer_size(BufferId buffer) const { return impl_->buffer_size(buffer); }
void Device::write_buffer(BufferId buffer, std::uint64_t offset, const void* data, std::uint64_t bytes) {
  impl_->write_buffer(buffer, offset, data, bytes);
}
void Device::read_buffer(BufferId buffer, std::uint64_t offset, void* out, std::uint64_t bytes) {
  impl_->read_buffer(buffer, offset, out, bytes);
}
std::span<std::byte> Device::host_memory(BufferId buffer) { return impl_->host_memory(buffer); }
void Device::fill_buffer(BufferId buffer, std::uint64_t offset, std::uint64_t bytes, std::uint32_t value) {
  impl_->fill_buffer(buffer, offset, bytes, value);
}
PipelineId Device::create_pipeline(std::span<const std::uint32_t> spirv, const std::string& entry_point,
                                   std::uint32_t num_buffers, std::uint32_t push_constant_bytes,
                                   const std::string& debug_name) {
  return impl_->create_pipeline(spirv, entry_point, num_buffers, push_constant_bytes, debug_name);
}
std::vector<PipelineId> Device::create_pipelines(std::span<const PipelineRequest> requests) {
  return impl_->create_pipelines(requests);
}
void Device::destroy_pipeline(PipelineId pipeline) { impl_->destroy_pipeline(pipeline); }
std::size_t Device::pipeline_count() const { return impl_->pipeline_count(); }
void Device::launch(const std::vector<Dispatch>& dispatches) { impl_->launch(dispatches); }
void Device::record(void* command_buffer, const std::vector<Dispatch>& dispatches) {
  impl_->record(command_buffer, dispatches);
}
void Device::record_barrier(void* command_buffer, std::uint32_t dst_stage_mask, std::uint32_t dst_access_mask) {
  impl_->record_barrier(command_buffer, dst_stage_mask, dst_access_mask);
}
void* Device::buffer_handle(BufferId buffer) const { return impl_->buffer_handle(buffer); }
ExternalDevice Device::handles() const { return impl_->handles(); }
void Device::sync() { impl_->sync(); }
void Device::set_timing(bool on) { impl_->set_timing(on); }
std::vector<DispatchTime> Device::take_timings() { return impl_->take_timings(); }
std::vector<std::string> Device::validation_messages() const { return impl_->validation_messages(); }
void Device::clear_validation_messages() { impl_->clear_validation_messages(); }

}  // namespace grove::vk
