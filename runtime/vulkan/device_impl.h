// runtime/vulkan/device_impl.h — private to runtime/vulkan: the state behind
// grove::vk::Device (defined across device.cpp and device_resources.cpp).
//
// Ownership: DeviceImpl owns every Vulkan object. Buffers and pipelines live
// in slot tables addressed by generation-checked ids. Work is submitted as
// Submissions (command buffer + fence + descriptor pool), each stamped with a
// serial number; a submission returns to the free list once its fence
// signals, and objects destroyed while queued work may still use them wait in
// `garbage_` until the serial of that work has completed.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/vulkan/vk_api.h"

namespace grove::vk::detail {

// Collects validation messages; outlives the instance that reports into it.
struct MessageSink {
  mutable std::mutex mutex;
  std::vector<std::string> messages;
  std::size_t dropped = 0;
  std::function<void(std::string_view)> callback;
};

class DeviceImpl {
 public:
  explicit DeviceImpl(const DeviceOptions& options);
  DeviceImpl(const ExternalDevice& external, const DeviceOptions& options);
  ~DeviceImpl();
  DeviceImpl(const DeviceImpl&) = delete;
  DeviceImpl& operator=(const DeviceImpl&) = delete;

  const DeviceInfo& info() const { return info_; }

  BufferId create_buffer(std::uint64_t bytes, std::string_view debug_name);
  void destroy_buffer(BufferId id);
  std::uint64_t buffer_size(BufferId id) const;
  void write_buffer(BufferId id, std::uint64_t offset, const void* data, std::uint64_t bytes);
  void read_buffer(BufferId id, std::uint64_t offset, void* out, std::uint64_t bytes);
  std::span<std::byte> host_memory(BufferId id);
  void fill_buffer(BufferId id, std::uint64_t offset, std::uint64_t bytes, std::uint32_t value);

  PipelineId create_pipeline(std::span<const std::uint32_t> spirv, const std::string& entry_point,
                             std::uint32_t num_buffers, std::uint32_t push_constant_bytes,
                             const std::string& debug_name);
  std::vector<PipelineId> create_pipelines(std::span<const PipelineRequest> requests);
  void destroy_pipeline(PipelineId id);
  std::size_t pipeline_count() const { return pipelines_.size() - free_pipeline_slots_.size(); }

  void launch(const std::vector<Dispatch>& dispatches);
  void record(void* command_buffer, const std::vector<Dispatch>& dispatches);
  void record_barrier(void* command_buffer, std::uint32_t dst_stage_mask, std::uint32_t dst_access_mask);
  void sync();
  void set_timing(bool on);
  std::vector<DispatchTime> take_timings();
  void* buffer_handle(BufferId id) const;
  ExternalDevice handles() const;

  std::vector<std::string> validation_messages() const;
  void clear_validation_messages();

 private:
  struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    std::uint64_t size = 0;      // bytes the user asked for
    std::uint64_t last_use = 0;  // serial of the last submission using it
    std::uint32_t generation = 0;
    void* mapped = nullptr;  // its memory, mapped for good (unified memory)
    bool live = false;
    std::string name;
  };
  struct Pipeline {
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    std::uint32_t num_buffers = 0;
    std::uint32_t push_constant_bytes = 0;
    std::uint64_t last_use = 0;
    std::uint32_t generation = 0;
    bool live = false;
    std::string name;
  };
  Pipeline build_pipeline(const PipelineRequest& request);  // any thread
  PipelineId register_pipeline(Pipeline p);
  // Host-visible, coherent, persistently mapped transfer buffer.
  struct Staging {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    void* mapped = nullptr;
    std::uint64_t size = 0;
    std::uint64_t last_use = 0;
  };
  // One command buffer's worth of work and what it needs until it finishes.
  struct Submission {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkDescriptorPool pool = VK_NULL_HANDLE;  // reset when the submission is reused
    std::uint32_t pool_sets = 0;
    std::uint32_t pool_descriptors = 0;
    std::uint64_t serial = 0;
    // Timing: timestamps 0..n of its n timed dispatches (tags), read when
    // it finishes; the pool is kept for the next use.
    VkQueryPool queries = VK_NULL_HANDLE;
    std::uint32_t query_capacity = 0;
    std::vector<std::uint32_t> timed;
  };
  // Objects to destroy once `serial` has completed.
  struct Garbage {
    std::uint64_t serial = 0;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  };
  class Recording;  // a Submission being recorded (below)

  // device.cpp
  void open_device(const PhysicalDevice& physical);
  void create_command_pool();
  void release() noexcept;
  void check(VkResult result, std::string_view call, std::string_view what = {});
  void ensure_usable() const;
  void set_debug_name(VkObjectType type, std::uint64_t handle, const std::string& name);
  std::unique_ptr<Submission> acquire_submission();
  void destroy_submission(Submission& s) noexcept;
  void poll_finished();
  void wait_for(std::uint64_t serial);
  void finish_oldest();
  void collect_garbage() noexcept;
  void destroy_garbage(const Garbage& g) noexcept;

