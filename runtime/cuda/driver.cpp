// runtime/cuda/driver.cpp — opening the CUDA driver (driver.h).
#include "runtime/cuda/driver.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "grove/error.h"

namespace grove::rt::cuda {

namespace {

// The driver, or why there is none.
struct Loaded {
  Driver driver;
  std::string missing;  // "" when the driver works
};

Loaded open_driver() {
  Loaded out;
  void* lib = nullptr;
  std::string tried;
  for (const char* name : {"libcuda.so.1", "libcuda.so"}) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    const char* why = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (why != nullptr ? why : name);
  }
  if (lib == nullptr) {
    out.missing = "no CUDA driver was found (" + tried + "); install NVIDIA's driver, or use another Arch";
    return out;
  }
  Driver& d = out.driver;
  std::string absent;
#define GROVE_CUDA_LOAD(name, ...)                                                    \
  d.name = reinterpret_cast<std::add_pointer_t<__VA_ARGS__>>(dlsym(lib, #name));       \
  if (d.name == nullptr) absent += std::string(absent.empty() ? "" : ", ") + #name;
  GROVE_CUDA_FUNCTIONS(GROVE_CUDA_LOAD)
#undef GROVE_CUDA_LOAD
  if (!absent.empty()) {
    out.missing = "the CUDA driver found lacks " + absent + "; update NVIDIA's driver";
    return out;
  }
  const CUresult r = d.cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    out.missing = "no CUDA driver was found (libcuda is the toolkit's stub library, not a driver); install "
                  "NVIDIA's driver, or use another Arch";
  } else if (r == CUDA_ERROR_NO_DEVICE) {
    out.missing = "the CUDA driver found no CUDA device";
  } else if (r != CUDA_SUCCESS) {
    out.missing = "the CUDA driver failed to start: cuInit: " + d.describe(r);
  } else {
    d.cuDriverGetVersion(&d.version);
  }
  return out;
}

}  // namespace

const Driver& Driver::get() {
  static const Loaded loaded = open_driver();
  if (!loaded.missing.empty()) throw Error(loaded.missing);
  return loaded.driver;
}

std::string Driver::describe(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr)
    return "CUDA error " + std::to_string(r);
  std::string out = name;
  if (cuGetErrorString != nullptr && cuGetErrorString(r, &text) == CUDA_SUCCESS && text != nullptr)
    out += std::string(" (") + text + ")";
  return out;
}

void Driver::check(CUresult r, const std::string& what) const {
  if (r != CUDA_SUCCESS) throw Error(what + ": " + describe(r));
}

}  // namespace grove::rt::cuda
