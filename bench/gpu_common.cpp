// gpu_common.cpp — see gpu_common.h.
#include "gpu_common.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

#ifdef GROVE_BENCH_VULKAN
#include "vulkan_common.h"
#endif
#ifdef GROVE_BENCH_CUDA
#include "cuda_common.h"
#endif

namespace grove_bench::gpu {

const std::vector<Backend>& backends() {
  static const std::vector<Backend> found = [] {
    std::vector<Backend> out;
#ifdef GROVE_BENCH_VULKAN
    if (std::string why; vkb::device_available(&why)) {
      out.push_back({grove::Arch::Vulkan, "vk", vkb::kGlsl, vkb::kDevice, vkb::hand_written});
    } else {
      std::fprintf(stderr, "grove_bench: skipping the Vulkan benchmarks: %s\n", why.c_str());
    }
#endif
    const std::vector<grove::Arch>& runnable = runnable_backends();
    if (std::find(runnable.begin(), runnable.end(), grove::Arch::Cuda) != runnable.end()) {
#ifdef GROVE_BENCH_CUDA
      out.push_back({grove::Arch::Cuda, "cuda", cudab::kNvcc, cudab::kDriver, cudab::hand_written});
#else
      std::fprintf(stderr, "grove_bench: skipping the CUDA rows against nvcc: no nvcc was found when Grove was "
                           "configured (looked at CUDA_PATH, CUDA_HOME, /usr/local/cuda and PATH)\n");
#endif
    }
    return out;
  }();
  return found;
}

std::string workload(const Backend& backend, std::string_view name) {
  return std::string(backend.prefix) + "_" + std::string(name);
}

Pair hand_written_pair(std::function<void()> grove_run, std::shared_ptr<HandWritten> device,
                       std::vector<HandWritten::Launch> launches, std::int64_t items_per_run) {
  Pair p;
  p.grove.run = std::move(grove_run);
  p.baseline.run = [device = std::move(device), launches = std::move(launches)] {
    for (HandWritten::Launch l : launches) device->launch(l);
    device->sync();
  };
  p.items_per_run = items_per_run;
  return p;
}

void report_bandwidth(Pair& pair, double bytes_per_run, double peak_bytes_per_second) {
  pair.bytes_per_run = bytes_per_run;
  if (peak_bytes_per_second <= 0) return;
  pair.derive = [bytes_per_run, peak_bytes_per_second](double grove_s, double baseline_s, Counters& out) {
    out.emplace_back("grove_of_peak", bytes_per_run / grove_s / peak_bytes_per_second);
    out.emplace_back("baseline_of_peak", bytes_per_run / baseline_s / peak_bytes_per_second);
    out.emplace_back("peak_GBps", peak_bytes_per_second / 1e9);
  };
}

std::uint32_t groups_for(std::uint64_t invocations, std::uint32_t group_size) {
  return static_cast<std::uint32_t>((invocations + group_size - 1) / group_size);
}

std::uint32_t float_bits(float f) { return std::bit_cast<std::uint32_t>(f); }

grove::Expr hash_dsl(const grove::Expr& n, const grove::Expr& salt) {
  using grove::Expr;
  Expr h = n * 0x9E3779B1u ^ salt;
  h = (h ^ (h >> 15u)) * 0x2C1B3C6Du;
  h = (h ^ (h >> 12u)) * 0x297A2D39u;
  return h ^ (h >> 15u);
}

std::string compare(std::span<const float> got, std::span<const float> want, float tolerance,
                    std::string_view what) {
  if (got.size() != want.size()) {
    return std::string(what) + ": " + std::to_string(got.size()) + " values, expected " +
           std::to_string(want.size());
  }
  size_t first = got.size(), wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= tolerance)) {
      if (wrong++ == 0) first = i;
    }
  }
  if (wrong == 0) return {};
  char buf[160];
  std::snprintf(buf, sizeof buf, ": %zu mismatch(es), first at %zu: %.9g, expected %.9g", wrong, first,
                static_cast<double>(got[first]), static_cast<double>(want[first]));
  return std::string(what) + buf;
}

void check(const std::string& error) {
  if (!error.empty()) throw grove::Error(error);
}

}  // namespace grove_bench::gpu
