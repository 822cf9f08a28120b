// src/program/background.cpp — see background.h.
#include "program/background.h"

namespace grove::detail {

BackgroundCompiles::~BackgroundCompiles() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    queue_.clear();
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<BackgroundCompiles::Job> BackgroundCompiles::submit(std::function<rt::KernelPlan()> make) {
  auto job = std::make_shared<Job>();
  job->make = std::move(make);
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(job);
    if (!thread_.joinable()) thread_ = std::thread([this] { serve(); });
  }
  changed_.notify_all();
  return job;
}

void BackgroundCompiles::wait(Job& job) {
  std::unique_lock lock(mutex_);
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->get() != &job) continue;
    std::shared_ptr<Job> mine = std::move(*it);  // not started: run it here
    queue_.erase(it);
    lock.unlock();
    run(job);
    return;
  }
  changed_.wait(lock, [&] { return job.done.load(std::memory_order_acquire); });
}

void BackgroundCompiles::run(Job& job) {
  try {
    job.plan = job.make();
  } catch (...) {
    job.failed = std::current_exception();
  }
  job.make = nullptr;  // what it held (a copy of the kernel) goes now
  job.done.store(true, std::memory_order_release);
}

void BackgroundCompiles::serve() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    run(*job);
    lock.lock();
    changed_.notify_all();  // (under the lock: a waiter checks `done` under it)
  }
}

}  // namespace grove::detail
