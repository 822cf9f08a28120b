// src/program/background.h — a Program's background compiles: the full
// tier's code of a kernel whose quick code has run long enough
// (ProgramImpl::launch, Backend::full_tier), made on a thread of the
// Program's own while the Program goes on launching, so that no launch
// waits for it. Jobs run one at a time, in the order asked, on one thread
// made at the first job. The Program's thread takes a job's result when it
// is done (Job::done), between launches; the job never touches the
// Program.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "runtime/core/plan.h"

namespace grove::detail {

class BackgroundCompiles {
 public:
  struct Job {
    std::function<rt::KernelPlan()> make;
    // Set once `done`: the plan made, or what make() raised.
    std::optional<rt::KernelPlan> plan;
    std::exception_ptr failed;
    std::atomic<bool> done{false};
  };

  BackgroundCompiles() = default;
  BackgroundCompiles(const BackgroundCompiles&) = delete;
  BackgroundCompiles& operator=(const BackgroundCompiles&) = delete;
  // Waits for the job running (a compile is not interrupted); jobs not
  // started are dropped.
  ~BackgroundCompiles();

  // `make` queued; it runs on the background thread.
  std::shared_ptr<Job> submit(std::function<rt::KernelPlan()> make);
  // Returns once `job` is done: a job not started yet runs here, on the
  // caller's thread, rather than behind the others.
  void wait(Job& job);

 private:
  void serve();
  static void run(Job& job);

  std::mutex mutex_;
  std::condition_variable changed_;  // a job queued or done, or stop_
  std::deque<std::shared_ptr<Job>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace grove::detail
