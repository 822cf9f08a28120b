// runtime/cpu/library.cpp — loading a kernel's shared object (library.h).
#include "runtime/cpu/library.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include "grove/error.h"

namespace grove::rt::cpu {

namespace {

bool write_all(int fd, std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// A spelling of /proc/self/fd/<fd> that no earlier call returned: glibc
// takes a library opened by the same path string as one already loaded,
// and descriptor numbers come back once closed. The n-th call spells n's
// binary digits, highest first, between "self/" and "fd": a 1 as "./", a 0
// as an extra "/". Every spelling names the same file, no two are alike,
// and none is the plain path another part of the process might use.
std::string memory_file_path(int fd) {
  static std::atomic<uint64_t> next{1};
  const uint64_t n = next.fetch_add(1, std::memory_order_relaxed);
  std::string path = "/proc/self/";
  for (int bit = 63 - __builtin_clzll(n); bit >= 0; --bit) path += (n >> bit & 1) != 0 ? "./" : "/";
  return path + "fd/" + std::to_string(fd);
}

// Memory files kept open after loading, for in-process symbolizers
// (sanitizer reports, backtraces) that read a library's file by the path it
// was loaded from: at most kKeptFiles, and at most an eighth of the
// descriptor limit, so that kernel count stays unbounded by it.
constexpr int kKeptFiles = 256;
std::atomic<int> g_kept_files{0};

bool keep_a_file() {
  rlimit limit{};
  const int64_t allowed = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                              ? static_cast<int64_t>(limit.rlim_cur / 8)
                              : kKeptFiles;
  int kept = g_kept_files.load(std::memory_order_relaxed);
  while (kept < std::min<int64_t>(kKeptFiles, allowed))
    if (g_kept_files.compare_exchange_weak(kept, kept + 1, std::memory_order_relaxed)) return true;
  return false;
}

}  // namespace

Library::Library(std::span<const uint8_t> bytes, const std::string& kernel, Via via) : kernel_(kernel) {
  if (bytes.empty())
    throw Error("kernel '" + kernel + "': its plan carries no CPU code; compile it for the CPU backend");
  // An anonymous memory file first; where the kernel has none, or where it
  // cannot be opened by its /proc path (no /proc, memory files without
  // execute permission), a private temporary file.
  // The descriptor is closed once dlopen has mapped the file (loaded or
  // not), but for the first few libraries (keep_a_file).
  std::string reason;
  for (bool memory : {true, false}) {
    std::string path;
    int fd = -1;
    if (memory) {
      if (via != Via::memory_file) continue;
      fd = static_cast<int>(::memfd_create(("grove:" + kernel).substr(0, 240).c_str(), MFD_CLOEXEC));
      if (fd < 0) {
        reason += (reason.empty() ? "" : "; ") + std::string("no memory file: ") + std::strerror(errno);
        continue;
      }
      path = memory_file_path(fd);
    } else {
      std::string name = (std::filesystem::temp_directory_path() / "grove-kernel-XXXXXX").string();
      fd = ::mkstemp(name.data());
      if (fd < 0) {
        reason += (reason.empty() ? "" : "; ") + std::string("no temporary file: ") + std::strerror(errno) +
                  " (set TMPDIR to a writable directory)";
        break;
      }
      temp_path_ = path = name;
    }
    if (write_all(fd, bytes)) {
      handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle_ == nullptr) {
        const char* why = ::dlerror();
        reason += (reason.empty() ? "" : "; ") + std::string(why ? why : "dlopen failed");
      }
    } else {
      reason += (reason.empty() ? "" : "; ") + std::string("cannot write ") + path + ": " + std::strerror(errno);
    }
    if (handle_ != nullptr && memory && keep_a_file()) {
      kept_fd_ = fd;
      return;
    }
    ::close(fd);
    if (handle_ != nullptr) return;
    release();
  }
  throw Error("kernel '" + kernel + "': its CPU code does not load (" + reason +
              "); the plan is damaged or was made for another system: compile the kernel again here");
}

Library::~Library() { release(); }

void Library::release() {
  if (handle_ != nullptr) ::dlclose(handle_);
  handle_ = nullptr;
  if (kept_fd_ >= 0) {
    ::close(kept_fd_);
    g_kept_files.fetch_sub(1, std::memory_order_relaxed);
  }
  kept_fd_ = -1;
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  temp_path_.clear();
}

void* Library::symbol(const std::string& name) const {
  ::dlerror();
  void* address = ::dlsym(handle_, name.c_str());
  if (address == nullptr)
    throw Error("kernel '" + kernel_ + "': its CPU code has no entry point '" + name +
                "'; the plan is damaged: compile the kernel again");
  return address;
}

// ---- the target ----------------------------------------------------------------------

namespace {

#if defined(__x86_64__)
constexpr std::string_view kArch = "x86_64";
#elif defined(__aarch64__)
constexpr std::string_view kArch = "aarch64";
#elif defined(__riscv) && __riscv_xlen == 64
constexpr std::string_view kArch = "riscv64";
#else
constexpr std::string_view kArch = "";
#endif

// The x86 extensions whose absence stops code with an illegal instruction,
// as LLVM and GCC's __builtin_cpu_supports both spell them.
struct Extension {
  const char* name;
  bool (*present)();
};
#if defined(__x86_64__)
#define GROVE_X86(n) {n, [] { return __builtin_cpu_supports(n) != 0; }}
constexpr Extension kExtensions[] = {
    GROVE_X86("popcnt"),     GROVE_X86("sse3"),         GROVE_X86("ssse3"),       GROVE_X86("sse4.1"),
    GROVE_X86("sse4.2"),     GROVE_X86("avx"),          GROVE_X86("avx2"),        GROVE_X86("fma"),
    GROVE_X86("fma4"),       GROVE_X86("sse4a"),        GROVE_X86("xop"),         GROVE_X86("bmi"),
    GROVE_X86("bmi2"),       GROVE_X86("aes"),          GROVE_X86("pclmul"),      GROVE_X86("gfni"),
    GROVE_X86("vpclmulqdq"), GROVE_X86("avx512f"),      GROVE_X86("avx512vl"),    GROVE_X86("avx512bw"),
    GROVE_X86("avx512dq"),   GROVE_X86("avx512cd"),     GROVE_X86("avx512vbmi"),  GROVE_X86("avx512ifma"),
    GROVE_X86("avx512vbmi2"), GROVE_X86("avx512vnni"),  GROVE_X86("avx512bitalg"), GROVE_X86("avx512bf16"),
    GROVE_X86("avx512vpopcntdq"),
};
#undef GROVE_X86
#else
constexpr Extension kExtensions[] = {{"", nullptr}};
#endif

}  // namespace

void check_target(const KernelPlan& plan) {
  const ElfCode& code = plan.elf();
  const std::string_view target = code.target;
  const std::string_view arch = target.substr(0, target.find('-'));
  if (arch != kArch)
    throw Error("kernel '" + plan.name + "' was compiled for " + std::string(arch.empty() ? "no CPU" : arch) +
                " (" + code.target + "), and this machine is " + std::string(kArch.empty() ? "another" : kArch) +
                ": compile the kernel again here");
  std::string missing;
  std::string_view features = code.target_features;
  while (!features.empty()) {
    const size_t comma = features.find(',');
    const std::string_view f = features.substr(0, comma);
    features = comma == std::string_view::npos ? std::string_view() : features.substr(comma + 1);
    if (f.size() < 2 || f[0] != '+') continue;
    for (const Extension& e : kExtensions)
      if (e.present != nullptr && f.substr(1) == e.name && !e.present())
        missing += (missing.empty() ? "" : ", ") + std::string(e.name);
  }
  if (!missing.empty())
    throw Error("kernel '" + plan.name + "' was compiled for a CPU with " + missing + " (" + code.target +
                "), which this CPU lacks: compile the kernel again here");
}

}  // namespace grove::rt::cpu
