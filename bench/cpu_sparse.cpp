// cpu_sparse.cpp — the CPU backend's sparse rows, each on 1 and 2 threads,
// on shell.h's sphere shell (radius 512, band +-3: ~23M voxels) stored as
// pointer(ijk, 130).dense(ijk, 8):
//
//   cpu_shell_activate   write every shell voxel into an empty grid, columns
//                        in parallel, vs OpenVDB (setValueOn through one
//                        ValueAccessor per thread, per-thread grids merged)
//                        and vs a hand-written block grid (cpu_baselines.h);
//                        everything is deactivated (freed) untimed between runs
//   cpu_shell_sum        a struct-for summing every voxel of the active blocks,
//                        vs OpenVDB's LeafManager over active values and vs
//                        the block grid's pool
//   cpu_shell_laplacian  the 7-point Laplacian at every shell voxel, vs
//                        openvdb::tools::laplacian (which also allocates its
//                        result grid; Grove writes a field placed beside x)
//
// and an occupancy sweep on a 512^3 block grid, pointer(ijk, 64).dense(ijk, 8),
// with 1%, 10%, 50% and 100% of the blocks active:
//
//   cpu_occupancy_<p>pct  a struct-for sum whose lists are regenerated (a
//                        kernel that may change activity ran before it), paired
//                        with the same launch on lists still valid
//                        ("lists_cached"): 1 - ratio is listgen's share; counters
//                        give the time per active voxel
//   cpu_occupancy_listed_<p>pct  the same struct-for (lists regenerated)
//                        against hand-written C++ that makes the same list
//                        from occupancy bits and slots and sums over it
//                        ("listed_block_grid",
//                        cpp::ListedBlockGrid); a counter gives the share of
//                        its own time spent listing
//
// Every side's result is checked against values worked out from shell.h
// before timing.
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <grove/grove.h>

#include "cpu_baselines.h"
#include "harness.h"
#include "openvdb_baselines.h"
#include "shell.h"

namespace grove_bench {
namespace {

using grove::Expr;

constexpr int kIterations = 5;
constexpr int kRepetitions = 2;
// The occupancy rows at 1% and 10% run for tens of microseconds to a
// millisecond: five samples of one run each left their listgen share to the
// machine's noise (-40% to +32% at 1% on 2 threads between runs), so they
// take the median of many more samples.
constexpr int kShortIterations = 201;

// What the shell holds, worked out on the host.
struct ShellFacts {
  std::int64_t voxels = 0;
  std::int64_t blocks = 0;
  double sum = 0;
};
const ShellFacts& shell_facts() {
  static const ShellFacts facts = [] {
    ShellFacts f;
    std::vector<bool> block(static_cast<size_t>(shell::kBlocks) * shell::kBlocks * shell::kBlocks, false);
    for (int i = 0; i < shell::kSide; ++i)
      for (int j = 0; j < shell::kSide; ++j)
        shell::for_column(i, j, [&](int k) {
          ++f.voxels;
          f.sum += shell::value(i, j, k);
          const size_t b = shell::block_of(i, j, k);
          if (!block[b]) ++f.blocks;
          block[b] = true;
        });
    return f;
  }();
  return facts;
}

// Shell voxels to spot-check (reproducible).
std::vector<std::array<int, 3>> sample_voxels(int n) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> coord(0, shell::kSide - 1);
  std::vector<std::array<int, 3>> out;
  while (static_cast<int>(out.size()) < n) {
    const int i = coord(rng), j = coord(rng);
    shell::for_column(i, j, [&](int k) {
      if (static_cast<int>(out.size()) < n && (k % 5) == 0) out.push_back({i, j, k});
    });
  }
  return out;
}

float laplacian_at(int i, int j, int k) {
  using shell::at;
  return at(i - 1, j, k) + at(i + 1, j, k) + at(i, j - 1, k) + at(i, j + 1, k) + at(i, j, k - 1) +
         at(i, j, k + 1) - 6.0f * at(i, j, k);
}

// Grove's shell: x (the values) and y (the Laplacian) in separate dense
// blocks under one pointer, and the kernels of the three rows.
struct GroveShell {
  grove::Program prog;
  grove::Field x, y, total;
  grove::SNode* blocks = nullptr;
  grove::Kernel activate, sum, laplacian;

