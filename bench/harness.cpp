// harness.cpp — collecting, pairing and writing benchmark results.
#include "harness.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>

namespace grove_bench {
namespace {

constexpr std::string_view kGroveRole = "grove";
constexpr std::string_view kBaselineRole = "baseline";
constexpr std::string_view kPairRole = "pair";
constexpr std::string_view kGroveCounter = "grove_s";
constexpr std::string_view kBaselineCounter = "baseline_s";

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

// Seconds `side.run` takes, then its untimed part.
double timed(const Side& side) {
  const auto start = std::chrono::steady_clock::now();
  side.run();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (side.after) side.after();
  return seconds;
}

std::string json_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::string grove_name(std::string_view workload, grove::Arch arch) {
  return std::string(workload) + "/" + std::string(kGroveRole) + "/" +
         std::string(grove::arch_name(arch));
}

std::string baseline_name(std::string_view workload, std::string_view baseline) {
  return std::string(workload) + "/" + std::string(kBaselineRole) + "/" + std::string(baseline);
}

const std::vector<grove::Arch>& runnable_backends() {
  static const std::vector<grove::Arch> runnable = [] {
    std::vector<grove::Arch> out;
    for (grove::Arch arch : grove::compiled_backends()) {
      try {
        grove::Config c;
        c.arch = arch;
        grove::Program probe(c);
        out.push_back(arch);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "grove_bench: skipping the %s rows: %s\n", std::string(grove::arch_name(arch)).c_str(),
                     e.what());
      }
    }
    return out;
  }();
  return runnable;
}

void check(bool ok, const std::string& what) {
  if (!ok) throw grove::Error("wrong result: " + what);
}

std::string workload(std::string_view name, int threads) {
  return std::string(name) + "_" + std::to_string(threads) + "t";
}

grove::Config cpu_config(int threads) {
  grove::Config c = steady_config(grove::Arch::Cpu);
  c.cpu_threads = threads;
  c.cache_dir = "off";
  return c;
}

grove::Config steady_config(grove::Arch arch) {
  grove::Config c;
  c.arch = arch;
  c.cpu_tiers = false;
  return c;
}

std::vector<float> mod7_values(int n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 7);
  return x;
}

std::string pair_name(std::string_view workload, grove::Arch arch, std::string_view baseline) {
  return std::string(workload) + "/" + std::string(kPairRole) + "/" + std::string(grove::arch_name(arch)) + "/" +
         std::string(baseline);
}

void register_pair(std::string_view workload, grove::Arch arch, std::string_view baseline, int iterations,
                   int repetitions, std::function<Pair()> setup) {
  auto body = [setup = std::move(setup)](benchmark::State& state) {
    try {
      const Pair pair = setup();
      std::vector<double> grove_s, baseline_s;
      bool grove_first = true;
      // A side's untimed preparation, then its timed run.
      auto run = [](const std::function<void()>& before, const Side& side) {
        if (before) before();
        return timed(side);
      };
      for (auto _ : state) {
        double g = 0, b = 0;
        if (grove_first) {
          g = run(pair.before_grove, pair.grove);
          b = run(pair.before_baseline, pair.baseline);
        } else {
          b = run(pair.before_baseline, pair.baseline);
          g = run(pair.before_grove, pair.grove);
        }
        grove_first = !grove_first;
        grove_s.push_back(g / pair.runs_per_sample);
        baseline_s.push_back(b / pair.runs_per_sample);
        state.SetIterationTime(g + b);
      }
      state.counters[std::string(kGroveCounter)] = median(grove_s);
      state.counters[std::string(kBaselineCounter)] = median(baseline_s);
      if (pair.bytes_per_run > 0) {
        state.counters["grove_GBps"] = pair.bytes_per_run / median(grove_s) / 1e9;
        state.counters["baseline_GBps"] = pair.bytes_per_run / median(baseline_s) / 1e9;
      }
      Counters counters = pair.counters;
      if (pair.derive) pair.derive(median(grove_s), median(baseline_s), counters);
      for (const auto& [name, value] : counters) state.counters[name] = value;
      if (pair.items_per_run > 0) state.SetItemsProcessed(state.iterations() * pair.items_per_run);
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
    }
  };
  benchmark::RegisterBenchmark(pair_name(workload, arch, baseline).c_str(), body)
      ->Unit(benchmark::kMicrosecond)
      ->UseManualTime()
      ->Iterations(iterations)
      ->Repetitions(repetitions);
}

