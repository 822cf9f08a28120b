// src/llvm/disk_cache.h — the LLVM backends' offline cache (Taichi's
// "offline cache"): one file per compiled kernel, under a key that names
// everything that decides the code (Grove's version and build, LLVM's, the
// target and its features, the code generator's options, the kernel's plan
// and its lowered IR text, in which every address and extent of its tree
// types is a constant). Entries are of a kind, which names their files
// (*.grove-<kind>): the CPU backend's ("cpu", src/llvm_cpu/jit.cpp) hold a shared
// object and what the runtime needs to call it (tasks, messages); the CUDA
// backend's ("cuda", src/program/cuda_backend.cpp) a whole kernel plan,
// its PTX and the driver's binary for the GPU it ran on.
//
// A file is trusted only when it reads back whole: the magic, the format
// version, the exact key (not only its hash, which names the file) and a
// checksum over everything before it. Anything else (missing, truncated,
// corrupt, made by another version or for another key) is a miss, and the
// kernel is compiled and the file rewritten. Files are written to a
// temporary name and renamed, so a reader never sees half a file, and
// processes sharing the directory at once are safe. The directory is kept
// under 512 MiB: past it, the entries read or written longest ago go.
// GROVE_CACHE_LOG=1 in the environment reports each lookup on stderr (a
// hit, or a miss and why).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace grove::llvm_backend {

class DiskCache {
 public:
  explicit DiskCache(std::string dir, std::string kind = "cpu") : dir_(std::move(dir)), kind_(std::move(kind)) {}
  const std::string& dir() const { return dir_; }

  // The payload of the entry for `key`, or nullopt (a miss: see above).
  std::optional<std::vector<uint8_t>> load_bytes(const std::string& key) const;
  // Writes the entry; a directory that cannot be written is reported once on
  // stderr and then left alone (a cache is never a reason to fail a launch).
  void store_bytes(const std::string& key, std::span<const uint8_t> payload) const;

  // The file an entry for `key` lives in.
  std::string path_of(const std::string& key) const;

  // $XDG_CACHE_HOME/grove, else $HOME/.cache/grove, else "" (no cache).
  static std::string default_dir();

 private:
  std::string dir_, kind_;
};

}  // namespace grove::llvm_backend