  static grove::Config config(int threads) {
    grove::Config c = cpu_config(threads);
    c.device_memory = std::int64_t{2} << 30;
    return c;
  }

  explicit GroveShell(int threads) : prog(config(threads)) {
    using namespace grove;
    x = prog.field(f32, "x");
    y = prog.field(f32, "y");
    blocks = &prog.root().pointer(ijk, shell::kBlocks);
    blocks->capacity(shell_facts().blocks + 1024);
    blocks->dense(ijk, shell::kBlock).place(x);
    blocks->dense(ijk, shell::kBlock).place(y);
    // The sum in i32: values are small integers, so it is exact in any
    // order (the baselines truncate and sum the same way).
    total = prog.field(i32, "total", {});

    // shell.h's column ranges and inside test, in the DSL.
    activate = prog.kernel("shell_activate", [this] {
      constexpr int s = shell::kSide, c = shell::kCentre;
      for_range(0, s * s, [&](Expr col) {
        Expr i = col / s, j = col % s;
        Expr di = i - c, dj = j - c;
        Expr r2 = di * di + dj * dj;
        if_(r2 <= shell::kOuter2, [&] {
          Expr zo = cast(i32, grove::sqrt(cast(f64, shell::kOuter2 - r2))) + 1;
          Expr zi = select(r2 >= shell::kInner2, 0, cast(i32, grove::sqrt(cast(f64, max(shell::kInner2 - r2, 0)))) - 1);
          auto run = [&](Expr lo, Expr hi) {
            for_range(lo, hi + 1, [&](Expr k) {
              Expr dk = k - c;
              Expr d2 = r2 + dk * dk;
              if_(d2 >= shell::kInner2 && d2 <= shell::kOuter2,
                  [&] { x(i, j, k) = cast(f32, 1 + (i + j + k) % 8); });
            });
          };
          if_(zi <= 1, [&] { run(c - zo, c + zo); }).else_([&] {
            run(c - zo, c - zi);
            run(c + zi, c + zo);
          });
        });
      });
    });
    sum = prog.kernel("shell_sum", [this] {
      total() = 0;
      for_each(x, [&](Expr i, Expr j, Expr k) { total() += cast(i32, x(i, j, k)); });
    });
    // At the shell's voxels (x non-zero), as OpenVDB computes it at its
    // active voxels; neighbours outside the shell read 0.
    laplacian = prog.kernel("shell_laplacian", [this] {
      for_each(x, [&](Expr i, Expr j, Expr k) {
        Expr v = x(i, j, k);
        if_(v != 0.0f, [&] {
          y(i, j, k) = x(i - 1, j, k) + x(i + 1, j, k) + x(i, j - 1, k) + x(i, j + 1, k) + x(i, j, k - 1) +
                       x(i, j, k + 1) - 6.0f * v;
        });
      });
    });
  }

