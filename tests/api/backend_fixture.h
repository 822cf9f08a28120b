// tests/api/backend_fixture.h — runs an API test once per backend compiled in.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "grove/grove.h"

namespace grove::testing {

// Parameterised over every backend of compiled_backends(); later backends
// run the same tests and must give identical results.
class BackendTest : public ::testing::TestWithParam<Arch> {
 protected:
  Config config() const {
    Config c;
    c.arch = GetParam();
    c.verify_ir = true;
    return c;
  }
  Config debug_config() const {
    Config c = config();
    c.debug = true;
    return c;
  }
};

inline std::string backend_name(const ::testing::TestParamInfo<Arch>& info) {
  return std::string(arch_name(info.param));
}

}  // namespace grove::testing

#define GROVE_ALL_BACKENDS(Suite)                                                   \
  INSTANTIATE_TEST_SUITE_P(Backends, Suite, ::testing::ValuesIn(grove::compiled_backends()), \
                           grove::testing::backend_name)
