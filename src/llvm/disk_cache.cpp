// src/llvm/disk_cache.cpp — see disk_cache.h. No LLVM header here.
#include "llvm/disk_cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>

#include "grove/error.h"
#include "runtime/core/bytes.h"

namespace grove::llvm_backend {

namespace {

constexpr uint32_t kMagic = 0x4f565247u;  // "GRVO"
constexpr uint32_t kFormatVersion = 6;  // 2: a shared object; 3: hash64 checksums and names; 4: the entry's kind, any payload; 5: messages without ids; 6: print records with 64-bit values aligned

// A 64-bit hash of n bytes, eight at a time in four independent lanes (xor,
// multiply by an odd constant, rotate: each step a bijection of the word, so
// a change to one word always changes its lane): the file's name (from the
// key) and its checksum. A key holds the kernel's IR text (tens of KB), so a
// byte at a time (FNV-1a) cost more than the rest of a hit's reading.
uint64_t hash64(const uint8_t* p, size_t n) {
  constexpr uint64_t kOdd = 0x9e3779b97f4a7c15ull;
  uint64_t lane[4] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull, 0x082efa98ec4e6c89ull};
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      lane[k] = std::rotl((lane[k] ^ w) * kOdd, 29);
    }
  }
  uint64_t tail[4] = {0, 0, 0, 0};
  std::memcpy(tail, p + i, n - i);
  uint64_t h = static_cast<uint64_t>(n) * kOdd;
  for (int k = 0; k < 4; ++k) {
    h ^= std::rotl((lane[k] ^ tail[k]) * kOdd, 29);
    h = (h ^ h >> 32) * 0xd6e8feb86659fd93ull;
  }
  return h ^ h >> 32;
}

// A file: magic, version, kind, key, the payload, then a checksum of it all.
std::vector<uint8_t> wrap(const std::string& kind, const std::string& key, std::span<const uint8_t> payload) {
  rt::ByteWriter w;
  w.u32(kMagic);
  w.u32(kFormatVersion);
  w.str(kind);
  w.str(key);
  w.bytes(payload);
  std::vector<uint8_t> out = w.take();
  const uint64_t sum = hash64(out.data(), out.size());
  const auto* s = reinterpret_cast<const uint8_t*>(&sum);
  out.insert(out.end(), s, s + 8);
  return out;
}

// The payload of a file; throws grove::Error (caught by load_bytes) at the
// first thing that is wrong.
std::vector<uint8_t> unwrap(const std::vector<uint8_t>& bytes, const std::string& kind, const std::string& key,
                            const std::string& path) {
  if (bytes.size() < 8) throw Error(path + ": shorter than its checksum");
  uint64_t sum = 0;
  std::memcpy(&sum, bytes.data() + bytes.size() - 8, 8);
  if (hash64(bytes.data(), bytes.size() - 8) != sum) throw Error(path + ": checksum mismatch");
  rt::ByteReader r(std::span<const uint8_t>(bytes.data(), bytes.size() - 8), path);
  if (r.u32() != kMagic) r.fail("not a Grove cache file");
  if (r.u32() != kFormatVersion) r.fail("another format version");
  if (r.str() != kind) r.fail("an entry of another kind");
  if (r.str() != key) r.fail("made for another kernel or build (stale)");
  std::vector<uint8_t> payload = r.bytes();
  if (r.left() != 0) r.fail("bytes after the payload");
  return payload;
}

// The directory's size is kept under kMaxBytes: past it, the files used
// longest ago go first (a read refreshes a file's time), down to half.
constexpr uintmax_t kMaxBytes = uintmax_t{512} << 20;

void trim(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  uintmax_t total = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension().string().rfind(".grove-", 0) != 0 || !e.is_regular_file(ec)) continue;  // every kind
    total += e.file_size(ec);
    files.emplace_back(e.last_write_time(ec), e.path());
  }
  if (total <= kMaxBytes) return;
  std::sort(files.begin(), files.end());
  for (const auto& [time, path] : files) {
    if (total <= kMaxBytes / 2) break;
    const uintmax_t size = fs::file_size(path, ec);
    if (fs::remove(path, ec)) total -= size;
  }
}

}  // namespace

std::string DiskCache::default_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') return std::string(xdg) + "/grove";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') return std::string(home) + "/.cache/grove";
  return "";
}

std::string DiskCache::path_of(const std::string& key) const {
  char name[40];
  std::snprintf(name, sizeof name, "%016llx.grove-",
                static_cast<unsigned long long>(hash64(reinterpret_cast<const uint8_t*>(key.data()), key.size())));
  return (std::filesystem::path(dir_) / (name + kind_)).string();
}

std::optional<std::vector<uint8_t>> DiskCache::load_bytes(const std::string& key) const {
  const std::string path = path_of(key);
  const bool tell = std::getenv("GROVE_CACHE_LOG") != nullptr;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    if (tell) std::cerr << "[grove] cache: " << path << ": miss (absent)\n";
    return std::nullopt;
  }
  const std::streamoff size = in.tellg();
  std::vector<uint8_t> bytes(size > 0 ? static_cast<size_t>(size) : 0);
  in.seekg(0);
  if (size < 0 || !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()))) {
    if (tell) std::cerr << "[grove] cache: " << path << ": miss (unreadable)\n";
    return std::nullopt;
  }
  try {
    std::vector<uint8_t> payload = unwrap(bytes, kind_, key, path);
    std::error_code ec;
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ec);  // used now
    if (tell) std::cerr << "[grove] cache: " << path << ": hit\n";
    return payload;
  } catch (const Error& e) {
    if (tell) std::cerr << "[grove] cache: miss (" << e.what() << ")\n";
    return std::nullopt;  // rebuilt and rewritten by the caller
  }
}

void DiskCache::store_bytes(const std::string& key, std::span<const uint8_t> payload) const {
  static std::atomic<bool> warned{false}, trimmed{false};
  static std::atomic<uint64_t> serial{0};
  const std::string path = path_of(key);
  const std::string temp = path + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(serial++);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const std::vector<uint8_t> bytes = wrap(kind_, key, payload);
  bool ok = !ec;
  if (ok) {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ok = static_cast<bool>(out.flush());
  }
  if (ok) {
    std::filesystem::rename(temp, path, ec);
    ok = !ec;
  }
  if (ok && !trimmed.exchange(true)) trim(dir_);  // once per process
  if (!ok) {
    std::filesystem::remove(temp, ec);
    if (!warned.exchange(true))
      std::cerr << "[grove] warning: cannot write the kernel cache in '" << dir_
                << "'; kernels are compiled again in each process (set Config::cache_dir to a writable "
                   "directory, or to \"off\")\n";
  }
}

}  // namespace grove::llvm_backend
