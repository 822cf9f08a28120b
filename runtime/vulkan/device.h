// runtime/vulkan/device.h — the Vulkan device layer: devices, storage
// buffers, compute pipelines from SPIR-V words, and ordered launches.
// It knows nothing of Grove's IR and includes no Vulkan header; the Vulkan
// loader is opened at run time, so this links on machines without Vulkan.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grove/runtime.h"

namespace grove::vk {

namespace detail {
class DeviceImpl;
}

enum class DeviceType { discrete_gpu, integrated_gpu, virtual_gpu, cpu, other };

// "discrete GPU", "integrated GPU", "virtual GPU", "CPU", "other".
const char* to_string(DeviceType type);

// "major.minor.patch" of a Vulkan packed version number.
std::string version_string(std::uint32_t packed_version);

// What a physical device is and can do. Features are those Grove would
// enable on it (for Device::info(): after the DeviceProfile caps).
struct DeviceInfo {
  std::uint32_t index = 0;  // position in vkEnumeratePhysicalDevices
  std::string name;         // e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::uint32_t vendor_id = 0;
  std::uint32_t device_id = 0;
  DeviceType type = DeviceType::other;
  std::uint32_t api_version = 0;  // packed; see version_string()
  std::uint32_t driver_version = 0;
  // Empty if Grove can run on the device, else why not (no compute queue,
  // Vulkan older than 1.1).
  std::string unsupported_reason;

  // Shader features (SPIR-V capabilities the code generator may use).
  bool shader_int64 = false;            // Int64
  bool shader_float64 = false;          // Float64
  bool shader_int16 = false;            // Int16
  bool storage_buffer_16bit = false;    // StorageBuffer16BitAccess
  bool atomic_int64 = false;            // Int64Atomics on storage buffers
  bool atomic_float32_add = false;      // VK_EXT_shader_atomic_float: AtomicFloat32AddEXT
  bool atomic_float32_min_max = false;  // VK_EXT_shader_atomic_float2: AtomicFloat32MinMaxEXT
  // Float controls (Vulkan 1.2, or VK_KHR_shader_float_controls): IEEE signed
  // zeros, infinities and NaN kept through f32 arithmetic, and through f64
  // arithmetic too where the device has f64 (SignedZeroInfNanPreserve).
  bool signed_zero_inf_nan_preserve = false;
  // f32 denormals kept (DenormPreserve for 32-bit floats); without it a
  // driver may flush them to zero.
  bool denorm_preserve = false;

  // Limits.
  std::uint64_t max_storage_buffer_range = 0;    // bytes one buffer may have
  std::uint64_t max_memory_allocation_size = 0;  // bytes (maintenance3)
  std::array<std::uint32_t, 3> max_compute_workgroup_count{};
  std::uint32_t max_compute_workgroup_size_x = 0;
  std::uint32_t max_compute_workgroup_invocations = 0;
  std::uint32_t max_push_constants_size = 0;        // bytes (>= 128 everywhere)
  std::uint32_t max_storage_buffers_per_stage = 0;  // as few as 4 on some mobile GPUs
  std::uint32_t subgroup_size = 0;
  bool subgroup_arithmetic = false;  // subgroup reduce, elect and broadcast (ballot) in compute shaders

