// tests/support/scratch_dir.h — a directory of one test process's own.
//
// ctest runs several processes of one test binary at once (the suite on
// each backend, the AOT round trip, the PTX of the suite for each target),
// so a test that wrote to a fixed path under /tmp could find another
// process's files there, or see them removed under it. A ScratchDir is
// named after the test and the process, starts empty, and is removed when
// the test ends.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace grove::testing {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& file) const { return path_ / file; }

 private:
  std::filesystem::path path_;
};

}  // namespace grove::testing
