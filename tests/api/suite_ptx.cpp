// tests/api/suite_ptx.cpp — with GROVE_TEST_PTX_DIR and GROVE_TEST_PTX_SM
// set, every kernel this test binary compiles (on any backend) is also
// translated to PTX for that target by the CUDA backend's code generator
// and written to $GROVE_TEST_PTX_DIR/sm_NN/<kernel>-<hash>.ptx (a kernel
// whose lowered IR was seen before is skipped).
// ctest runs the suite so on the interpreter (lowered as for a GPU: one cell
// per iteration), then tests/cuda/ptxas_test.cpp assembles every file with
// the CUDA toolkit's ptxas. A kernel the generator refuses fails its test.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cuda/ptx.h"
#include "ir/ir.h"
#include "ir/printer.h"
#include "program/backend.h"
#include "program/test_hooks.h"

namespace {

struct SuitePtx {
  SuitePtx() {
    const char* dir = std::getenv("GROVE_TEST_PTX_DIR");
    const char* sm = std::getenv("GROVE_TEST_PTX_SM");
    if (dir == nullptr || *dir == '\0' || sm == nullptr) return;
    auto compiler = std::make_shared<grove::cuda::PtxCompiler>(std::atoi(sm));
    const std::filesystem::path out = std::filesystem::path(dir) / ("sm_" + std::to_string(compiler->sm()));
    std::filesystem::create_directories(out);
    auto seen = std::make_shared<std::set<std::string>>();
    auto mutex = std::make_shared<std::mutex>();
    grove::detail::set_lowered_kernel_observer([=](const grove::ir::Kernel& kernel, bool debug) {
      {
        std::lock_guard lock(*mutex);
        if (!seen->insert(std::to_string(debug) + grove::ir::print_kernel(kernel)).second) return;
      }
      const std::string name = grove::detail::dump_name(kernel.name());
      const std::string ptx = compiler->compile(kernel, debug).ptx;
      char hash[20];
      std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(std::hash<std::string>{}(ptx)));
      const auto path = out / (name.substr(0, 48) + "-" + hash + ".ptx");
      if (!std::filesystem::exists(path)) std::ofstream(path) << ptx;
    });
  }
} g_suite_ptx;

}  // namespace
