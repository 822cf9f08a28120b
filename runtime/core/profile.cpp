// runtime/core/profile.cpp — the profiler's tally and its table.
#include "runtime/core/profile.h"

#include <algorithm>
#include <cstdio>

namespace grove::rt {

void Profile::add(const TaskTime& t) {
  TaskTally& s = tasks_[{t.kernel, t.task}];
  if (s.count == 0) {
    s.kernel = t.kernel;
    s.task = t.task;
    s.label = t.label;
    s.min = s.max = t.seconds;
  }
  ++s.count;
  s.total += t.seconds;
  s.min = std::min(s.min, t.seconds);
  s.max = std::max(s.max, t.seconds);
}

std::vector<TaskTally> Profile::tallies() const {
  std::vector<TaskTally> out;
  out.reserve(tasks_.size());
  for (const auto& [key, s] : tasks_) out.push_back(s);
  return out;
}

namespace {

// Milliseconds with three decimals: tasks of a few microseconds still show.
std::string ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", seconds * 1e3);
  return buf;
}

std::string row(const std::string& name, const std::string& count, const std::string& total,
                const std::string& mean, const std::string& min, const std::string& max) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-44s %8s %12s %10s %10s %10s", name.c_str(), count.c_str(), total.c_str(),
                mean.c_str(), min.c_str(), max.c_str());
  std::string line = buf;
  line.erase(line.find_last_not_of(' ') + 1);
  return line + "\n";
}

}  // namespace

std::string Profile::report(const std::string& device) const {
  std::string out = "Grove profile: device time per task on " + device + " (ms)\n";
  if (tasks_.empty()) return out + "  (no launches were timed)\n";
  // Kernels in order of their tasks' summed time.
  std::map<std::string, std::vector<const TaskTally*>> kernels;
  std::map<std::string, double> totals;
  double all = 0;
  for (const auto& [key, s] : tasks_) {
    kernels[s.kernel].push_back(&s);
    totals[s.kernel] += s.total;
    all += s.total;
  }
  std::vector<std::string> order;
  for (const auto& [name, tasks] : kernels) order.push_back(name);
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) { return totals[a] > totals[b]; });
  out += row("kernel / task", "count", "total", "mean", "min", "max");
  for (const std::string& name : order) {
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%", all > 0 ? 100.0 * totals[name] / all : 0.0);
    out += row(name, "", ms(totals[name]), share, "", "");
    for (const TaskTally* s : kernels[name]) {
      const std::string task = "  " + std::to_string(s->task) + " " + s->label;
      out += row(task.size() > 44 ? task.substr(0, 41) + "..." : task, std::to_string(s->count), ms(s->total),
                 ms(s->total / static_cast<double>(s->count)), ms(s->min), ms(s->max));
    }
  }
  out += row("all kernels", "", ms(all), "", "", "");
  return out;
}

}  // namespace grove::rt