  // Memory: device-local memory the host can map, coherent and cached (a
  // CPU device such as lavapipe, integrated and most mobile GPUs). Storage
  // buffers then live in it, mapped once, and the host reads them and
  // writes whole-field copies in place instead of through staging copies
  // (Device::host_memory).
  bool unified_memory = false;
};

// Every physical device the Vulkan loader reports, in its order. Throws
// grove::Error if there is no Vulkan loader; returns an empty list if the
// loader finds no device.
std::vector<DeviceInfo> enumerate_devices();

// Caps that make a device look smaller (mobile-like), to test fallbacks.
// A capped feature is neither reported nor enabled on the VkDevice, so the
// validation layer flags any shader that still uses it.
struct DeviceProfile {
  bool no_int64 = false;          // shader_int64 and atomic_int64 off
  bool no_float64 = false;        // shader_float64 off
  bool no_float_atomics = false;  // atomic_float32_add and _min_max off
  bool no_float_controls = false;  // signed_zero_inf_nan_preserve off
  bool no_unified_memory = false;  // unified_memory off: staging copies, as on a discrete GPU
  std::uint64_t max_storage_buffer_range = 0;  // 0 = the device's own limit
  // Caps maxComputeWorkGroupInvocations and maxComputeWorkGroupSize[0]
  // (0 = the device's own limits; Vulkan guarantees 128).
  std::uint32_t max_workgroup_invocations = 0;
};

struct DeviceOptions {
  // "" = the best device (discrete GPU, then integrated, virtual, CPU), or
  // a decimal index into enumerate_devices(), or a case-insensitive
  // substring of the device name (the first usable match). If empty, the
  // environment variable GROVE_VULKAN_DEVICE is used instead.
  std::string select;
  // Enables VK_LAYER_KHRONOS_validation with synchronization validation and
  // routes every warning and error it reports through a debug-utils
  // messenger. GROVE_VULKAN_VALIDATION=1 in the environment enables it too.
  bool validation = false;
  // Called for each validation message, on whichever thread the driver
  // reports it from (create_pipelines compiles on several threads, so two
  // calls may overlap); exceptions it throws are swallowed. Messages are
  // recorded for validation_messages() either way.
  std::function<void(std::string_view)> on_validation_message;
  DeviceProfile profile;
};

// Vulkan objects an application created, for Device::adopt: Grove records
// into the application's device and queue and never destroys them. The
// public struct of grove_runtime (grove/runtime.h): handles as void*, and
// the features the application enabled on its VkDevice.
using ExternalDevice = grove::runtime::VulkanHandles;

// Handles to objects a Device owns. A default-constructed id is invalid;
// an id whose object was destroyed is rejected with grove::Error.
struct BufferId {
  std::uint32_t slot = UINT32_MAX;
  std::uint32_t generation = 0;
  friend bool operator==(const BufferId&, const BufferId&) = default;
};
struct PipelineId {
  std::uint32_t slot = UINT32_MAX;
  std::uint32_t generation = 0;
  friend bool operator==(const PipelineId&, const PipelineId&) = default;
};

// What create_pipeline takes, for create_pipelines.
struct PipelineRequest {
  std::span<const std::uint32_t> spirv;
  std::string entry_point;
  std::uint32_t num_buffers = 0;
  std::uint32_t push_constant_bytes = 0;
  std::string debug_name;
};

// One vkCmdDispatch(group_count_x, group_count_y, group_count_z) of a
// pipeline: that grid of workgroups of the shader's LocalSize (a count of 0
// runs nothing). buffers[i] is bound to
// binding i of descriptor set 0, whole; push_constants fill the push-constant
// block word by word from offset 0.
//
// What SPIR-V for create_pipeline must look like: a GLCompute entry point
// with LocalSize (x, y, z); Vulkan 1.1 environment (SPIR-V 1.3 or older);
// storage buffers as Block-decorated structs in the StorageBuffer storage
// class at DescriptorSet 0, Binding 0..num_buffers-1; at most one
// PushConstant block, starting at offset 0; only the capabilities
// info() reports (the validation layer rejects the others).
//
// An indirect dispatch (indirect_buffer set) takes its group counts from
// three words of that buffer at indirect_offset (a multiple of 4), as an
// earlier dispatch of the same launch wrote them: vkCmdDispatchIndirect,
// whose group counts are then unused.
struct Dispatch {
  PipelineId pipeline;
  std::vector<BufferId> buffers;
  std::vector<std::uint32_t> push_constants;
  std::uint32_t group_count_x = 1;
  std::uint32_t group_count_y = 1;
  std::uint32_t group_count_z = 1;
  std::optional<BufferId> indirect_buffer;
  std::uint64_t indirect_offset = 0;
  // Names the dispatch in Device::take_timings().
  std::uint32_t tag = 0;
};

// The device time of one timed dispatch (Device::take_timings).
struct DispatchTime {
  std::uint32_t tag = 0;  // its Dispatch::tag
  double seconds = 0;
};

// A logical Vulkan device with one compute queue. Owns every Vulkan object
// it hands out; ids are plain handles into its tables. Not thread-safe: call
// it from one thread at a time.
class Device {
 public:
  // Throws grove::Error if there is no loader, no (matching) device, or the
  // validation layer was requested but is not installed.
  static std::unique_ptr<Device> create(const DeviceOptions& options = {});
  // A Device on an application's own VkDevice and queue (an engine's
  // renderer, say). Grove creates its buffers, pipelines, command pool and
  // fences there, and destroys only those: destroying the Device waits for
  // Grove's own submissions, never for the application's, and leaves the
  // instance, device and queue to the application. Vulkan's rule on queues
  // holds: the application must not submit to that queue from another
  // thread while a Grove call runs. `options` may select a profile;
  // validation is the application's (enable the layer on its instance).
  // Raises grove::Error naming the field that is missing or wrong.
  static std::unique_ptr<Device> adopt(const ExternalDevice& external, const DeviceOptions& options = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The selected device, with DeviceOptions::profile applied.
  const DeviceInfo& info() const;

  // A device-local storage buffer of `bytes` bytes (1 <= bytes <=
  // info().max_storage_buffer_range), zero-filled before any later command
  // runs. `debug_name` labels it in validation messages.
  BufferId create_buffer(std::uint64_t bytes, std::string_view debug_name = {});
  // Frees the buffer once the work already queued that uses it finishes.
  void destroy_buffer(BufferId buffer);
  std::uint64_t buffer_size(BufferId buffer) const;
  // Copies through a host-visible staging buffer. Any offset and size.
  // write_buffer returns once `data` is copied out (the upload runs after
  // all queued work); read_buffer waits for all queued work, then reads.
  // On a device of unified memory (DeviceInfo::unified_memory) read_buffer
  // reads the buffer's own mapping, without a staging copy.
  void write_buffer(BufferId buffer, std::uint64_t offset, const void* data, std::uint64_t bytes);
  void read_buffer(BufferId buffer, std::uint64_t offset, void* out, std::uint64_t bytes);
  // On a device of unified memory: waits for all queued work (and, with
  // the application's device, for all work submitted to the queue before),
  // makes the device's writes visible to the host, and returns the
  // buffer's bytes, which the host may read and write until the next
  // launch, transfer or recording; host writes are seen by work submitted
  // after them. Empty on other devices (use read_buffer and write_buffer).
  std::span<std::byte> host_memory(BufferId buffer);
  // Sets `bytes` bytes from `offset` to the 32-bit `value` (vkCmdFillBuffer);
  // offset and bytes must be multiples of 4. Queued, does not wait.
  void fill_buffer(BufferId buffer, std::uint64_t offset, std::uint64_t bytes, std::uint32_t value);

  // A compute pipeline from SPIR-V words. Descriptor set 0 holds `num_buffers`
  // storage buffers at bindings 0..num_buffers-1; the push-constant block is
  // `push_constant_bytes` bytes (a multiple of 4, at most
  // info().max_push_constants_size). `debug_name` names the pipeline in
  // errors and validation messages.
  PipelineId create_pipeline(std::span<const std::uint32_t> spirv, const std::string& entry_point,
                             std::uint32_t num_buffers, std::uint32_t push_constant_bytes,
                             const std::string& debug_name);
  // Several pipelines at once, compiled on as many threads as the host has
  // cores (a kernel's tasks); all or none (the first failing request's
  // error, in request order).
  std::vector<PipelineId> create_pipelines(std::span<const PipelineRequest> requests);
  // Frees the pipeline once the work already queued that uses it finishes.
  void destroy_pipeline(PipelineId pipeline);
  // The pipelines this device holds (made and not destroyed).
  std::size_t pipeline_count() const;

  // Records the dispatches in order into one command buffer, with a
  // compute->compute memory barrier between consecutive dispatches, and
  // submits it without waiting. Work is ordered with everything queued
  // before (launches and transfers alike). Each dispatch gets a fresh
  // descriptor set from a pool owned by its submission, recycled when the
  // submission's fence signals (no VK_KHR_push_descriptor: one path on every
  // device). Bad ids, buffer counts, push-constant sizes or group counts
  // throw grove::Error before anything is recorded.
  void launch(const std::vector<Dispatch>& dispatches);
  // Waits until all queued work has finished.
  void sync();

  // ---- timing (the profiler) ----
  // While on, launch() measures the device time of each dispatch with
  // timestamp queries: from the end of the work before it on the queue to
  // its own end (record() is not timed). Throws grove::Error when the
  // compute queue has no timestamps.
  void set_timing(bool on);
  // The times of the timed dispatches of launches that have finished since
  // the last call, in submission order.
  std::vector<DispatchTime> take_timings();

  // ---- embedding in an application's renderer ----
  // Records the dispatches into the application's command buffer (a
  // VkCommandBuffer of this device, recording, outside a render pass), as
  // launch() would submit them, and submits nothing. The recording opens
  // with a barrier after everything earlier in submission order (all
  // stages' memory writes, made visible to compute shaders and indirect
  // reads; the application's passes that read a buffer finish first), and
  // separates consecutive dispatches as launch() does. Descriptor sets are
  // made once per pipeline and buffers and kept, so the command buffer may
  // be submitted any number of times while the buffers and pipelines live;
  // the application must not destroy them (nor this Device) while such a
  // command buffer is pending.
  void record(void* command_buffer, const std::vector<Dispatch>& dispatches);
  // Records the barrier after recorded dispatches that makes their shader
  // writes visible to the application's `dst_stage_mask`
  // (VkPipelineStageFlags) and `dst_access_mask` (VkAccessFlags), e.g.
  // FRAGMENT_SHADER and SHADER_READ for a pass that draws a tree.
  void record_barrier(void* command_buffer, std::uint32_t dst_stage_mask, std::uint32_t dst_access_mask);
  // The VkBuffer of a buffer (as void*), to bind in the application's
  // descriptor sets.
  void* buffer_handle(BufferId buffer) const;
  // The instance, physical device, device and queue this Device runs on
  // (its own, or the application's), and the features Grove uses on it.
  ExternalDevice handles() const;

  // Every validation message seen so far (validation enabled only).
  std::vector<std::string> validation_messages() const;
  void clear_validation_messages();

 private:
  explicit Device(std::unique_ptr<detail::DeviceImpl> impl);
  std::unique_ptr<detail::DeviceImpl> impl_;
};

}  // namespace grove::vk
