// tests/cpu/cache_test.cpp — the CPU backend's disk cache across processes:
// a second process finds every kernel on disk and calls LLVM for none (the
// probe reports llvm_backend::Jit::compilations()); a truncated, corrupt or
// misplaced entry is rebuilt, never trusted; and what cached code computes,
// prints and reports is what freshly compiled code does. Entries of each
// kind (the CPU's; the CUDA backend's plans) keep to their own files.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "llvm/disk_cache.h"

namespace {

namespace fs = std::filesystem;

struct ProbeRun {
  std::map<std::string, std::string> lines;  // "compilations" -> "3", ...
  std::string printed;
  int status = -1;
};

ProbeRun probe(const fs::path& dir) {
  ProbeRun r;
  const std::string command = std::string(GROVE_CACHE_PROBE) + " '" + dir.string() + "' 2>&1";
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) {
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    if (line.rfind("printed: ", 0) == 0) {
      r.printed += line.substr(9) + "\n";
      continue;
    }
    const size_t space = line.find(' ');
    if (space != std::string::npos) r.lines[line.substr(0, space)] = line.substr(space + 1);
  }
  r.status = pclose(p);
  return r;
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".grove-cpu") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The probe's ring: cells (i, j) of [0, 128)^2 at squared distance
// [39^2, 40^2) from (64, 64), each holding i + j.
long long expected_total() {
  long long t = 0;
  for (int i = 0; i < 128; ++i)
    for (int j = 0; j < 128; ++j) {
      const int d = (i - 64) * (i - 64) + (j - 64) * (j - 64);
      if (d >= 39 * 39 && d < 40 * 40) t += i + j;
    }
  return t;
}

class DiskCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("grove-cache-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A run whose results are the right ones; returns its compilations.
  int checked(const ProbeRun& r) {
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.lines.at("total"), std::to_string(expected_total()));
    EXPECT_EQ(r.printed, "summed " + std::to_string(expected_total()) + "\n");
    const std::string& error = r.lines.at("error");
    EXPECT_NE(error.find("kernel 'outside'"), std::string::npos) << error;
    EXPECT_NE(error.find("500"), std::string::npos) << error;
    return std::stoi(r.lines.at("compilations"));
  }
  fs::path dir_;
};

TEST_F(DiskCache, ASecondProcessCallsLlvmForNoKernel) {
  const int first = checked(probe(dir_));
  EXPECT_GE(first, 3);  // fill, sum, outside
  const std::vector<fs::path> files = entries(dir_);
  EXPECT_EQ(files.size(), static_cast<size_t>(first));
  EXPECT_EQ(checked(probe(dir_)), 0);
  EXPECT_EQ(entries(dir_), files);
}

TEST_F(DiskCache, ATruncatedEntryIsRebuilt) {
  checked(probe(dir_));
  const fs::path victim = entries(dir_).front();
  const auto size = fs::file_size(victim);
  fs::resize_file(victim, size / 2);
  EXPECT_EQ(checked(probe(dir_)), 1);
  EXPECT_EQ(fs::file_size(victim), size);  // rewritten whole
  EXPECT_EQ(checked(probe(dir_)), 0);
}

TEST_F(DiskCache, ACorruptEntryIsRebuilt) {
  checked(probe(dir_));
  const fs::path victim = entries(dir_).back();
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(fs::file_size(victim) / 2));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(fs::file_size(victim) / 2));
    f.write(&c, 1);
  }
  EXPECT_EQ(checked(probe(dir_)), 1);
  EXPECT_EQ(checked(probe(dir_)), 0);
}

TEST_F(DiskCache, AnEntryForAnotherKeyIsNotTrusted) {
  // A whole, valid file under another kernel's name: its key does not match.
  checked(probe(dir_));
  const std::vector<fs::path> files = entries(dir_);
  ASSERT_GE(files.size(), 2u);
  fs::copy_file(files[0], files[1], fs::copy_options::overwrite_existing);
  EXPECT_EQ(checked(probe(dir_)), 1);
  EXPECT_EQ(checked(probe(dir_)), 0);
}

// The layer both backends' entries go through: bytes under a key, of a
// kind. (The CUDA backend's use of it needs a GPU: tests/cuda.)
TEST(DiskCacheKinds, EachKindKeepsToItsFilesAndOnlyAWholeEntryOfItsKeyIsTrusted) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("grove-cache-kinds-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const grove::llvm_backend::DiskCache cuda(dir.string(), "cuda"), cpu(dir.string(), "cpu");
  const std::vector<uint8_t> plan = {1, 2, 3, 0, 255, 7};
  EXPECT_FALSE(cuda.load_bytes("kernel k").has_value());
  cuda.store_bytes("kernel k", plan);
  EXPECT_EQ(cuda.load_bytes("kernel k"), plan);
  EXPECT_FALSE(cuda.load_bytes("kernel j").has_value());
  EXPECT_EQ(fs::path(cuda.path_of("kernel k")).extension(), ".grove-cuda");
  EXPECT_EQ(fs::path(cpu.path_of("kernel k")).extension(), ".grove-cpu");
  EXPECT_FALSE(cpu.load_bytes("kernel k").has_value());  // absent: the CUDA entry is another file
  // The CUDA entry under the CPU entry's name: whole, same key, another kind.
  fs::copy_file(cuda.path_of("kernel k"), cpu.path_of("kernel k"));
  EXPECT_FALSE(cpu.load_bytes("kernel k").has_value());
  // Cut short: a miss, and a store makes it whole again.
  fs::resize_file(cuda.path_of("kernel k"), fs::file_size(cuda.path_of("kernel k")) - 3);
  EXPECT_FALSE(cuda.load_bytes("kernel k").has_value());
  cuda.store_bytes("kernel k", plan);
  EXPECT_EQ(cuda.load_bytes("kernel k"), plan);
  fs::remove_all(dir);
}

}  // namespace
