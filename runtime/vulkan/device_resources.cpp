// runtime/vulkan/device_resources.cpp — storage buffers, staging transfers,
// compute pipelines and launches of grove::vk::Device.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <exception>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "grove/error.h"
#include "runtime/vulkan/device_impl.h"

namespace grove::vk::detail {

namespace {

// Staging grows to fit one transfer, between these sizes; larger transfers
// go through it in chunks of the maximum.
constexpr std::uint64_t kMinStagingBytes = 1u << 20;
constexpr std::uint64_t kMaxStagingBytes = 64u << 20;

constexpr std::uint32_t kSpirvMagic = 0x07230203;

std::string bytes_text(std::uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

// A Vulkan object created during a multi-step operation, destroyed unless
// the operation completes and takes it.
template <typename Destroy>
class Undo {
 public:
  explicit Undo(Destroy destroy) : destroy_(std::move(destroy)) {}
  ~Undo() {
    if (armed_) destroy_();
  }
  Undo(const Undo&) = delete;
  Undo& operator=(const Undo&) = delete;
  void dismiss() { armed_ = false; }

 private:
  Destroy destroy_;
  bool armed_ = true;
};

}  // namespace

// ---------------------------------------------------------------------------
// Memory.

std::uint32_t DeviceImpl::find_memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags required,
                                           VkMemoryPropertyFlags preferred) const {
  std::uint32_t fallback = UINT32_MAX;
  for (std::uint32_t i = 0; i < memory_props_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const VkMemoryPropertyFlags flags = memory_props_.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if ((flags & preferred) == preferred) return i;
    if (fallback == UINT32_MAX) fallback = i;
  }
  return fallback;
}

void DeviceImpl::allocate_buffer(std::uint64_t bytes, VkBufferUsageFlags usage, bool host_visible,
                                 const std::string& what, VkBuffer& buffer, VkDeviceMemory& memory, void** mapped) {
  VkBufferCreateInfo create{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  create.size = bytes;
  create.usage = usage;
  create.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer new_buffer = VK_NULL_HANDLE;
  check(api_.vkCreateBuffer(device_, &create, nullptr, &new_buffer), "vkCreateBuffer",
        "creating " + what);
  Undo undo_buffer([&] { api_.vkDestroyBuffer(device_, new_buffer, nullptr); });

  VkMemoryRequirements req{};
  api_.vkGetBufferMemoryRequirements(device_, new_buffer, &req);
  // Host-visible and coherent memory exists on every Vulkan device; cached
  // memory makes reading back faster where there is a choice. Storage
  // buffers take unified memory where the device has it (and the profile
  // leaves it), else device-local memory.
  const VkMemoryPropertyFlags unified = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  std::uint32_t type = UINT32_MAX;
  bool map = false;
  if (host_visible) {
    type = find_memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                            VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  } else {
    if (mapped != nullptr && info_.unified_memory) type = find_memory_type(req.memoryTypeBits, unified, unified);
    map = type != UINT32_MAX;
    if (!map) type = find_memory_type(req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  }
  if (type == UINT32_MAX) {
    throw Error("the Vulkan device " + info_.name + " has no suitable memory type for " + what);
  }
  VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = type;
  VkDeviceMemory new_memory = VK_NULL_HANDLE;
  check(api_.vkAllocateMemory(device_, &alloc, nullptr, &new_memory), "vkAllocateMemory",
        "allocating " + bytes_text(req.size) + " of " + (host_visible ? "host-visible" : "device-local") +
            " memory for " + what);
  Undo undo_memory([&] { api_.vkFreeMemory(device_, new_memory, nullptr); });
  check(api_.vkBindBufferMemory(device_, new_buffer, new_memory, 0), "vkBindBufferMemory",
        "binding memory to " + what);
  if (mapped != nullptr) *mapped = nullptr;
  if (map) {  // for as long as the memory lives (vkFreeMemory unmaps it)
    check(api_.vkMapMemory(device_, new_memory, 0, VK_WHOLE_SIZE, 0, mapped), "vkMapMemory", "mapping " + what);
  }
  undo_memory.dismiss();
  undo_buffer.dismiss();
  buffer = new_buffer;
  memory = new_memory;
}

void DeviceImpl::ensure_staging(std::uint64_t bytes) {
  if (staging_.size >= bytes) return;
  // Callers pass at most kMaxStagingBytes, a power of two.
  const std::uint64_t size = std::clamp(std::bit_ceil(bytes), kMinStagingBytes, kMaxStagingBytes);
  Staging fresh;
  fresh.size = size;
  allocate_buffer(size, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, true,
                  "a staging buffer of " + bytes_text(size), fresh.buffer, fresh.memory);
  const VkResult r = api_.vkMapMemory(device_, fresh.memory, 0, VK_WHOLE_SIZE, 0, &fresh.mapped);
  if (r != VK_SUCCESS) {
    destroy_garbage(Garbage{0, fresh.buffer, fresh.memory});
    check(r, "vkMapMemory", "mapping a staging buffer of " + bytes_text(size));
  }
  // The old staging buffer may still be read by a queued copy.
  if (staging_.buffer != VK_NULL_HANDLE) {
    garbage_.push_back(Garbage{staging_.last_use, staging_.buffer, staging_.memory});
    collect_garbage();
  }
  staging_ = fresh;
}

// ---------------------------------------------------------------------------
// Buffers.

std::string DeviceImpl::label(const Buffer& b, std::uint32_t slot) {
  return b.name.empty() ? "buffer #" + std::to_string(slot) : "buffer '" + b.name + "'";
}

DeviceImpl::Buffer& DeviceImpl::lookup(BufferId id, const char* operation) {
  return const_cast<Buffer&>(std::as_const(*this).lookup(id, operation));
}

const DeviceImpl::Buffer& DeviceImpl::lookup(BufferId id, const char* operation) const {
  if (id.slot >= buffers_.size() || !buffers_[id.slot].live ||
      buffers_[id.slot].generation != id.generation) {
    throw Error(std::string(operation) + ": the BufferId (slot " +
                (id.slot == UINT32_MAX ? std::string("none") : std::to_string(id.slot)) +
                ") does not name a live buffer of this device; it was never created here or "
                "was destroyed");
  }
  return buffers_[id.slot];
}

void DeviceImpl::check_range(const Buffer& b, std::uint64_t offset, std::uint64_t bytes,
                             const char* operation) const {
  if (offset > b.size || bytes > b.size - offset) {
    throw Error(std::string(operation) + ": " + bytes_text(bytes) + " at offset " +
                std::to_string(offset) + " lie outside " +
                label(b, static_cast<std::uint32_t>(&b - buffers_.data())) + " of " +
                bytes_text(b.size));
  }
}

BufferId DeviceImpl::create_buffer(std::uint64_t bytes, std::string_view debug_name) {
  ensure_usable();
  const std::string name(debug_name);
  const std::string what =
      "storage buffer" + (name.empty() ? std::string() : " '" + name + "'") + " of " + bytes_text(bytes);
  if (bytes == 0) throw Error("cannot create an empty Vulkan " + what + "; ask for at least 1 byte");
  if (bytes > info_.max_storage_buffer_range) {
    throw Error("cannot create a Vulkan " + what + ": device " + info_.name + " allows at most " +
                bytes_text(info_.max_storage_buffer_range) +
                " per storage buffer (maxStorageBufferRange, after any DeviceProfile cap); use "
                "smaller buffers");
  }
  if (info_.max_memory_allocation_size != 0 && bytes > info_.max_memory_allocation_size) {
    throw Error("cannot create a Vulkan " + what + ": device " + info_.name + " allows at most " +
                bytes_text(info_.max_memory_allocation_size) +
                " per allocation (maxMemoryAllocationSize); use smaller buffers");
  }
  // Round up to whole words so that fills and shaders see whole words.
  const std::uint64_t alloc_bytes = (bytes + 3) & ~std::uint64_t{3};

  Buffer b;
  allocate_buffer(alloc_bytes,
                  VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                      VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT,
                  false, what, b.buffer, b.memory, &b.mapped);
  Undo undo([&] { destroy_garbage(Garbage{0, b.buffer, b.memory}); });
  set_debug_name(VK_OBJECT_TYPE_BUFFER, reinterpret_cast<std::uint64_t>(b.buffer), name);
  {
    Recording rec(*this, 0, 0);
    api_.vkCmdFillBuffer(rec.cmd(), b.buffer, 0, VK_WHOLE_SIZE, 0);
    b.last_use = rec.submit();
  }
  undo.dismiss();

  b.size = bytes;
  b.name = name;
  b.live = true;
  std::uint32_t slot;
  if (!free_buffer_slots_.empty()) {
    slot = free_buffer_slots_.back();
    free_buffer_slots_.pop_back();
    b.generation = buffers_[slot].generation;
    buffers_[slot] = std::move(b);
  } else {
    slot = static_cast<std::uint32_t>(buffers_.size());
    buffers_.push_back(std::move(b));
  }
  return BufferId{slot, buffers_[slot].generation};
}

void DeviceImpl::destroy_buffer(BufferId id) {
  Buffer& b = lookup(id, "destroy_buffer");
  garbage_.push_back(Garbage{b.last_use, b.buffer, b.memory});
  const std::uint32_t generation = b.generation + 1;
  b = Buffer{};
  b.generation = generation;
  free_buffer_slots_.push_back(id.slot);
  collect_garbage();
}

std::uint64_t DeviceImpl::buffer_size(BufferId id) const { return lookup(id, "buffer_size").size; }

void DeviceImpl::write_buffer(BufferId id, std::uint64_t offset, const void* data, std::uint64_t bytes) {
  ensure_usable();
  Buffer& b = lookup(id, "write_buffer");
  check_range(b, offset, bytes, "write_buffer");
  if (bytes == 0) return;
  if (!data) throw Error("write_buffer: data is null");
  const auto* src = static_cast<const unsigned char*>(data);
  for (std::uint64_t done = 0; done < bytes;) {
    const std::uint64_t n = std::min(bytes - done, kMaxStagingBytes);
    ensure_staging(n);
    wait_for(staging_.last_use);  // an earlier copy may still read the staging buffer
    std::memcpy(staging_.mapped, src + done, n);
    Recording rec(*this, 0, 0);
    const VkBufferCopy region{0, offset + done, n};
    api_.vkCmdCopyBuffer(rec.cmd(), staging_.buffer, b.buffer, 1, &region);
    const std::uint64_t serial = rec.submit();
    staging_.last_use = serial;
    b.last_use = serial;
    done += n;
  }
}

void DeviceImpl::read_buffer(BufferId id, std::uint64_t offset, void* out, std::uint64_t bytes) {
  ensure_usable();
  Buffer& b = lookup(id, "read_buffer");
  check_range(b, offset, bytes, "read_buffer");
  if (bytes == 0) return;
  if (!out) throw Error("read_buffer: out is null");
  if (b.mapped != nullptr) {
    wait_visible_to_host();
    std::memcpy(out, static_cast<const unsigned char*>(b.mapped) + offset, bytes);
    return;
  }
  sync();
  auto* dst = static_cast<unsigned char*>(out);
  for (std::uint64_t done = 0; done < bytes;) {
    const std::uint64_t n = std::min(bytes - done, kMaxStagingBytes);
    ensure_staging(n);
    Recording rec(*this, 0, 0);
    const VkBufferCopy region{offset + done, 0, n};
    api_.vkCmdCopyBuffer(rec.cmd(), b.buffer, staging_.buffer, 1, &region);
    // Make the copy visible to the host before the fence wait returns.
    VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    api_.vkCmdPipelineBarrier(rec.cmd(), VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                              &to_host, 0, nullptr, 0, nullptr);
    const std::uint64_t serial = rec.submit();
    staging_.last_use = serial;
    b.last_use = serial;
    wait_for(serial);
    std::memcpy(dst + done, staging_.mapped, n);
    done += n;
  }
}

std::span<std::byte> DeviceImpl::host_memory(BufferId id) {
  ensure_usable();
  Buffer& b = lookup(id, "host_memory");
  if (b.mapped == nullptr) return {};
  wait_visible_to_host();
  return {static_cast<std::byte*>(b.mapped), static_cast<std::size_t>(b.size)};
}

void DeviceImpl::wait_visible_to_host() {
  // A submission of one barrier: its fence covers everything submitted to
  // the queue before it (the application's work too, on an adopted device),
  // and the barrier makes those writes visible to the host, which a fence
  // alone does not. Nothing submitted since the last such barrier: nothing
  // more to see (unless the application may have queued work: an adopted
  // device, or one whose handles, buffers or recordings it was given).
  // (Its fence was waited for when it was made.)
  if (owns_device_ && !shared_ && visible_serial_ != 0 && visible_serial_ == next_serial_ - 1) return;
  Recording rec(*this, 0, 0);
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  to_host.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT;
  api_.vkCmdPipelineBarrier(rec.cmd(), VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host,
                            0, nullptr, 0, nullptr);
  const std::uint64_t serial = rec.submit();
  wait_for(serial);
  visible_serial_ = serial;
}

void DeviceImpl::fill_buffer(BufferId id, std::uint64_t offset, std::uint64_t bytes, std::uint32_t value) {
  ensure_usable();
  Buffer& b = lookup(id, "fill_buffer");
  check_range(b, offset, bytes, "fill_buffer");
  if (offset % 4 != 0 || bytes % 4 != 0) {
    throw Error("fill_buffer: offset " + std::to_string(offset) + " and size " + std::to_string(bytes) +
                " must be multiples of 4 (it writes 32-bit words)");
  }
  if (bytes == 0) return;
  Recording rec(*this, 0, 0);
  api_.vkCmdFillBuffer(rec.cmd(), b.buffer, offset, bytes, value);
  b.last_use = rec.submit();
}

// ---------------------------------------------------------------------------
// Pipelines.

DeviceImpl::Pipeline& DeviceImpl::lookup(PipelineId id, const char* operation) {
  if (id.slot >= pipelines_.size() || !pipelines_[id.slot].live ||
      pipelines_[id.slot].generation != id.generation) {
    throw Error(std::string(operation) + ": the PipelineId (slot " +
                (id.slot == UINT32_MAX ? std::string("none") : std::to_string(id.slot)) +
                ") does not name a live pipeline of this device; it was never created here or "
                "was destroyed");
  }
  return pipelines_[id.slot];
}

PipelineId DeviceImpl::create_pipeline(std::span<const std::uint32_t> spirv, const std::string& entry_point,
                                       std::uint32_t num_buffers, std::uint32_t push_constant_bytes,
                                       const std::string& debug_name) {
  ensure_usable();
  return register_pipeline(build_pipeline({spirv, entry_point, num_buffers, push_constant_bytes, debug_name}));
}

// The pipelines of several tasks at once: a driver compiles each when it is
// created (lavapipe: its LLVM), so a kernel of several tasks is ready
// sooner when they are made on several threads (Vulkan lets any thread
// create objects of a device). They are registered in order afterwards;
// if one fails, none is kept and the first error (in request order) is
// raised.
std::vector<PipelineId> DeviceImpl::create_pipelines(std::span<const PipelineRequest> requests) {
  ensure_usable();
  std::vector<Pipeline> built(requests.size());
  std::vector<std::exception_ptr> failed(requests.size());
  std::atomic<size_t> next{0};
  auto build = [&] {
    for (size_t i = next++; i < requests.size(); i = next++) {
      try {
        built[i] = build_pipeline(requests[i]);
      } catch (...) {
        failed[i] = std::current_exception();
      }
    }
  };
  const size_t threads = std::min<size_t>(requests.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> helpers;
  try {
    for (size_t t = 1; t < threads; ++t) helpers.emplace_back(build);
  } catch (const std::system_error&) {
    // No more threads: the ones started and this one build everything.
  }
  build();
  for (std::thread& h : helpers) h.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!failed[i]) continue;
    for (Pipeline& p : built)
      destroy_garbage(Garbage{0, VK_NULL_HANDLE, VK_NULL_HANDLE, p.pipeline, p.layout, p.set_layout});
    std::rethrow_exception(failed[i]);
  }
  std::vector<PipelineId> ids;
  for (Pipeline& p : built) ids.push_back(register_pipeline(std::move(p)));
  return ids;
}

// The Vulkan objects of one pipeline; touches no state of the device but
// lost_ (atomic), so that several threads may build pipelines at once.
DeviceImpl::Pipeline DeviceImpl::build_pipeline(const PipelineRequest& request) {
  const std::span<const std::uint32_t> spirv = request.spirv;
  const std::string& entry_point = request.entry_point;
  const std::uint32_t num_buffers = request.num_buffers;
  const std::uint32_t push_constant_bytes = request.push_constant_bytes;
  const std::string& debug_name = request.debug_name;
  const std::string who = "compute pipeline '" + debug_name + "'";
  if (spirv.size() < 5 || spirv[0] != kSpirvMagic) {
    throw Error("cannot create " + who + ": the code is not a SPIR-V module (" +
                std::to_string(spirv.size()) + " words; a module starts with 0x07230203)");
  }
  if (entry_point.empty()) throw Error("cannot create " + who + ": empty entry point name");
  if (push_constant_bytes % 4 != 0 || push_constant_bytes > info_.max_push_constants_size) {
    throw Error("cannot create " + who + ": " + std::to_string(push_constant_bytes) +
                " push-constant bytes; it must be a multiple of 4 and at most " +
                std::to_string(info_.max_push_constants_size) + " on " + info_.name);
  }
  if (num_buffers > info_.max_storage_buffers_per_stage) {
    throw Error("cannot create " + who + ": it binds " + std::to_string(num_buffers) +
                " storage buffers but " + info_.name + " allows at most " +
                std::to_string(info_.max_storage_buffers_per_stage) + " per shader stage");
  }

  Pipeline p;
  p.num_buffers = num_buffers;
  p.push_constant_bytes = push_constant_bytes;
  p.name = debug_name;
  Undo undo([&] {
    destroy_garbage(Garbage{0, VK_NULL_HANDLE, VK_NULL_HANDLE, p.pipeline, p.layout, p.set_layout});
  });

  std::vector<VkDescriptorSetLayoutBinding> bindings(num_buffers);
  for (std::uint32_t i = 0; i < num_buffers; ++i) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.bindingCount = num_buffers;
  set_info.pBindings = bindings.data();
  check(api_.vkCreateDescriptorSetLayout(device_, &set_info, nullptr, &p.set_layout),
        "vkCreateDescriptorSetLayout", "creating the descriptor set layout of " + who);

  const VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_constant_bytes};
  VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &p.set_layout;
  layout_info.pushConstantRangeCount = push_constant_bytes > 0 ? 1 : 0;
  layout_info.pPushConstantRanges = &range;
  check(api_.vkCreatePipelineLayout(device_, &layout_info, nullptr, &p.layout),
        "vkCreatePipelineLayout", "creating the pipeline layout of " + who);

  VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = spirv.size_bytes();
  module_info.pCode = spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  check(api_.vkCreateShaderModule(device_, &module_info, nullptr, &module), "vkCreateShaderModule",
        "creating the shader module of " + who);
  Undo undo_module([&] { api_.vkDestroyShaderModule(device_, module, nullptr); });

  VkComputePipelineCreateInfo create{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  create.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  create.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  create.stage.module = module;
  create.stage.pName = entry_point.c_str();
  create.layout = p.layout;
  // No VkPipelineCache: every module names its kernel in its entry point, so
  // none would ever hit, and a cache costs memory and time for every
  // pipeline (the many_kernels rows of bench/ measure it).
  check(api_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &create, nullptr, &p.pipeline),
        "vkCreateComputePipelines", "creating " + who + " (entry point '" + entry_point + "')");
  undo.dismiss();
  return p;
}

PipelineId DeviceImpl::register_pipeline(Pipeline p) {
  set_debug_name(VK_OBJECT_TYPE_PIPELINE, reinterpret_cast<std::uint64_t>(p.pipeline), p.name);
  p.live = true;
  std::uint32_t slot;
  if (!free_pipeline_slots_.empty()) {
    slot = free_pipeline_slots_.back();
    free_pipeline_slots_.pop_back();
    p.generation = pipelines_[slot].generation;
    pipelines_[slot] = std::move(p);
  } else {
    slot = static_cast<std::uint32_t>(pipelines_.size());
    pipelines_.push_back(std::move(p));
  }
  return PipelineId{slot, pipelines_[slot].generation};
}

void DeviceImpl::destroy_pipeline(PipelineId id) {
  Pipeline& p = lookup(id, "destroy_pipeline");
  garbage_.push_back(Garbage{p.last_use, VK_NULL_HANDLE, VK_NULL_HANDLE, p.pipeline, p.layout, p.set_layout});
  const std::uint32_t generation = p.generation + 1;
  p = Pipeline{};
  p.generation = generation;
  free_pipeline_slots_.push_back(id.slot);
  collect_garbage();
}

// ---------------------------------------------------------------------------
// Launches.

std::vector<DeviceImpl::Pipeline*> DeviceImpl::check_dispatches(const std::vector<Dispatch>& dispatches,
                                                               const char* operation, std::uint32_t& sets,
                                                               std::uint32_t& descriptors) {
  std::vector<Pipeline*> pipelines;
  sets = 0;
  descriptors = 0;
  for (std::size_t i = 0; i < dispatches.size(); ++i) {
    const Dispatch& d = dispatches[i];
    Pipeline& p = lookup(d.pipeline, operation);
    const std::string where = std::string(operation) + ": dispatch " + std::to_string(i) + " of pipeline '" + p.name + "'";
    if (d.buffers.size() != p.num_buffers) {
      throw Error(where + " binds " + std::to_string(d.buffers.size()) +
                  " buffers; the pipeline was created for " + std::to_string(p.num_buffers));
    }
    if (d.push_constants.size() * 4 != p.push_constant_bytes) {
      throw Error(where + " passes " + std::to_string(d.push_constants.size() * 4) +
                  " push-constant bytes; the pipeline was created for " +
                  std::to_string(p.push_constant_bytes));
    }
    const std::uint32_t counts[3] = {d.group_count_x, d.group_count_y, d.group_count_z};
    for (int axis = 0; axis < 3; ++axis) {
      if (counts[axis] > info_.max_compute_workgroup_count[axis]) {
        throw Error(where + " asks for " + std::to_string(counts[axis]) + " workgroups in " + "xyz"[axis] + "; " +
                    info_.name + " allows at most " + std::to_string(info_.max_compute_workgroup_count[axis]) +
                    " (use a grid-stride loop)");
      }
    }
    for (BufferId b : d.buffers) lookup(b, operation);
    if (d.indirect_buffer) {
      const Buffer& ib = lookup(*d.indirect_buffer, operation);
      if (d.indirect_offset % 4 != 0 || d.indirect_offset + 12 > ib.size) {
        throw Error(where + " reads its group counts at byte " + std::to_string(d.indirect_offset) + " of buffer '" +
                    ib.name + "' (" + std::to_string(ib.size) +
                    " bytes); the offset must be a multiple of 4 with 12 bytes after it");
      }
    }
    pipelines.push_back(&p);
    if (p.num_buffers > 0) {
      ++sets;
      descriptors += p.num_buffers;
    }
  }
  return pipelines;
}

void DeviceImpl::write_set(VkDescriptorSet set, const Pipeline& p, const Dispatch& d) {
  std::vector<VkDescriptorBufferInfo>& infos = set_infos_;  // reused: no allocation per dispatch
  std::vector<VkWriteDescriptorSet>& writes = set_writes_;
  infos.assign(p.num_buffers, VkDescriptorBufferInfo{});
  writes.assign(p.num_buffers, VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET});
  for (std::uint32_t k = 0; k < p.num_buffers; ++k) {
    infos[k].buffer = buffers_[d.buffers[k].slot].buffer;
    infos[k].offset = 0;
    infos[k].range = VK_WHOLE_SIZE;
    writes[k].dstSet = set;
    writes[k].dstBinding = k;
    writes[k].descriptorCount = 1;
    writes[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[k].pBufferInfo = &infos[k];
  }
  api_.vkUpdateDescriptorSets(device_, p.num_buffers, writes.data(), 0, nullptr);
}

void DeviceImpl::record_dispatches(VkCommandBuffer cmd, const std::vector<Dispatch>& dispatches,
                                   const std::vector<Pipeline*>& pipelines,
                                   const std::function<VkDescriptorSet(std::size_t)>& set_of,
                                   VkQueryPool timestamps) {
  for (std::size_t i = 0; i < dispatches.size(); ++i) {
    const Dispatch& d = dispatches[i];
    const Pipeline& p = *pipelines[i];
    if (i > 0) {
      // Dispatch i sees every write of dispatches < i, and does not overwrite
      // what they still read.
      // Group counts an earlier dispatch wrote are read as indirect
      // commands (the draw-indirect stage).
      VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
      barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      barrier.dstAccessMask =
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
      const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT;
      api_.vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
    }
    api_.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    if (p.num_buffers > 0) {
      const VkDescriptorSet set = set_of(i);
      api_.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
    }
    if (p.push_constant_bytes > 0) {
      api_.vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.push_constant_bytes,
                              d.push_constants.data());
    }
    if (d.indirect_buffer) {
      api_.vkCmdDispatchIndirect(cmd, buffers_[d.indirect_buffer->slot].buffer, d.indirect_offset);
    } else {
      api_.vkCmdDispatch(cmd, d.group_count_x, d.group_count_y, d.group_count_z);
    }
    if (timestamps != VK_NULL_HANDLE)
      api_.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps, static_cast<std::uint32_t>(i + 1));
  }
}