  void check_values(const std::string& what) {
    const ShellFacts& f = shell_facts();
    sum();
    const double got = total.read<std::int32_t>();
    check(got == f.sum, what + ": Grove's sum " + std::to_string(got) + ", want " + std::to_string(f.sum));
    const std::int64_t active = prog.stats().at(blocks->name()).active_cells;
    check(active == f.blocks,
          what + ": Grove has " + std::to_string(active) + " active blocks, want " + std::to_string(f.blocks));
  }
};

std::string vs_openvdb = "openvdb";
std::string vs_block_grid = "block_grid";

// ---- activation ----------------------------------------------------------------------

Pair activate_pair(int threads, bool openvdb) {
  const ShellFacts& f = shell_facts();
  auto g = std::make_shared<GroveShell>(threads);
  auto t = std::make_shared<cpp::Threads>(threads);
  g->activate();
  g->check_values("activation");
  g->prog.deactivate_all();
  g->activate();  // reuses the pool's blocks
  g->check_values("activation after deactivate_all");
  Side grove{[g] { g->activate(); }, [g] { g->prog.deactivate_all(); }};
  g->prog.deactivate_all();
  if (openvdb) {
    auto v = std::make_shared<vdb::ShellGrid>();
    v->activate_shell(*t);
    check(v->active_voxels() == f.voxels, "OpenVDB's active voxel count");
    check(v->sum(*t) == f.sum, "OpenVDB's sum");
    v->clear();
    return {.grove = grove,
            .baseline = {[v, t] { v->activate_shell(*t); }, [v] { v->clear(); }},
            .items_per_run = f.voxels};
  }
  auto b = std::make_shared<cpp::BlockGrid>(f.blocks + 1024);
  b->activate_shell(*t);
  check(b->blocks() == f.blocks, "the block grid's block count");
  check(b->sum(*t) == f.sum, "the block grid's sum");
  b->clear();
  return {.grove = grove,
          .baseline = {[b, t] { b->activate_shell(*t); }, [b] { b->clear(); }},
          .items_per_run = f.voxels};
}

// ---- iteration -----------------------------------------------------------------------

Pair sum_pair(int threads, bool openvdb) {
  const ShellFacts& f = shell_facts();
  auto g = std::make_shared<GroveShell>(threads);
  auto t = std::make_shared<cpp::Threads>(threads);
  g->activate();
  g->check_values("sum");  // also generates the lists the timed launches reuse
  Side grove{[g] { g->sum(); }, {}};
  if (openvdb) {
    auto v = std::make_shared<vdb::ShellGrid>();
    v->activate_shell(*t);
    check(v->sum(*t) == f.sum, "OpenVDB's sum");
    auto sink = std::make_shared<double>();
    return {.grove = grove, .baseline = {[v, t, sink] { *sink = v->sum(*t); }, {}}, .items_per_run = f.voxels};
  }
  auto b = std::make_shared<cpp::BlockGrid>(f.blocks + 1024);
  b->activate_shell(*t);
  check(b->sum(*t) == f.sum, "the block grid's sum");
  auto sink = std::make_shared<double>();
  return {.grove = grove, .baseline = {[b, t, sink] { *sink = b->sum(*t); }, {}}, .items_per_run = f.voxels};
}

// ---- Laplacian -----------------------------------------------------------------------

Pair laplacian_pair(int threads) {
  const ShellFacts& f = shell_facts();
  auto g = std::make_shared<GroveShell>(threads);
  auto t = std::make_shared<cpp::Threads>(threads);
  auto v = std::make_shared<vdb::ShellGrid>();
  g->activate();
  g->laplacian();
  v->activate_shell(*t);
  v->laplacian(*t);
  for (const auto& [i, j, k] : sample_voxels(2000)) {
    const float want = laplacian_at(i, j, k);
    const std::string at = " at (" + std::to_string(i) + ", " + std::to_string(j) + ", " + std::to_string(k) + ")";
    check(g->y.read<float>({i, j, k}) == want, "Grove's Laplacian" + at);
    check(v->read_laplacian(i, j, k) == want, "OpenVDB's Laplacian" + at);
  }
  return {.grove = {[g] { g->laplacian(); }, {}},
          .baseline = {[v, t] { v->laplacian(*t); }, {}},
          .items_per_run = f.voxels};
}

// ---- occupancy sweep ---------------------------------------------------------------------

constexpr int kSweepBlocks = 64;  // per axis: 512^3 voxels, 262144 blocks
constexpr int kBlockVoxels = 512;

// Block b of the sweep is active when its hash falls in the first
// `percent` of 100 (block 0 always, for `touch`).
bool sweep_active(std::uint32_t b, int percent) {
  return ((b * 2654435761u) >> 8u) % 100u < static_cast<std::uint32_t>(percent) || b == 0;
}

struct SweepGrid {
  grove::Program prog;
  grove::Field x, total, seen;
  grove::SNode *blocks = nullptr, *cells = nullptr;
  grove::Kernel fill, touch, peek, sum;
  std::int64_t voxels = 0;
  SweepGrid(int threads, int percent) : prog(GroveShell::config(threads)) {
    using namespace grove;
    x = prog.field(f32, "x");
    blocks = &prog.root().pointer(ijk, kSweepBlocks);
    blocks->capacity(std::int64_t{kSweepBlocks} * kSweepBlocks * kSweepBlocks);
    cells = &blocks->dense(ijk, 8);
    cells->place(x);
    total = prog.field(i32, "total", {});  // exact, and summed in registers (see GroveShell)
    seen = prog.field(f32, "seen", {});
    // All the voxels of an active block hold 1 (sweep_active, in the IR).
    fill = prog.kernel("fill", [this, percent] {
      constexpr int n = kSweepBlocks;
      for_range(0, n * n * n, [&](Expr b) {
        Expr h = cast(u32, b) * 2654435761u;
        if_((h >> 8u) % 100u < static_cast<std::uint32_t>(percent) || b == 0, [&] {
          Expr bi = b / (n * n) * 8, bj = b / n % n * 8, bk = b % n * 8;
          for_range(0, kBlockVoxels, [&](Expr v) { x(bi + v / 64, bj + v / 8 % 8, bk + v % 8) = 1.0f; });
        });
      });
    });
    // Writes a voxel of an active block: changes nothing, but the kernel
    // may activate, so the next struct-for regenerates its lists.
    touch = prog.kernel("touch", [this] { x(0, 0, 0) = 1.0f; });
    // touch's launch without its effect: reads the same voxel, so the
    // lists stay valid (lists_cached runs after it, the Grove side after
    // touch).
    peek = prog.kernel("peek", [this] { seen() = x(0, 0, 0).load(); });
    sum = prog.kernel("sum", [this] {
      total() = 0;
      for_each(x, [&](Expr i, Expr j, Expr k) { total() += cast(i32, x(i, j, k)); });
    });
    fill();
    for (std::uint32_t b = 0; b < kSweepBlocks * kSweepBlocks * kSweepBlocks; ++b)
      voxels += sweep_active(b, percent) ? kBlockVoxels : 0;
    sum();
    check(total.read<std::int32_t>() == voxels, "the sweep's sum");
    const std::string name = cells->name();  // the list of the active blocks' cells
    const std::int64_t runs = prog.stats().at(name).listgen_runs;
    sum();
    check(prog.stats().at(name).listgen_runs == runs, "a read-only struct-for reuses its lists");
    peek();
    sum();
    check(prog.stats().at(name).listgen_runs == runs, "a struct-for after `peek` reuses its lists");
    touch();
    sum();
    check(prog.stats().at(name).listgen_runs == runs + 1, "a struct-for after `touch` regenerates its lists");
  }
};

// The struct-for with its lists regenerated against the same launch with
// its lists still valid: listgen's share.
Pair occupancy_pair(int threads, int percent) {
  auto g = std::make_shared<SweepGrid>(threads, percent);
  const double v = static_cast<double>(g->voxels);
  return {.grove = {[g] { g->sum(); }, {}},
          .baseline = {[g] { g->sum(); }, {}},
          .items_per_run = g->voxels,
          .before_grove = [g] { g->touch(); },
          .before_baseline = [g] { g->peek(); },
          .derive = [v](double grove_s, double cached_s, Counters& c) {
            c.emplace_back("active_voxels", v);
            c.emplace_back("ns_per_voxel_with_listgen", grove_s / v * 1e9);
            c.emplace_back("ns_per_voxel_lists_cached", cached_s / v * 1e9);
            c.emplace_back("listgen_share", grove_s > 0 ? 1.0 - cached_s / grove_s : 0.0);
          }};
}

// The struct-for with its lists regenerated against hand-written C++ that
// makes the same list from occupancy bits and slots and sums over it
// (cpp::ListedBlockGrid): what listing the active blocks of this layout
// costs without Grove. The baseline's share of its own time spent listing
// is a counter.
Pair occupancy_listed_pair(int threads, int percent) {
  auto g = std::make_shared<SweepGrid>(threads, percent);
  std::vector<std::uint8_t> active(std::size_t{kSweepBlocks} * kSweepBlocks * kSweepBlocks);
  for (std::uint32_t b = 0; b < active.size(); ++b) active[b] = sweep_active(b, percent);
  struct Baseline {
    Baseline(int threads, const std::vector<std::uint8_t>& active) : threads(threads), grid(active) {}
    cpp::Threads threads;
    cpp::ListedBlockGrid grid;
    double list_s = 0, total_s = 0;  // over every run: the listing's share
  };
  auto c = std::make_shared<Baseline>(threads, active);
  c->grid.make_list(c->threads);
  check(c->grid.sum_list(c->threads) == g->voxels, "the listed block grid's sum");
  check(c->grid.listed() * kBlockVoxels == g->voxels, "the listed block grid's list");
  const double v = static_cast<double>(g->voxels);
  return {.grove = {[g] { g->sum(); }, {}},
          .baseline = {[c] {
                         const auto start = std::chrono::steady_clock::now();
                         c->grid.make_list(c->threads);
                         const auto listed = std::chrono::steady_clock::now();
                         benchmark::DoNotOptimize(c->grid.sum_list(c->threads));
                         c->list_s += std::chrono::duration<double>(listed - start).count();
                         c->total_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                       },
                       {}},
          .items_per_run = g->voxels,
          .before_grove = [g] { g->touch(); },
          .derive = [v, c](double grove_s, double baseline_s, Counters& out) {
            out.emplace_back("active_voxels", v);
            out.emplace_back("ns_per_voxel_with_listgen", grove_s / v * 1e9);
            out.emplace_back("baseline_ns_per_voxel", baseline_s / v * 1e9);
            out.emplace_back("baseline_listing_share", c->total_s > 0 ? c->list_s / c->total_s : 0.0);
          }};
}

}  // namespace