  // device_resources.cpp
  std::uint32_t find_memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                                 VkMemoryPropertyFlags preferred) const;
  // host_visible: a staging buffer's memory. `mapped` (storage buffers):
  // set to the memory's mapping where it is unified (DeviceInfo), else null.
  void allocate_buffer(std::uint64_t bytes, VkBufferUsageFlags usage, bool host_visible,
                       const std::string& what, VkBuffer& buffer, VkDeviceMemory& memory,
                       void** mapped = nullptr);
  // Waits for everything submitted to the queue so far, its memory writes
  // made visible to the host.
  void wait_visible_to_host();
  Buffer& lookup(BufferId id, const char* operation);
  const Buffer& lookup(BufferId id, const char* operation) const;
  Pipeline& lookup(PipelineId id, const char* operation);
  void check_range(const Buffer& b, std::uint64_t offset, std::uint64_t bytes,
                   const char* operation) const;
  void ensure_staging(std::uint64_t bytes);
  // Launches and recordings: the checks made before anything is recorded
  // (counting the descriptor sets needed), and the dispatches with the
  // barriers between them, `set_of(i)` giving dispatch i its set.
  std::vector<Pipeline*> check_dispatches(const std::vector<Dispatch>& dispatches, const char* operation,
                                          std::uint32_t& sets, std::uint32_t& descriptors);
  void write_set(VkDescriptorSet set, const Pipeline& p, const Dispatch& d);
  // With `timestamps`, query i + 1 is written when dispatch i has finished
  // (query 0 is the recording's start).
  void record_dispatches(VkCommandBuffer cmd, const std::vector<Dispatch>& dispatches,
                         const std::vector<Pipeline*>& pipelines,
                         const std::function<VkDescriptorSet(std::size_t)>& set_of,
                         VkQueryPool timestamps = VK_NULL_HANDLE);
  // A finished submission's dispatch times, added to timings_.
  void read_timings(Submission& s) noexcept;
  // The descriptor set of a recorded dispatch: made once per pipeline and
  // buffers, and kept (the application's command buffers may be replayed
  // any number of times).
  VkDescriptorSet recorded_set(const Pipeline& p, const Dispatch& d);
  static std::string label(const Buffer& b, std::uint32_t slot);

  MessageSink sink_;     // declared first: destroyed after the instance
  Instance instance_;
  Api api_;             // the instance's table plus this device's functions
  DeviceInfo info_;      // effective (profile applied)
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_props_{};
  std::uint32_t queue_family_ = 0;

  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  bool owns_device_ = true;  // false for an adopted (application's) VkDevice
  std::atomic<bool> lost_{false};  // (pipelines are built on several threads)

  std::vector<Buffer> buffers_;
  std::vector<std::uint32_t> free_buffer_slots_;
  std::vector<Pipeline> pipelines_;
  std::vector<std::uint32_t> free_pipeline_slots_;
  Staging staging_;

  std::vector<std::unique_ptr<Submission>> free_submissions_;
  std::deque<std::unique_ptr<Submission>> in_flight_;  // oldest first
  std::uint64_t next_serial_ = 1;
  std::uint64_t completed_serial_ = 0;  // every serial <= this has finished
  // The barrier submission of the last wait_visible_to_host: while it is
  // the last submission, the host sees every device write already.
  std::uint64_t visible_serial_ = 0;
  // The application was given this device's handles, a buffer's or a
  // recording: it may queue work Grove does not see, so every
  // wait_visible_to_host submits its barrier.
  mutable bool shared_ = false;
  std::vector<Garbage> garbage_;
  std::vector<VkDescriptorBufferInfo> set_infos_;  // write_set's scratch
  std::vector<VkWriteDescriptorSet> set_writes_;
  std::map<std::vector<std::uint64_t>, VkDescriptorSet> recorded_sets_;
  std::vector<VkDescriptorPool> recorded_pools_;
  std::uint32_t recorded_pool_sets_left_ = 0;
  std::uint32_t recorded_pool_descriptors_left_ = 0;
  // Timing: on or off, nanoseconds per tick of the queue's timestamps, the
  // bits they carry, and the times of finished dispatches not yet taken.
  bool timing_ = false;
  double timestamp_ns_ = 0;
  std::uint64_t timestamp_mask_ = 0;
  std::vector<DispatchTime> timings_;
};

// A Submission from acquire to vkQueueSubmit: begins the command buffer and
// records the entry barrier (see device.cpp). If anything throws before
// submit(), the destructor resets the submission and returns it to the free
// list, so a failed launch leaves the device usable.
class DeviceImpl::Recording {
 public:
  // `sets` descriptor sets holding `descriptors` storage buffers in total
  // will be allocated with allocate_set().
  Recording(DeviceImpl& device, std::uint32_t sets, std::uint32_t descriptors);
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  VkCommandBuffer cmd() const { return s_->cmd; }
  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);
  // A query pool for `dispatches` + 1 timestamps, reset in the command
  // buffer and its first timestamp written; the submission's dispatches
  // are timed under `tags` when it finishes.
  VkQueryPool start_timing(const std::vector<std::uint32_t>& tags);
  // Ends and submits the command buffer; returns its serial.
  std::uint64_t submit();

 private:
  void grow_pool(std::uint32_t sets, std::uint32_t descriptors);
  // Unless submitted: reset the submission and return it to the free list.
  void give_back() noexcept;

  DeviceImpl& d_;
  std::unique_ptr<Submission> s_;
  bool recording_ = false;
};

}  // namespace grove::vk::detail