void DeviceImpl::launch(const std::vector<Dispatch>& dispatches) {
  ensure_usable();
  if (dispatches.empty()) return;
  // Check everything before recording anything.
  std::uint32_t sets = 0, descriptors = 0;
  const std::vector<Pipeline*> pipelines = check_dispatches(dispatches, "launch", sets, descriptors);
  Recording rec(*this, sets, descriptors);
  VkQueryPool timestamps = VK_NULL_HANDLE;
  if (timing_) {
    std::vector<std::uint32_t> tags;
    for (const Dispatch& d : dispatches) tags.push_back(d.tag);
    timestamps = rec.start_timing(tags);
  }
  record_dispatches(
      rec.cmd(), dispatches, pipelines,
      [&](std::size_t i) {
        const VkDescriptorSet set = rec.allocate_set(pipelines[i]->set_layout);
        write_set(set, *pipelines[i], dispatches[i]);
        return set;
      },
      timestamps);
  const std::uint64_t serial = rec.submit();
  for (std::size_t i = 0; i < dispatches.size(); ++i) {
    pipelines[i]->last_use = serial;
    for (BufferId b : dispatches[i].buffers) buffers_[b.slot].last_use = serial;
    if (dispatches[i].indirect_buffer) buffers_[dispatches[i].indirect_buffer->slot].last_use = serial;
  }
}

