// src/llvm_cpu/linker.cpp — link_shared_object (linker.h) through lld's ELF
// driver. lld reads and writes files, so each link goes through a private
// directory of this process (under TMPDIR), removed when the process ends;
// lld is not reentrant, so links take turns.
#include "llvm_cpu/linker.h"

#include <lld/Common/Driver.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <system_error>

#include "grove/error.h"

LLD_HAS_DRIVER(elf)

namespace grove::llvm_backend {

namespace {

// The directory this process links in: made on first use, removed at exit.
class LinkDir {
 public:
  const std::filesystem::path& path(const std::string& kernel) {
    if (path_.empty()) {
      std::string dir = (std::filesystem::temp_directory_path() / "grove-link-XXXXXX").string();
      if (::mkdtemp(dir.data()) == nullptr)
        throw Error("kernel '" + kernel + "': cannot make a directory to link its code in under " +
                    std::filesystem::temp_directory_path().string() + "; set TMPDIR to a writable directory");
      path_ = dir;
    }
    return path_;
  }
  ~LinkDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }

 private:
  std::filesystem::path path_;
};

std::mutex g_mutex;
bool g_broken = false;  // lld said it cannot run again
uint64_t g_links = 0;

}  // namespace

std::vector<uint8_t> link_shared_object(const std::vector<std::string>& objects, const std::string& kernel) {
  std::lock_guard<std::mutex> lock(g_mutex);
  static LinkDir dir;
  if (g_broken)
    throw Error("kernel '" + kernel + "': lld failed earlier in this process and cannot link again; "
                "restart the program");
  const std::filesystem::path base = dir.path(kernel) / std::to_string(g_links++);
  const std::string out = base.string() + ".so";
  std::vector<std::string> inputs;
  for (size_t i = 0; i < objects.size(); ++i) {
    inputs.push_back(base.string() + "." + std::to_string(i) + ".o");
    std::ofstream f(inputs.back(), std::ios::binary);
    f.write(objects[i].data(), static_cast<std::streamsize>(objects[i].size()));
    if (!f) throw Error("kernel '" + kernel + "': cannot write its object to " + inputs.back());
  }
  std::vector<const char*> args = {"ld.lld", "-shared", "--threads=1", "-z", "now", "-z", "relro", "-z",
                                   "noexecstack", "--eh-frame-hdr", "--hash-style=gnu", "--build-id=none", "--no-mmap-output-file", "-o",
                                   out.c_str()};
  for (const std::string& in : inputs) args.push_back(in.c_str());
  std::string messages;
  llvm::raw_string_ostream said(messages);
  const lld::Result r = lld::lldMain(args, said, said, {{lld::Gnu, &lld::elf::link}});
  said.flush();
  std::error_code ignored;
  for (const std::string& in : inputs) std::filesystem::remove(in, ignored);
  if (!r.canRunAgain) g_broken = true;
  if (r.retCode != 0) {
    std::filesystem::remove(out, ignored);
    throw Error("kernel '" + kernel + "': lld cannot link its code into a shared object: " + messages);
  }
  std::ifstream f(out, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(out, ignored);
  if (bytes.empty()) throw Error("kernel '" + kernel + "': lld left no shared object at " + out);
  return bytes;
}

}  // namespace grove::llvm_backend
