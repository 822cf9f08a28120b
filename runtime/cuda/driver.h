// runtime/cuda/driver.h — the CUDA driver API, opened at run time with
// dlopen (libcuda.so.1): Grove links nothing of CUDA, and a machine with no
// NVIDIA driver runs every other backend. Only the handful of entry points
// the CUDA device uses are declared, with the types of the driver's ABI
// (cuda.h's values for the constants); the versioned names (`_v2`) are the
// ones cuda.h maps its calls to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace grove::rt::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUlinkState = struct CUlinkState_st*;
using CUevent = struct CUevent_st*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36;  // kHz
inline constexpr int CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37;  // bits
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
inline constexpr int CU_JIT_INPUT_PTX = 1;  // CUjitInputType
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 1;

#define GROVE_CUDA_FUNCTIONS(X)                                                                          \
  X(cuInit, CUresult(unsigned))                                                                      \
  X(cuDriverGetVersion, CUresult(int*))                                                              \
  X(cuGetErrorName, CUresult(CUresult, const char**))                                                \
  X(cuGetErrorString, CUresult(CUresult, const char**))                                              \
  X(cuDeviceGetCount, CUresult(int*))                                                                \
  X(cuDeviceGet, CUresult(CUdevice*, int))                                                           \
  X(cuDeviceGetName, CUresult(char*, int, CUdevice))                                                 \
  X(cuDeviceGetAttribute, CUresult(int*, int, CUdevice))                                             \
  X(cuDeviceTotalMem_v2, CUresult(size_t*, CUdevice))                                                \
  X(cuDevicePrimaryCtxRetain, CUresult(CUcontext*, CUdevice))                                        \
  X(cuDevicePrimaryCtxRelease_v2, CUresult(CUdevice))                                                \
  X(cuCtxSetCurrent, CUresult(CUcontext))                                                            \
  X(cuStreamCreate, CUresult(CUstream*, unsigned))                                                   \
  X(cuStreamDestroy_v2, CUresult(CUstream))                                                          \
  X(cuStreamSynchronize, CUresult(CUstream))                                                         \
  X(cuMemAlloc_v2, CUresult(CUdeviceptr*, size_t))                                                   \
  X(cuMemFree_v2, CUresult(CUdeviceptr))                                                             \
  X(cuMemsetD32Async, CUresult(CUdeviceptr, unsigned, size_t, CUstream))                             \
  X(cuMemcpyHtoDAsync_v2, CUresult(CUdeviceptr, const void*, size_t, CUstream))                      \
  X(cuMemcpyDtoHAsync_v2, CUresult(void*, CUdeviceptr, size_t, CUstream))                            \
  X(cuModuleLoadDataEx, CUresult(CUmodule*, const void*, unsigned, int*, void**))                    \
  X(cuModuleUnload, CUresult(CUmodule))                                                              \
  X(cuLinkCreate_v2, CUresult(unsigned, int*, void**, CUlinkState*))                                 \
  X(cuLinkAddData_v2, CUresult(CUlinkState, int, void*, size_t, const char*, unsigned, int*, void**)) \
  X(cuLinkComplete, CUresult(CUlinkState, void**, size_t*))                                          \
  X(cuLinkDestroy, CUresult(CUlinkState))                                                            \
  X(cuModuleGetFunction, CUresult(CUfunction*, CUmodule, const char*))                               \
  X(cuEventCreate, CUresult(CUevent*, unsigned))                                                     \
  X(cuEventDestroy_v2, CUresult(CUevent))                                                            \
  X(cuEventRecord, CUresult(CUevent, CUstream))                                                      \
  X(cuEventQuery, CUresult(CUevent))                                                                 \
  X(cuEventElapsedTime, CUresult(float*, CUevent, CUevent))                                          \
  X(cuLaunchKernel, CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
                                 unsigned, CUstream, void**, void**))

// The driver's entry points: X(name, function type). Raises grove::Error, saying why, when no
// driver can be opened (Driver::get keeps the first answer).
struct Driver {
#define GROVE_CUDA_DECLARE(name, ...) std::add_pointer_t<__VA_ARGS__> name = nullptr;
  GROVE_CUDA_FUNCTIONS(GROVE_CUDA_DECLARE)
#undef GROVE_CUDA_DECLARE
  int version = 0;  // cuDriverGetVersion: 12040 for CUDA 12.4

  // The process's driver, initialised (cuInit); raises grove::Error saying
  // "no CUDA driver was found" and why when there is none (no libcuda, a
  // stub library, no device).
  static const Driver& get();
  // "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string describe(CUresult r) const;
  // Raises grove::Error "<what>: <describe(r)>" unless r is CUDA_SUCCESS.
  void check(CUresult r, const std::string& what) const;
};

}  // namespace grove::rt::cuda