void register_cpu_sparse() {
  for (const int threads : {1, 2}) {
    const auto reg = [&](std::string_view name, std::string_view baseline, std::function<Pair()> setup,
                         int iterations = kIterations) {
      register_pair(workload(name, threads), grove::Arch::Cpu, baseline, iterations, kRepetitions, std::move(setup));
    };
    reg("cpu_shell_activate", vs_openvdb, [threads] { return activate_pair(threads, true); });
    reg("cpu_shell_activate", vs_block_grid, [threads] { return activate_pair(threads, false); });
    reg("cpu_shell_sum", vs_openvdb, [threads] { return sum_pair(threads, true); });
    reg("cpu_shell_sum", vs_block_grid, [threads] { return sum_pair(threads, false); });
    reg("cpu_shell_laplacian", vs_openvdb, [threads] { return laplacian_pair(threads); });
    for (const int percent : {1, 10, 50, 100}) {
      const int iterations = percent <= 10 ? kShortIterations : kIterations;
      reg("cpu_occupancy_" + std::to_string(percent) + "pct", "lists_cached",
          [threads, percent] { return occupancy_pair(threads, percent); }, iterations);
      // A workload of its own: the Grove sides of two pairs of one workload
      // are averaged together, and `lists_cached`'s ratio must be its own.
      reg("cpu_occupancy_listed_" + std::to_string(percent) + "pct", "listed_block_grid",
          [threads, percent] { return occupancy_listed_pair(threads, percent); }, iterations);
    }
  }
}

}  // namespace grove_bench
