// src/llvm/disk_cache.h — the LLVM backends' offline cache (Taichi's
// "offline cache"): one file per compiled kernel, holding its shared object
// and what the runtime needs to call it (tasks, messages), under a key that
// names everything that decides the code (codegen.cpp builds it: Grove's
// version, LLVM's, the target and its features, the code generator's
// options, the kernel's plan and its lowered IR text, in which every address
// and extent of its tree types is a constant).
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
#include <string>
#include <vector>

#include "llvm/codegen.h"

namespace grove::llvm_backend {


class DiskCache {
 public:
  explicit DiskCache(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  // The entry for `key` (its tasks, messages and shared object, with
  // source disk), or nullopt (a miss: see above).
  std::optional<CpuCode> load(const std::string& key) const;
  // Writes the entry; a directory that cannot be written is reported once on
  // stderr and then left alone (a cache is never a reason to fail a launch).
  // (The texts of `code` are not kept.)
  void store(const std::string& key, const CpuCode& code) const;
  // The file an entry for `key` lives in.
  std::string path_of(const std::string& key) const;

  // $XDG_CACHE_HOME/grove, else $HOME/.cache/grove, else "" (no cache).
  static std::string default_dir();

 private:
  std::string dir_;
};

}  // namespace grove::llvm_backend
