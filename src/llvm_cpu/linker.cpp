// src/llvm_cpu/linker.cpp — link_shared_object (linker.h) through lld's ELF
// driver. lld reads and writes files, so each link goes through a private
// directory of this process (under TMPDIR), removed when the process ends;
// lld is not reentrant, so links take turns, all on one thread of Grove's.
#include "llvm_cpu/linker.h"

#include <lld/Common/Driver.h>
#include <llvm/Support/raw_ostream.h>

#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <mutex>
#include <system_error>
#include <thread>

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

// The thread every link runs on. lld writes its output through LLVM's
// FileOutputBuffer, which registers LLVM's signal handlers, and that gives
// the calling thread an alternate signal stack of LLVM's own (malloc'd,
// replacing a smaller one, never freed) — on whichever application thread
// launched a kernel first. Linking on this thread keeps that to one thread
// of Grove's, which lives as long as the process (made once, never
// destroyed, so never ending): application threads keep their signal
// stacks, and nothing unmaps LLVM's (AddressSanitizer unmaps the signal
// stack of a thread that ends, and aborted on LLVM's).
class LinkerThread {
 public:
  LinkerThread() { std::thread([this] { serve(); }).detach(); }
  LinkerThread(const LinkerThread&) = delete;
  LinkerThread& operator=(const LinkerThread&) = delete;

  // Runs `work` on the thread and waits for it; rethrows what it threw.
  void run(const std::function<void()>& work) {
    std::unique_lock<std::mutex> lock(mutex_);
    work_ = &work;
    failed_ = nullptr;
    done_ = false;
    wake_.notify_all();
    wake_.wait(lock, [this] { return done_; });
    if (failed_) std::rethrow_exception(failed_);
  }

 private:
  [[noreturn]] void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return work_ != nullptr; });
      const std::function<void()>* work = work_;
      work_ = nullptr;
      lock.unlock();
      std::exception_ptr failed;
      try {
        (*work)();
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      failed_ = failed;
      done_ = true;
      wake_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  const std::function<void()>* work_ = nullptr;
  std::exception_ptr failed_;
  bool done_ = false;
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
  lld::Result r{1, false};
  static LinkerThread& linker = *new LinkerThread();  // never destroyed: see LinkerThread
  linker.run([&] {
    llvm::raw_string_ostream said(messages);
    r = lld::lldMain(args, said, said, {{lld::Gnu, &lld::elf::link}});
    said.flush();
  });
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
