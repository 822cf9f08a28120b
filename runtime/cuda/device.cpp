// runtime/cuda/device.cpp — the CUDA device (device.h).
#include "runtime/cuda/device.h"

#include <algorithm>
#include <deque>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <span>

#include "grove/error.h"
#include "runtime/core/assert.h"
#include "runtime/core/context_layout.h"
#include "runtime/core/context_records.h"
#include "runtime/cuda/driver.h"

namespace grove::rt::cuda {

namespace {

namespace ctx = context;

DeviceInfo describe(const Driver& d, int index) {
  CUdevice dev = 0;
  d.check(d.cuDeviceGet(&dev, index), "cuDeviceGet(" + std::to_string(index) + ")");
  DeviceInfo info;
  info.index = index;
  char name[256] = {};
  d.check(d.cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName");
  info.name = name;
  int major = 0, minor = 0;
  d.check(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute");
  d.check(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute");
  info.sm = major * 10 + minor;
  d.check(d.cuDeviceGetAttribute(&info.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
          "cuDeviceGetAttribute");
  size_t bytes = 0;
  d.check(d.cuDeviceTotalMem_v2(&bytes, dev), "cuDeviceTotalMem");
  info.memory_bytes = static_cast<int64_t>(bytes);
  info.driver_version = d.version;
  return info;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The sm_NN a plan's target names ("nvptx64-nvidia-cuda, sm_90"), or -1.
int sm_of_target(const std::string& target) {
  const size_t at = target.rfind("sm_");
  if (at == std::string::npos) return -1;
  return std::atoi(target.c_str() + at + 3);
}

class CudaKernel : public LoadedKernel {
 public:
  CudaKernel(const Driver& d) : driver(d) {}
  ~CudaKernel() override {
    if (module != nullptr) driver.cuModuleUnload(module);  // errors at exit are not worth raising
  }
  const Driver& driver;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;  // per task
};

class CudaDevice : public Device {
 public:
  CudaDevice(const Driver& d, DeviceInfo info, bool debug, PrintSink print)
      : d_(d), info_(std::move(info)), debug_(debug), records_("CUDA device", std::move(print)) {
    d_.check(d_.cuDeviceGet(&device_, info_.index), "cuDeviceGet");
    d_.check(d_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain on " + info_.name);
    current();
    d_.check(d_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    make_context(kInitialPrintRingWords);
  }
  ~CudaDevice() override {
    d_.cuCtxSetCurrent(context_);
    d_.cuStreamSynchronize(stream_);
    for (auto& [id, b] : buffers_) d_.cuMemFree_v2(b.ptr);
    for (const Timed& t : timed_) {
      d_.cuEventDestroy_v2(t.start);
      d_.cuEventDestroy_v2(t.end);
    }
    for (CUevent e : spare_events_) d_.cuEventDestroy_v2(e);
    if (context_buffer_) d_.cuMemFree_v2(context_buffer_);
    d_.cuStreamDestroy_v2(stream_);
    d_.cuDevicePrimaryCtxRelease_v2(device_);
  }

  const DeviceInfo& info() const { return info_; }

  std::string name() const override {
    return info_.name + " (CUDA, sm_" + std::to_string(info_.sm) + ", " + std::to_string(info_.multiprocessors) +
           " SMs, driver " + std::to_string(info_.driver_version / 1000) + "." +
           std::to_string(info_.driver_version % 1000 / 10) + ")";
  }
  bool synchronous() const override { return debug_; }
  int64_t max_buffer_bytes() const override { return info_.memory_bytes; }

  void create_buffer(int id, int64_t words, std::span<const uint32_t> head) override {
    current();
    destroy_if_present(id);
    Buffer b;
    b.words = words;
    d_.check(d_.cuMemAlloc_v2(&b.ptr, static_cast<size_t>(std::max<int64_t>(words, 1)) * 4),
             "allocating " + std::to_string(words * 4) + " bytes on " + info_.name);
    buffers_[id] = b;
    d_.check(d_.cuMemsetD32Async(b.ptr, 0, static_cast<size_t>(words), stream_), "cuMemsetD32Async");
    if (!head.empty())
      d_.check(d_.cuMemcpyHtoDAsync_v2(b.ptr, head.data(), head.size() * 4, stream_), "cuMemcpyHtoDAsync");
  }
  void destroy_buffer(int id) override {
    current();
    if (!buffers_.count(id)) throw InternalError("CUDA device: destroy of buffer " + std::to_string(id) + ", which does not exist");
    destroy_if_present(id);
  }
  void read_words(int id, int64_t offset, int64_t count, uint32_t* out) override {
    current();
    const Buffer& b = buffer(id, offset, count, "read");
    if (count > 0)
      d_.check(d_.cuMemcpyDtoHAsync_v2(out, b.ptr + static_cast<CUdeviceptr>(offset) * 4, static_cast<size_t>(count) * 4,
                                      stream_),
               "cuMemcpyDtoHAsync");
    wait();
  }
  void write_words(int id, int64_t offset, int64_t count, const uint32_t* in) override {
    current();
    const Buffer& b = buffer(id, offset, count, "write");
    // From pageable memory: the call returns once `in` is copied out.
    if (count > 0)
      d_.check(d_.cuMemcpyHtoDAsync_v2(b.ptr + static_cast<CUdeviceptr>(offset) * 4, in, static_cast<size_t>(count) * 4,
                                      stream_),
               "cuMemcpyHtoDAsync");
  }

  std::unique_ptr<LoadedKernel> load(KernelPlan plan) override {
    require_backend(plan, "cuda", "CUDA");
    const PtxCode& code = plan.ptx();
    const int sm = sm_of_target(code.target);
    if (sm < 0 || sm > info_.sm)
      throw Error("kernel '" + plan.name + "' was compiled for " + (code.target.empty() ? "no target" : code.target) +
                  "; " + info_.name + " is sm_" + std::to_string(info_.sm) + ": compile it for sm_" +
                  std::to_string(info_.sm) + " or older (Config::cuda_sm)");
    current();
    auto k = std::make_unique<CudaKernel>(d_);
    // The binary the plan carries, where it was made for this GPU and
    // driver (the driver refuses one that is not a binary for it; the disk
    // cache's checksums keep damaged ones away); else the PTX, compiled.
    if (!code.binary.empty() && code.binary_target == binary_target() &&
        d_.cuModuleLoadDataEx(&k->module, code.binary.data(), 0, nullptr, nullptr) != CUDA_SUCCESS)
      k->module = nullptr;
    if (k->module == nullptr) compile(plan, *k);
    for (const TaskPlan& t : plan.tasks) {
      CUfunction f = nullptr;
      d_.check(d_.cuModuleGetFunction(&f, k->module, t.entry_point.c_str()),
               "kernel '" + plan.name + "': entry point '" + t.entry_point + "' of its PTX");
      k->functions.push_back(f);
    }
    records_.add(plan);
    k->plan = std::move(plan);
    return k;
  }

  // "sm_90, driver 13000": whom a binary the driver makes here is for.
  std::string binary_target() const {
    return "sm_" + std::to_string(info_.sm) + ", driver " + std::to_string(info_.driver_version);
  }
  int64_t ptx_compiles() const { return ptx_compiles_; }

  void launch(LoadedKernel& loaded, std::span<const uint64_t> args, const std::vector<bool>& run,
              std::span<const int> slot_buffers) override {
    auto& k = static_cast<CudaKernel&>(loaded);
    const KernelPlan& plan = k.plan;
    current();
    if (!plan.messages.empty() && ContextRecords::message_base(plan) != message_base_) {
      message_base_ = ContextRecords::message_base(plan);
      d_.check(d_.cuMemcpyHtoDAsync_v2(context_buffer_ + ctx::kMessageBase * 4, &message_base_, 4, stream_),
               "cuMemcpyHtoDAsync");
    }
    std::vector<uint64_t> values(args.begin(), args.end());
    values.resize(plan.args.size(), 0);
    std::vector<CUdeviceptr> pointers;
    std::vector<void*> params;
    for (size_t i = 0; i < plan.tasks.size(); ++i) {
      if (i < run.size() && !run[i]) continue;
      const TaskPlan& task = plan.tasks[i];
      const Launch shape = launch_of(task, args);
      if (shape.blocks[0] == 0 || shape.blocks[1] == 0 || shape.blocks[2] == 0) continue;
      pointers.assign(1, context_buffer_);
      for (int slot : task.slots) pointers.push_back(tree(slot_buffers[static_cast<size_t>(slot)]));
      params.clear();
      for (CUdeviceptr& p : pointers) params.push_back(&p);
      for (uint64_t& v : values) params.push_back(&v);
      CUevent start = nullptr;
      if (profiling_) {
        start = event();
        d_.check(d_.cuEventRecord(start, stream_), "cuEventRecord");
      }
      const CUresult r = d_.cuLaunchKernel(k.functions[i], shape.blocks[0], shape.blocks[1], shape.blocks[2],
                                           shape.threads[0], shape.threads[1], shape.threads[2], 0, stream_,
                                           params.data(), nullptr);
      if (r != CUDA_SUCCESS) {
        if (start != nullptr) spare_events_.push_back(start);
        throw Error("kernel '" + plan.name + "': launching task " + std::to_string(i) + " ('" + task.label +
                    "') failed: " + d_.describe(r));
      }
      if (profiling_) {
        CUevent end = event();
        d_.check(d_.cuEventRecord(end, stream_), "cuEventRecord");
        timed_.push_back({{plan.name, static_cast<int>(i), task.label, 0.0}, start, end});
      }
    }
    if (records_.launched(plan)) context_pending_ = true;
    // Debug mode: an error names the launch that caused it. A kernel that
    // prints: its output appears when the launch returns, in order.
    if (debug_ || plan.prints) {
      try {
        sync();
      } catch (const Error& e) {
        const std::string what = e.what();
        if (what.find("kernel '") == 0) throw;
        throw Error("kernel '" + plan.name + "' failed on " + info_.name + ": " + what);
      }
    }
  }

  void sync() override {
    current();
    wait();
  }

  // Each task is timed between two events recorded on the stream.
  void set_profiling(bool on) override { profiling_ = on; }

  // The tasks timed by events whose end has passed, oldest first; each
  // pair of events is kept for later launches.
  void take_task_times(std::vector<TaskTime>& out) override {
    if (timed_.empty()) return;
    current();
    while (!timed_.empty()) {
      Timed& t = timed_.front();
      if (d_.cuEventQuery(t.end) == CUDA_ERROR_NOT_READY) return;
      float ms = 0;
      if (d_.cuEventElapsedTime(&ms, t.start, t.end) == CUDA_SUCCESS) {
        t.time.seconds = double{ms} * 1e-3;
        out.push_back(std::move(t.time));
      }
      spare_events_.push_back(t.start);
      spare_events_.push_back(t.end);
      timed_.pop_front();
    }
  }

 private:
  struct Buffer {
    CUdeviceptr ptr = 0;
    int64_t words = 0;
  };

  void current() { d_.check(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

  // The plan's PTX compiled by the driver for this GPU, loaded into `k`;
  // the binary goes into the plan (its loaded copy, which the backend
  // caches). Through the driver's linker, which hands the binary back;
  // where that fails, through cuModuleLoadDataEx, whose log says why the
  // PTX does not compile.
  void compile(KernelPlan& plan, CudaKernel& k) {
    ++ptx_compiles_;
    PtxCode& code = plan.ptx();
    code.binary.clear();
    code.binary_target.clear();
    const std::string& ptx = code.ptx;  // NUL-terminated for the driver (c_str)
    std::string log(8192, '\0');
    int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(log.size()))};
    CUlinkState link = nullptr;
    CUresult r = d_.cuLinkCreate_v2(2, options, values, &link);
    if (r == CUDA_SUCCESS)
      r = d_.cuLinkAddData_v2(link, CU_JIT_INPUT_PTX, const_cast<char*>(ptx.c_str()), ptx.size() + 1, plan.name.c_str(),
                              0, nullptr, nullptr);
    void* cubin = nullptr;
    size_t size = 0;
    if (r == CUDA_SUCCESS) r = d_.cuLinkComplete(link, &cubin, &size);
    if (r == CUDA_SUCCESS && cubin != nullptr && size > 0) {  // the linker owns it: copied before it goes
      const auto* bytes = static_cast<const uint8_t*>(cubin);
      code.binary.assign(bytes, bytes + size);
    }
    if (link != nullptr) d_.cuLinkDestroy(link);
    if (!code.binary.empty() && d_.cuModuleLoadDataEx(&k.module, code.binary.data(), 0, nullptr, nullptr) == CUDA_SUCCESS) {
      code.binary_target = binary_target();
      return;
    }
    code.binary.clear();
    k.module = nullptr;
    std::fill(log.begin(), log.end(), '\0');
    r = d_.cuModuleLoadDataEx(&k.module, ptx.c_str(), 2, options, values);
    if (r != CUDA_SUCCESS) {
      log.resize(std::min(log.find('\0'), log.size()));
      throw Error("kernel '" + plan.name + "': the CUDA driver cannot load its PTX: " + d_.describe(r) +
                  (log.empty() ? "" : "\n" + log));
    }
  }

  // Waits for the stream; reports what launches left in the context buffer.
  void wait() {
    const CUresult r = d_.cuStreamSynchronize(stream_);
    if (r != CUDA_SUCCESS)
      throw Error("a kernel failed on " + info_.name + ": " + d_.describe(r) +
                  " (Config::debug names the kernel; the CUDA context cannot be used after this)");
    if (context_pending_) report_context();
  }

  // Blocks and threads per block along x, y and z.
  struct Launch {
    unsigned blocks[3] = {1, 1, 1};
    unsigned threads[3] = {1, 1, 1};
  };

  // A task spread over a grid (TaskPlan::grid; the task's own loop
  // outermost, the last grid axis on x) runs blocks shaped for the counts
  // of this launch (rt::grid_group_sizes: its code reads the block's shape,
  // so a row of 3 points takes blocks 4 wide, not the plan's 64), as many
  // along each axis as its count needs, at most 65535 along y and z and
  // kBlocksPerMultiprocessor per multiprocessor along x: each loop strides
  // over what is past them. Another runs grid_of's blocks.
  Launch launch_of(const TaskPlan& task, std::span<const uint64_t> args) const {
    Launch out;
    if (task.grid.empty()) {
      out.blocks[0] = grid_of(task, args);
      out.threads[0] = task.parallel ? kBlockThreads : 1;
      return out;
    }
    const std::vector<int64_t> counts = grid_counts(task, args, "task '" + task.label + "'");
    const size_t axes = counts.size();
    const std::vector<uint32_t> sizes = grid_group_sizes(counts, kBlockThreads);
    const unsigned most[3] = {std::max(1, info_.multiprocessors) * kBlocksPerMultiprocessor, 65535, 65535};
    for (size_t a = 0; a < axes; ++a) {
      const size_t dim = axes - 1 - a;
      out.threads[dim] = sizes[a];
      out.blocks[dim] = static_cast<unsigned>(std::min<int64_t>((counts[a] + sizes[a] - 1) / sizes[a], most[dim]));
    }
    return out;
  }

  unsigned grid_of(const TaskPlan& task, std::span<const uint64_t> args) const {
    if (!task.parallel) return 1;
    const unsigned most = std::max(1, info_.multiprocessors) * kBlocksPerMultiprocessor;
    const int64_t n = rt::host_iterations(task, args).value_or(-1);
    if (n < 0) return most;  // found on the device: the grid strides over it
    int64_t blocks = (n + kBlockThreads - 1) / kBlockThreads;
    // A loop that sums in registers: a thread takes iterations_per_invocation,
    // unless that left the GPU short of threads to hide memory's latency
    // behind (a full load: 2048 threads a multiprocessor on sm_70 to sm_90),
    // which a loop whose body does more than the sum needs.
    if (task.iterations_per_invocation > 1) {
      const int64_t per_block = int64_t{kBlockThreads} * task.iterations_per_invocation;
      const int64_t full = int64_t{std::max(1, info_.multiprocessors)} * (2048 / kBlockThreads);
      blocks = std::min(blocks, std::max((n + per_block - 1) / per_block, full));
    }
    return static_cast<unsigned>(std::min<int64_t>(blocks, most));
  }

  CUdeviceptr tree(int id) {
    auto it = buffers_.find(id);
    if (it == buffers_.end()) throw InternalError("CUDA device: launch with buffer " + std::to_string(id) + ", which does not exist");
    return it->second.ptr;
  }

  const Buffer& buffer(int id, int64_t offset, int64_t count, const char* what) {
    auto it = buffers_.find(id);
    if (it == buffers_.end())
      throw InternalError("CUDA device: host " + std::string(what) + " of buffer " + std::to_string(id) +
                          ", which does not exist");
    const Buffer& b = it->second;
    if (offset < 0 || count < 0 || offset > b.words - count)
      throw InternalError("CUDA device: host " + std::string(what) + " of words [" + std::to_string(offset) + ", " +
                          std::to_string(offset) + " + " + std::to_string(count) + ") of buffer " + std::to_string(id) +
                          ", which has " + std::to_string(b.words) + " words");
    return b;
  }

  void destroy_if_present(int id) {
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return;
    d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");  // no launch still uses it
    d_.cuMemFree_v2(it->second.ptr);
    buffers_.erase(it);
  }

  void make_context(uint32_t ring_words) {
    if (context_buffer_) {
      d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
      d_.cuMemFree_v2(context_buffer_);
      context_buffer_ = 0;
    }
    const size_t words = ctx::kHeaderWords + size_t{ring_words};
    d_.check(d_.cuMemAlloc_v2(&context_buffer_, words * 4), "allocating the context buffer on " + info_.name);
    d_.check(d_.cuMemsetD32Async(context_buffer_, 0, words, stream_), "cuMemsetD32Async");
    // From pageable memory: copied out before the call returns.
    d_.check(d_.cuMemcpyHtoDAsync_v2(context_buffer_ + ctx::kPrintCapacity * 4, &ring_words, 4, stream_),
             "cuMemcpyHtoDAsync");
    ring_words_ = ring_words;
    message_base_ = 0;  // the new buffer's word is 0
    d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  // The launches' records: their prints, then a failed assertion (raised).
  void report_context() {
    context_pending_ = false;
    uint32_t header[ctx::kHeaderWords];
    d_.check(d_.cuMemcpyDtoHAsync_v2(header, context_buffer_, sizeof header, stream_), "cuMemcpyDtoHAsync");
    d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    if (!ContextRecords::any(header)) return;
    uint32_t cleared[ctx::kHeaderWords] = {};
    cleared[ctx::kPrintCapacity] = ring_words_;
    cleared[ctx::kMessageBase] = message_base_;
    d_.check(d_.cuMemcpyHtoDAsync_v2(context_buffer_, cleared, sizeof cleared, stream_), "cuMemcpyHtoDAsync");
    std::vector<uint32_t> ring(std::min(header[ctx::kPrintHead], ring_words_));
    if (!ring.empty()) {
      d_.check(d_.cuMemcpyDtoHAsync_v2(ring.data(), context_buffer_ + ctx::kHeaderWords * 4, ring.size() * 4, stream_),
               "cuMemcpyDtoHAsync");
    }
    d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    const uint32_t wanted = records_.print(header, ring, ring_words_);
    if (wanted > ring_words_) make_context(wanted);
    records_.raise_assertion(header);
  }

  const Driver& d_;
  DeviceInfo info_;
  bool debug_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::map<int, Buffer> buffers_;
  CUdeviceptr context_buffer_ = 0;  // header, then the print ring
  uint32_t ring_words_ = 0;
  uint32_t message_base_ = 0;       // what the context's kMessageBase word holds
  int64_t ptx_compiles_ = 0;        // loads that compiled PTX (no binary for this GPU)
  bool context_pending_ = false;
  // Profiling: a task between two events, and events ready for reuse.
  struct Timed {
    TaskTime time;
    CUevent start, end;
  };
  std::deque<Timed> timed_;
  std::vector<CUevent> spare_events_;
  CUevent event() {
    if (!spare_events_.empty()) {
      CUevent e = spare_events_.back();
      spare_events_.pop_back();
      return e;
    }
    CUevent e = nullptr;
    d_.check(d_.cuEventCreate(&e, 0), "cuEventCreate");
    return e;
  }
  ContextRecords records_;
};

}  // namespace

std::vector<DeviceInfo> enumerate_devices() {
  const Driver& d = Driver::get();
  int count = 0;
  d.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  std::vector<DeviceInfo> out;
  for (int i = 0; i < count; ++i) out.push_back(describe(d, i));
  return out;
}

std::unique_ptr<Device> make_device(const std::string& selection, bool debug, PrintSink print, const std::string& option) {
  const Driver& d = Driver::get();
  const std::vector<DeviceInfo> devices = enumerate_devices();
  if (devices.empty()) throw Error("the CUDA driver found no CUDA device");
  std::string wanted = selection;
  const char* env = std::getenv("GROVE_CUDA_DEVICE");
  const bool from_env = wanted.empty() && env != nullptr && *env != '\0';
  if (from_env) wanted = env;
  const DeviceInfo* picked = &devices.front();
  if (!wanted.empty()) {
    picked = nullptr;
    char* end = nullptr;
    const long index = std::strtol(wanted.c_str(), &end, 10);
    if (*end == '\0') {
      if (index >= 0 && index < static_cast<long>(devices.size())) picked = &devices[static_cast<size_t>(index)];
    } else {
      for (const DeviceInfo& info : devices)
        if (lower(info.name).find(lower(wanted)) != std::string::npos) {
          picked = &info;
          break;
        }
    }
    if (picked == nullptr) {
      std::string list;
      for (const DeviceInfo& info : devices) list += "\n  " + std::to_string(info.index) + ": " + info.name;
      throw Error((from_env ? std::string("GROVE_CUDA_DEVICE") : option) + " is \"" + wanted +
                  "\", which names none of the CUDA devices here (give an index or part of a name):" + list);
    }
  }
  return std::make_unique<CudaDevice>(d, *picked, debug, std::move(print));
}

const DeviceInfo* info_of(const Device& device) {
  const auto* c = dynamic_cast<const CudaDevice*>(&device);
  return c != nullptr ? &c->info() : nullptr;
}

int64_t ptx_compiles(const Device& device) {
  const auto* c = dynamic_cast<const CudaDevice*>(&device);
  return c != nullptr ? c->ptx_compiles() : -1;
}

}  // namespace grove::rt::cuda
