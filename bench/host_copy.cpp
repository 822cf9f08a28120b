// host_copy.cpp — copies of whole fields between the host and a Program
// (Field::from_vector, to_vector, fill) against memcpy of the same bytes
// (std::fill for a fill), on every backend that runs here:
//
//   host_from_vector         65,536 x 3 f32 vector field, dense   (Taichi's from_numpy)
//   host_to_vector           the same, out                         (to_numpy)
//   host_fill_mat3           65,536 3x3 f32 matrix field, fill     (fill)
//   host_fill_sparse         the sparse field below, every cell active, fill
//   host_from_vector_sparse  65,536 f32 under pointer(i, 1024).dense(i, 64), every block active
//   host_to_vector_sparse    the same, out
//   host_to_vector_into, host_to_vector_into_sparse
//                            out into a vector kept from the last copy (Field::to_vector(out))
//   host_write_each_sparse, host_read_each_sparse
//                            Field::write / read of one element at a time, each of the
//                            sparse field's (active: a write has nothing to activate), the
//                            time per element against a budget of 1 us (budget_1us): a loop
//                            over a field element by element, as a port of Python's
//                            x[i] = v does
//
// The Grove side includes what the API does per call: checking every
// value, and on Vulkan the staging transfers; the sparse copy in also runs
// Grove's kernel that activates every cell (already active here). A run of
// either side is kCopies copies (a sparse copy takes a few microseconds: one
// alone would time this VM's noise), its time divided by them.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "harness.h"

namespace grove_bench {
namespace {

constexpr std::int64_t kElements = 1 << 16;
constexpr int kIterations = 20;
constexpr int kRepetitions = 3;
constexpr int kCopies = 32;

// `copy` kCopies times, memory clobbered between them (no memcpy is elided).
std::function<void()> repeated(std::function<void()> copy) {
  return [copy = std::move(copy)] {
    for (int k = 0; k < kCopies; ++k) {
      copy();
      benchmark::ClobberMemory();
    }
  };
}

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t k = 0; k < n; ++k) v[k] = static_cast<float>(k % 1000) * 0.25f;
  return v;
}

struct State {
  grove::Program prog;
  grove::Field f;
  std::vector<float> values, out;
  explicit State(grove::Arch arch) : prog(steady_config(arch)) {}
};

// `f` made by `make`, then copied in and out once and checked.
std::shared_ptr<State> state(grove::Arch arch, int components,
                             const std::function<grove::Field(grove::Program&)>& make) {
  auto s = std::make_shared<State>(arch);
  s->f = make(s->prog);
  s->values = ramp(static_cast<std::size_t>(kElements * components));
  s->out.assign(s->values.size(), 0.0f);
  s->f.from_vector(s->values);
  check(s->f.to_vector<float>() == s->values, "to_vector after from_vector");
  return s;
}

grove::Field dense_vector(grove::Program& p) { return p.vector_field(3, grove::f32, "v", {kElements}); }
grove::Field sparse_scalar(grove::Program& p) {
  grove::Field x = p.field(grove::f32, "x");
  p.root().pointer(grove::i, kElements / 64).dense(grove::i, 64).place(x);
  return x;
}

Pair copy_in(grove::Arch arch, int components, const std::function<grove::Field(grove::Program&)>& make) {
  auto s = state(arch, components, make);
  const double bytes = 4.0 * static_cast<double>(s->values.size());
  return {.grove = {repeated([s] { s->f.from_vector(s->values); }), {}},
          .baseline = {repeated([s] { std::memcpy(s->out.data(), s->values.data(), s->values.size() * 4); }), {}},
          .runs_per_sample = kCopies,
          .items_per_run = kElements * kCopies,
          .bytes_per_run = bytes};
}

Pair copy_out(grove::Arch arch, int components, const std::function<grove::Field(grove::Program&)>& make) {
  auto s = state(arch, components, make);
  const double bytes = 4.0 * static_cast<double>(s->values.size());
  // Both sides make a new vector, as to_vector returns one.
  return {.grove = {repeated([s] { s->out = s->f.to_vector<float>(); }), {}},
          .baseline = {repeated([s] { s->out = std::vector<float>(s->values); }), {}},
          .runs_per_sample = kCopies,
          .items_per_run = kElements * kCopies,
          .bytes_per_run = bytes};
}

