// tests/api/backend_fixture.h — runs an API test once per backend compiled in.
// On CUDA it skips (with the reason) where there is no driver or GPU. On
// Vulkan it skips (with the reason) when no device can be opened, checks
// every SPIR-V module with the validator (GROVE_VALIDATE_SPIRV=1), runs with
// the Khronos validation layer on, and fails the test if the layer said
// anything.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <ostream>
#include <string>
#include <typeinfo>
#include <vector>

#include "grove/grove.h"
#include "program/test_hooks.h"

namespace grove {
// How gtest shows a backend parameter ("GetParam() = cuda" in test names).
inline void PrintTo(Arch a, std::ostream* os) { *os << arch_name(a); }
}  // namespace grove

namespace grove::testing {

// Empty if a validated Vulkan program can be created, else why not (probed once).
inline const std::string& vulkan_unavailable_reason() {
  static const std::string reason = []() -> std::string {
    try {
      Config c;
      c.arch = Arch::Vulkan;
      c.vulkan_validation = true;
      Program probe(c);
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }();
  return reason;
}

// Why a test that needs a Vulkan device cannot run here, or "" when it can.
inline std::string vulkan_skip_reason() {
  bool built = false;
  for (Arch a : compiled_backends()) built |= a == Arch::Vulkan;
  if (!built) return "the Vulkan backend is not built in";
  if (!vulkan_unavailable_reason().empty()) return "no Vulkan: " + vulkan_unavailable_reason();
  return "";
}

// Empty if a CUDA program can be created, else why not (probed once).
inline const std::string& cuda_unavailable_reason() {
  static const std::string reason = []() -> std::string {
    try {
      Config c;
      c.arch = Arch::Cuda;
      Program probe(c);
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }();
  return reason;
}

// Parameterised over every backend of compiled_backends(); later backends
// run the same tests and must give identical results.
class BackendTest : public ::testing::TestWithParam<Arch> {
 protected:
  void SetUp() override {
    if (GetParam() == Arch::Cuda && !cuda_unavailable_reason().empty())
      GTEST_SKIP() << "no CUDA: " << cuda_unavailable_reason();
    if (GetParam() != Arch::Vulkan) return;
    if (!vulkan_unavailable_reason().empty()) GTEST_SKIP() << "no Vulkan: " << vulkan_unavailable_reason();
    setenv("GROVE_VALIDATE_SPIRV", "1", 1);
    messages_before_ = detail::vulkan_validation_messages().size();
  }

  void TearDown() override {
    if (GetParam() != Arch::Vulkan || IsSkipped()) return;
    std::vector<std::string> all = detail::vulkan_validation_messages();
    std::string fresh;
    for (size_t n = messages_before_; n < all.size(); ++n) fresh += all[n] + "\n";
    EXPECT_TRUE(fresh.empty()) << "the Vulkan validation layer reported:\n" << fresh;
  }

  Config config() const {
    Config c;
    c.arch = GetParam();
    c.verify_ir = true;
    c.vulkan_validation = GetParam() == Arch::Vulkan;
    return c;
  }
  Config debug_config() const {
    Config c = config();
    c.debug = true;
    return c;
  }

 private:
  size_t messages_before_ = 0;
};

// Runs `f`, expects a grove::Error, and returns its message (a test
// failure when `f` returns, or raises anything else: an internal error is a
// bug in Grove, never the answer to a user's mistake).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a grove::Error, got " << typeid(e).name() << ": " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a grove::Error";
  return "";
}

inline std::string backend_name(const ::testing::TestParamInfo<Arch>& info) {
  return std::string(arch_name(info.param));
}

// Every backend compiled in but the interpreter, which suites that compare
// a backend with the interpreter take as their reference.
inline std::vector<Arch> backends_compared_with_the_interpreter() {
  std::vector<Arch> out;
  for (Arch a : compiled_backends())
    if (a != Arch::Interp) out.push_back(a);
  return out;
}

}  // namespace grove::testing

#define GROVE_ALL_BACKENDS(Suite)                                                   \
  INSTANTIATE_TEST_SUITE_P(Backends, Suite, ::testing::ValuesIn(grove::compiled_backends()), \
                           grove::testing::backend_name)