// ---------------------------------------------------------------------------
// Recording into an application's command buffer.

VkDescriptorSet DeviceImpl::recorded_set(const Pipeline& p, const Dispatch& d) {
  // Buffer and pipeline ids carry generations, so a key never names a
  // destroyed object's successor: a set, once written, stays right.
  std::vector<std::uint64_t> key{(std::uint64_t{d.pipeline.slot} << 32) | d.pipeline.generation};
  for (BufferId b : d.buffers) key.push_back((std::uint64_t{b.slot} << 32) | b.generation);
  auto it = recorded_sets_.find(key);
  if (it != recorded_sets_.end()) return it->second;
  if (recorded_pool_sets_left_ == 0 || recorded_pool_descriptors_left_ < p.num_buffers) {
    constexpr std::uint32_t kSets = 64;
    const std::uint32_t descriptors = kSets * std::max<std::uint32_t>(p.num_buffers, 8);
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptors};
    VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    info.maxSets = kSets;
    info.poolSizeCount = 1;
    info.pPoolSizes = &size;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    check(api_.vkCreateDescriptorPool(device_, &info, nullptr, &pool), "vkCreateDescriptorPool",
          "creating descriptor sets for recorded launches");
    recorded_pools_.push_back(pool);
    recorded_pool_sets_left_ = kSets;
    recorded_pool_descriptors_left_ = descriptors;
  }
  VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  info.descriptorPool = recorded_pools_.back();
  info.descriptorSetCount = 1;
  info.pSetLayouts = &p.set_layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  check(api_.vkAllocateDescriptorSets(device_, &info, &set), "vkAllocateDescriptorSets",
        "allocating a descriptor set for a recorded launch");
  --recorded_pool_sets_left_;
  recorded_pool_descriptors_left_ -= p.num_buffers;
  write_set(set, p, d);
  recorded_sets_.emplace(std::move(key), set);
  return set;
}