void CollectingReporter::ReportRuns(const std::vector<Run>& runs) {
  ConsoleReporter::ReportRuns(runs);
  for (const Run& run : runs) {
    if (run.run_type != Run::RT_Iteration) continue;  // mean/median/stddev rows
    // The registered name, without "/real_time" and the like.
    const std::string& name = run.run_name.function_name;
    const size_t first = name.find('/');
    const size_t second = first == std::string::npos ? first : name.find('/', first + 1);
    if (second == std::string::npos) continue;  // not named by the convention
    const std::string_view role = std::string_view(name).substr(first + 1, second - first - 1);
    std::string workload = name.substr(0, first);
    if (!run.run_name.args.empty()) workload += "/" + run.run_name.args;
    const std::string variant = name.substr(second + 1);
    if (role == kPairRole) {
      const size_t slash = variant.find('/');
      if (slash == std::string::npos) continue;  // not named by the convention
      auto value = [&](std::string_view counter) {
        auto it = run.counters.find(std::string(counter));
        return it == run.counters.end() ? -1.0 : static_cast<double>(it->second);
      };
      const std::string backend = variant.substr(0, slash);
      add(workload, true, backend, run, value(kGroveCounter));
      Measurement& m = add(workload, false, variant.substr(slash + 1), run, value(kBaselineCounter), backend);
      // Extra columns (the last repetition's), written with the record of
      // this pair: kept with its baseline, since several pairs of one
      // workload share its Grove side.
      m.counters.clear();
      for (const auto& [counter, v] : run.counters)
        if (counter != kGroveCounter && counter != kBaselineCounter)
          m.counters.emplace_back(counter, static_cast<double>(v));
    } else if (role == kGroveRole || role == kBaselineRole) {
      const double seconds = run.iterations > 0 ? run.real_accumulated_time / static_cast<double>(run.iterations) : -1;
      Measurement& m = add(workload, role == kGroveRole, variant, run, seconds);
      if (role == kGroveRole && !run.counters.empty()) {
        m.counters.clear();
        for (const auto& [name, counter] : run.counters) m.counters.emplace_back(name, static_cast<double>(counter));
      }
    }
  }
}

Measurement& CollectingReporter::add(const std::string& workload, bool is_grove, const std::string& variant,
                                     const Run& run, double seconds, const std::string& pair_backend) {
  Measurement* m = nullptr;
  for (Measurement& existing : measurements_) {
    if (existing.workload == workload && existing.is_grove == is_grove && existing.variant == variant &&
        existing.pair_backend == pair_backend)
      m = &existing;
  }
  if (m == nullptr) {
    m = &measurements_.emplace_back();
    m->workload = workload;
    m->is_grove = is_grove;
    m->variant = variant;
    m->pair_backend = pair_backend;
  }
  if (run.error_occurred) {
    m->error = run.error_message.empty() ? "failed" : run.error_message;
    return *m;
  }
  if (seconds < 0) return *m;
  // Running mean over repetitions.
  m->seconds = (m->seconds * m->repetitions + seconds) / (m->repetitions + 1);
  ++m->repetitions;
  return *m;
}

std::vector<Record> pair_up(const std::vector<Measurement>& measurements) {
  std::vector<Record> records;
  for (const Measurement& g : measurements) {
    if (!g.is_grove || !g.error.empty() || g.repetitions == 0) continue;
    for (const Measurement& b : measurements) {
      if (b.is_grove || b.workload != g.workload || !b.error.empty() || b.repetitions == 0) {
        continue;
      }
      // A pair's baseline belongs to its own backend's pair.
      if (!b.pair_backend.empty() && b.pair_backend != g.variant) continue;
      records.push_back({.name = g.workload,
                         .backend = g.variant,
                         .baseline = b.variant,
                         .grove_s = g.seconds,
                         .baseline_s = b.seconds,
                         .ratio = g.seconds > 0 ? b.seconds / g.seconds : 0,
                         .counters = g.counters});
      records.back().counters.insert(records.back().counters.end(), b.counters.begin(), b.counters.end());
    }
  }
  return records;
}

void write_json(const std::filesystem::path& path, const std::vector<Record>& records) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  out << "[";
  for (size_t r = 0; r < records.size(); ++r) {
    const Record& rec = records[r];
    out << (r == 0 ? "\n" : ",\n") << "  {\"name\": " << json_string(rec.name)
        << ", \"backend\": " << json_string(rec.backend)
        << ", \"baseline\": " << json_string(rec.baseline)
        << ", \"grove_s\": " << json_number(rec.grove_s)
        << ", \"baseline_s\": " << json_number(rec.baseline_s)
        << ", \"ratio\": " << json_number(rec.ratio);
    if (!rec.counters.empty()) {
      out << ", \"counters\": {";
      for (size_t c = 0; c < rec.counters.size(); ++c)
        out << (c ? ", " : "") << json_string(rec.counters[c].first) << ": " << json_number(rec.counters[c].second);
      out << "}";
    }
    out << "}";
  }
  out << (records.empty() ? "]\n" : "\n]\n");
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

void print_table(const std::vector<Record>& records) {
  int name_width = 24, baseline_width = 10;
  for (const Record& r : records) {
    name_width = std::max(name_width, static_cast<int>(r.name.size()));
    baseline_width = std::max(baseline_width, static_cast<int>(r.baseline.size()));
  }
  std::printf("\n%-*s %-8s %-*s %12s %12s %10s\n", name_width, "workload", "backend", baseline_width,
              "baseline", "grove_s", "baseline_s", "ratio");
  for (const Record& r : records) {
    std::printf("%-*s %-8s %-*s %12.4e %12.4e %10.4f\n", name_width, r.name.c_str(), r.backend.c_str(),
                baseline_width, r.baseline.c_str(), r.grove_s, r.baseline_s, r.ratio);
  }
  std::printf("(ratio = baseline_s / grove_s; above 1 means Grove is faster)\n");
}

}  // namespace grove_bench
