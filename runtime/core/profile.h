// runtime/core/profile.h — the profiler's tally: the device time of every
// task of every launch, as devices measure it (Device::set_profiling), summed
// per kernel and task, and the table Program::profile_report() prints.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace grove::rt {

// One task of one finished launch, timed by the device's own clock.
struct TaskTime {
  std::string kernel;
  int task = 0;       // its index in the kernel's plan
  std::string label;  // the plan's label, e.g. "struct_for S2dense"
  double seconds = 0;
};

// What a task's launches added up to (grove::TaskProfile in the API).
struct TaskTally {
  std::string kernel;
  int task = 0;
  std::string label;
  int64_t count = 0;
  double total = 0, min = 0, max = 0;  // seconds
};

class Profile {
 public:
  void add(const TaskTime& t);
  // By kernel name, then task index.
  std::vector<TaskTally> tallies() const;
  // A table: a row per task (count, total, mean, min, max), a line per
  // kernel with its tasks' sum, kernels by total time, the largest first.
  // `device` names the clock ("lavapipe ...") in the heading.
  std::string report(const std::string& device) const;
  bool empty() const { return tasks_.empty(); }
  void clear() { tasks_.clear(); }

 private:
  std::map<std::pair<std::string, int>, TaskTally> tasks_;
};

}  // namespace grove::rt