void DeviceImpl::record(void* command_buffer, const std::vector<Dispatch>& dispatches) {
  ensure_usable();
  shared_ = true;
  if (command_buffer == nullptr) throw Error("record: the command buffer (a VkCommandBuffer) is null");
  if (dispatches.empty()) return;
  std::uint32_t sets = 0, descriptors = 0;
  const std::vector<Pipeline*> pipelines = check_dispatches(dispatches, "record", sets, descriptors);
  auto cmd = static_cast<VkCommandBuffer>(command_buffer);
  // What came before in the application's submission order (its own
  // passes reading the trees, Grove's uploads and launches) finishes before
  // these dispatches run, and its writes are visible to them.
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
  api_.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT, 0, 1, &barrier,
                            0, nullptr, 0, nullptr);
  record_dispatches(cmd, dispatches, pipelines,
                    [&](std::size_t i) { return recorded_set(*pipelines[i], dispatches[i]); });
}

void DeviceImpl::record_barrier(void* command_buffer, std::uint32_t dst_stage_mask, std::uint32_t dst_access_mask) {
  ensure_usable();
  if (command_buffer == nullptr) throw Error("record_barrier: the command buffer (a VkCommandBuffer) is null");
  if (dst_stage_mask == 0) throw Error("record_barrier: dst_stage_mask is 0; name the stages that read the trees");
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = dst_access_mask;
  api_.vkCmdPipelineBarrier(static_cast<VkCommandBuffer>(command_buffer), VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                            dst_stage_mask, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

void* DeviceImpl::buffer_handle(BufferId id) const {
  shared_ = true;
  return reinterpret_cast<void*>(lookup(id, "buffer_handle").buffer);
}

ExternalDevice DeviceImpl::handles() const {
  shared_ = true;
  ExternalDevice h;
  h.instance = instance_.handle();
  h.physical_device = physical_;
  h.device = device_;
  h.queue = queue_;
  h.queue_family = queue_family_;
  h.get_instance_proc_addr = reinterpret_cast<void*>(api_.vkGetInstanceProcAddr);
  h.api_version = info_.api_version;
  h.shader_int64 = info_.shader_int64;
  h.shader_float64 = info_.shader_float64;
  h.shader_int16 = info_.shader_int16;
  h.storage_buffer_16bit = info_.storage_buffer_16bit;
  h.atomic_int64 = info_.atomic_int64;
  h.atomic_float32_add = info_.atomic_float32_add;
  h.atomic_float32_min_max = info_.atomic_float32_min_max;
  return h;
}

}  // namespace grove::vk::detail
