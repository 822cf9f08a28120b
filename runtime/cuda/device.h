// runtime/cuda/device.h — the runtime's CUDA device: tree buffers in GPU
// memory, kernels loaded from the binary their plans carry where it was
// made for this GPU and driver, else from their PTX, which the driver
// compiles (its binary then goes into the loaded plan: the CUDA backend
// keeps it in its disk cache), launches queued on one stream, and the context
// buffer's print and assert records reported as on every device. It needs
// the NVIDIA driver at run time only (runtime/cuda/driver.h), and nothing
// of LLVM or the CUDA toolkit.
//
// Launching a task (src/cuda/ptx.h's entry ABI): the context buffer and the
// task's trees, then each argument as 64 bits, as kernel parameters. A
// serial task runs in one thread; a parallel task in blocks of
// kBlockThreads, as many as its count needs where the plan computes the
// count on the host (a thread taking TaskPlan::iterations_per_invocation of
// them; at most kBlocksPerMultiprocessor per multiprocessor),
// else kBlocksPerMultiprocessor per multiprocessor, its grid-stride loop
// covering any count. A task spread over a 2-D or 3-D grid
// (TaskPlan::grid) runs blocks of kBlockThreads shaped for its counts, a
// grid-stride loop along each axis.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/device.h"

namespace grove::rt::cuda {

inline constexpr unsigned kBlockThreads = 256;
inline constexpr unsigned kBlocksPerMultiprocessor = 32;

struct DeviceInfo {
  int index = 0;
  std::string name;           // "NVIDIA H100 80GB HBM3"
  int sm = 0;                 // compute capability as major * 10 + minor: 90
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
  int driver_version = 0;     // 12040 for CUDA 12.4
};

// The CUDA devices of this machine; raises grove::Error saying why when
// there is no driver or no device.
std::vector<DeviceInfo> enumerate_devices();

// Opens device `selection` (an index, or a case-insensitive part of its
// name; "" means $GROVE_CUDA_DEVICE if set, else device 0). `debug`: every
// launch waits, so that an error names its kernel. `option` names where
// `selection` came from in errors.
std::unique_ptr<Device> make_device(const std::string& selection, bool debug, PrintSink print,
                                    const std::string& option = "Config::cuda_device");

// What a device made by make_device runs on (nullptr for other devices).
const DeviceInfo* info_of(const Device& device);
// How many kernels it loaded by compiling their PTX (-1 for other devices).
int64_t ptx_compiles(const Device& device);

}  // namespace grove::rt::cuda