// Into a vector the caller keeps (Field::to_vector(out)), against memcpy
// into one: what a loop reading the field every frame pays.
Pair copy_out_into(grove::Arch arch, int components, const std::function<grove::Field(grove::Program&)>& make) {
  auto s = state(arch, components, make);
  const double bytes = 4.0 * static_cast<double>(s->values.size());
  return {.grove = {repeated([s] { s->f.to_vector(s->out); }), {}},
          .baseline = {repeated([s] { std::memcpy(s->out.data(), s->values.data(), s->values.size() * 4); }), {}},
          .runs_per_sample = kCopies,
          .items_per_run = kElements * kCopies,
          .bytes_per_run = bytes};
}

// A fill of `components` values an element of the field `make` makes.
Pair fill(grove::Arch arch, int components, const std::function<grove::Field(grove::Program&)>& make) {
  auto s = state(arch, components, make);
  s->f.fill(1.5f);
  const std::vector<float> got = s->f.to_vector<float>();
  check(std::all_of(got.begin(), got.end(), [](float v) { return v == 1.5f; }), "fill");
  return {.grove = {repeated([s] { s->f.fill(1.5f); }), {}},
          .baseline = {repeated([s] { std::fill(s->out.begin(), s->out.end(), 1.5f); }), {}},
          .runs_per_sample = kCopies,
          .items_per_run = kElements * kCopies,
          .bytes_per_run = 4.0 * components * kElements};
}

constexpr double kEachBudgetSeconds = 1e-6;

void each(benchmark::State& st, grove::Arch arch, bool write) {
  try {
    auto s = state(arch, 1, sparse_scalar);
    for (auto _ : st) {
      const auto start = std::chrono::steady_clock::now();
      float sum = 0.0f;
      for (std::int64_t k = 0; k < kElements; ++k) {
        if (write) s->f.write({k}, s->values[static_cast<size_t>(k)] + 1.0f);
        else sum += s->f.read<float>({k});
      }
      benchmark::DoNotOptimize(sum);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      st.SetIterationTime(seconds / kElements);
    }
    std::vector<float> want = s->values;
    if (write)
      for (float& v : want) v += 1.0f;
    check(s->f.to_vector<float>() == want, write ? "the values written one by one" : "the field after reads");
  } catch (const std::exception& e) {
    st.SkipWithError(e.what());
  }
}

void each_budget(benchmark::State& st) {
  for (auto _ : st) st.SetIterationTime(kEachBudgetSeconds);
}

}  // namespace

void register_host_copy() {
  for (const grove::Arch arch : runnable_backends()) {
    register_pair("host_from_vector", arch, "memcpy", kIterations, kRepetitions,
                  [arch] { return copy_in(arch, 3, dense_vector); });
    register_pair("host_to_vector", arch, "memcpy", kIterations, kRepetitions,
                  [arch] { return copy_out(arch, 3, dense_vector); });
    register_pair("host_fill_mat3", arch, "fill", kIterations, kRepetitions, [arch] {
      return fill(arch, 9, [](grove::Program& p) { return p.matrix_field(3, 3, grove::f32, "m", {kElements}); });
    });
    register_pair("host_fill_sparse", arch, "fill", kIterations, kRepetitions,
                  [arch] { return fill(arch, 1, sparse_scalar); });
    register_pair("host_from_vector_sparse", arch, "memcpy", kIterations, kRepetitions,
                  [arch] { return copy_in(arch, 1, sparse_scalar); });
    register_pair("host_to_vector_sparse", arch, "memcpy", kIterations, kRepetitions,
                  [arch] { return copy_out(arch, 1, sparse_scalar); });
    register_pair("host_to_vector_into", arch, "memcpy", kIterations, kRepetitions,
                  [arch] { return copy_out_into(arch, 3, dense_vector); });
    register_pair("host_to_vector_into_sparse", arch, "memcpy", kIterations, kRepetitions,
                  [arch] { return copy_out_into(arch, 1, sparse_scalar); });
    for (const bool write : {true, false}) {
      const std::string workload = write ? "host_write_each_sparse" : "host_read_each_sparse";
      benchmark::RegisterBenchmark(grove_name(workload, arch).c_str(), each, arch, write)
          ->Unit(benchmark::kMicrosecond)
          ->UseManualTime()
          ->Iterations(3);
    }
  }
  for (const char* workload : {"host_write_each_sparse", "host_read_each_sparse"}) {
    benchmark::RegisterBenchmark(baseline_name(workload, "budget_1us").c_str(), each_budget)
        ->Unit(benchmark::kMicrosecond)
        ->UseManualTime()
        ->Iterations(1);
  }
}

}  // namespace grove_bench
