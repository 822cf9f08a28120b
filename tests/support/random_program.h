// tests/support/random_program.h — random kernels built through the public
// DSL from a seed, for the differential fuzzer (tests/api/random_program_test.cpp
// runs fixed seeds on every backend; tests/fuzz/program_fuzzer.cpp runs new
// ones for a bounded time under `make fuzz`).
//
// A program: a few dense input fields of random types filled with edge and
// random values, and one kernel whose parallel loop computes expression
// trees over them (every scalar type, casts, comparisons and selects, bit
// operations, shifts, division by values that may be 0 or -1, integer and
// float math), a serial inner loop with continue and break, atomics whose
// result does not depend on the order of the iterations, writes into a
// pointer field under a condition, appends to a dynamic list, activates,
// writes and deactivates cells of a bitmasked field, and struct-fors that
// count and sum what was activated and appended. Every
// output is compared bit for bit with the interpreter, except:
// transcendental results (close to each other, within the precision
// docs/ir.md promises), and the dynamic list, whose order the parallel
// appends decide (compared as a sorted list).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "differential.h"
#include "grove/grove.h"

namespace grove::testing {

struct RandomOutput {
  Field field;
  DataType type = DataType::unknown;
  enum class Compare { exact, loose, unordered } compare = Compare::exact;
  std::string what;  // how it was computed, for a failure's message
};

class RandomProgram {
 public:
  explicit RandomProgram(uint64_t seed) : rng_(seed) {}

  // Declares the fields, fills the inputs, records and launches the kernel
  // once; returns what to compare. Call once per Program with a fresh
  // RandomProgram of the same seed: every choice comes from the seed.
  std::vector<RandomOutput> run(Program& prog) {
    outputs_.clear();
    inputs_.clear();
    const int inputs = pick(2, 4);
    for (int k = 0; k < inputs; ++k) {
      const DataType t = any_type();
      Field f = prog.field(t, "in" + std::to_string(k), {kN});
      fill(f, t);
      inputs_.push_back({f, t});
    }
    const int exact = pick(3, 6);
    std::vector<std::pair<Field, DataType>> dense;
    for (int k = 0; k < exact; ++k) dense.push_back(output(prog, any_type(), "e" + std::to_string(k)));
    const bool with_loose = pick(0, 1) == 1;
    const DataType loose_type = pick(0, 1) ? DataType::f64 : DataType::f32;
    std::optional<Field> loose_arg, loose_out;
    if (with_loose) {
      loose_arg = prog.field(loose_type, "loose_arg", {kN});
      loose_out = prog.field(loose_type, "loose", {kN});
      outputs_.push_back({*loose_arg, loose_type, RandomOutput::Compare::exact, "argument of the transcendental"});
      outputs_.push_back({*loose_out, loose_type, RandomOutput::Compare::loose, "transcendental"});
    }
    const bool with_loop = pick(0, 1) == 1;
    std::optional<Field> looped;
    if (with_loop) looped = output(prog, any_int_type(), "looped").first;
    // Order-free atomics: integer add, min, max, xor; float min and max of
    // values without NaN or -0.0.
    Field iadd = output(prog, any_int_type(), "atomic_add", {}).first;
    Field ixor = output(prog, any_int_type(), "atomic_xor", {}).first;
    const DataType ft = pick(0, 1) ? DataType::f64 : DataType::f32;
    Field fmin = output(prog, ft, "atomic_fmin", {}).first;
    Field fmax = output(prog, ft, "atomic_fmax", {}).first;
    // Sparse: a pointer field written under a condition, a dynamic list.
    Field sp = prog.field(DataType::i32, "sparse");
    SNode& blocks = prog.root().pointer(i, {kN / 8});
    blocks.dense(i, {8}).place({sp});
    outputs_.push_back({sp, DataType::i32, RandomOutput::Compare::exact, "pointer field"});
    Field list = prog.field(DataType::i32, "list");
    SNode& dyn = prog.root().dynamic(i, kN);
    dyn.place({list});
    outputs_.push_back({list, DataType::i32, RandomOutput::Compare::unordered, "dynamic list"});
    Field active = output(prog, DataType::i32, "active_cells", {}).first;
    Field sparse_sum = output(prog, DataType::i64, "sparse_sum", {}).first;
    Field list_length = output(prog, DataType::i32, "list_length", {}).first;
    Field list_sum = output(prog, DataType::i64, "list_sum", {}).first;
    // Declared last, so that what the earlier generator made of a seed stays
    // a prefix of what it makes now (the regression seeds keep their programs).
    Field bits = prog.field(DataType::i32, "bitmasked");
    SNode& mask = prog.root().bitmasked(i, {kN});
    mask.place({bits});
    outputs_.push_back({bits, DataType::i32, RandomOutput::Compare::exact, "bitmasked field"});
    Field bits_active = output(prog, DataType::i32, "bitmasked_active").first;
    Field bits_count = output(prog, DataType::i32, "bitmasked_cells", {}).first;
    Field bits_sum = output(prog, DataType::i64, "bitmasked_sum", {}).first;

    Kernel k = prog.kernel("fuzz", [&] {
      for_range(0, kN, [&](Expr i) {
        index_ = i;
        for (auto& [f, t] : dense) {
          Node n = exact_expr(pick(1, 4));
          f(i) = cast(t, n.e);
        }
        if (with_loose) {
          Node a = exact_expr(pick(0, 2));
          Expr x = cast(loose_type, a.e);
          (*loose_arg)(i) = x;
          (*loose_out)(i) = transcendental(x);
        }
        if (with_loop) {
          const DataType lt = looped->dtype();
          Var acc(lt, cast(lt, Expr(0)));
          const int trips = pick(1, 6);
          Node skip = condition(), stop = condition();
          Node step = exact_expr(pick(0, 2));
          for_range(0, trips, [&](Expr j) {
            if_(skip.e && (j % 2 == 1), [&] { continue_(); });
            acc = acc + cast(lt, step.e) * cast(lt, j + 1);
            if_(stop.e && (j >= 2), [&] { break_(); });
          });
          (*looped)(i) = acc;
        }
        atomic_add(iadd(), cast(iadd.dtype(), exact_expr(pick(0, 2)).e));
        atomic_xor(ixor(), cast(ixor.dtype(), exact_expr(pick(0, 2)).e));
        for (Field* f : {&fmin, &fmax}) {
          Expr v = cast(ft, exact_expr(pick(0, 2)).e);
          v = select(v != v, Expr::constant(ft, 0.0), v + Expr::constant(ft, 0.0));  // no NaN, no -0.0
          if (f == &fmin) atomic_min((*f)(), v);
          else atomic_max((*f)(), v);
        }
        Node keep = condition();
        if_(keep.e, [&] { sp(i) = cast(DataType::i32, exact_expr(pick(0, 2)).e); });
        Node put = condition();
        if_(put.e, [&] { append(dyn, {}, cast(DataType::i32, exact_expr(pick(0, 2)).e)); });
        // Each iteration activates, writes and deactivates only its own cell.
        Node set = condition();
        if_(set.e, [&] { bits(i) = cast(DataType::i32, exact_expr(pick(0, 2)).e); });
        Node touch = condition();
        if_(touch.e, [&] { activate(mask, {i}); });
        Node clear = condition();
        if_(clear.e, [&] { deactivate(mask, {i}); });
        bits_active(i) = cast(DataType::i32, is_active(mask, {i}));
      });
      for_each(bits, [&](Expr j) {
        atomic_add(bits_count(), 1);
        atomic_add(bits_sum(), cast(DataType::i64, bits(j)));
      });
      for_each(sp, [&](Expr j) {
        atomic_add(active(), 1);
        atomic_add(sparse_sum(), cast(DataType::i64, sp(j)));
      });
      for_each(list, [&](Expr j) { atomic_add(list_sum(), cast(DataType::i64, list(j))); });
      for_range(0, 1, [&](Expr) { list_length() = length(dyn, {}); });
    });
    fmin.write({}, ft == DataType::f64 ? 1e300 : 1e30);
    fmax.write({}, ft == DataType::f64 ? -1e300 : -1e30);
    k();
    return outputs_;
  }

 private:
  static constexpr int kN = 64;
  struct Node {
    Expr e;
    DataType t;
    int leaf = -1;  // which leaf it is (an input, the index, a constant), else -1
  };

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  template <typename T>
  const T& one_of(const std::vector<T>& v) { return v[static_cast<size_t>(pick(0, static_cast<int>(v.size()) - 1))]; }

  DataType any_int_type() {
    static const std::vector<DataType> t = {DataType::i8, DataType::i16, DataType::i32, DataType::i64,
                                            DataType::u8, DataType::u16, DataType::u32, DataType::u64};
    return one_of(t);
  }
  DataType any_type() { return pick(0, 9) < 7 ? any_int_type() : (pick(0, 1) ? DataType::f32 : DataType::f64); }

  std::pair<Field, DataType> output(Program& prog, DataType t, const std::string& name, Shape shape = {kN}) {
    Field f = prog.field(t, name, shape);
    outputs_.push_back({f, t, RandomOutput::Compare::exact, name});
    return {f, t};
  }

  void fill(Field f, DataType t) {
    if (is_float(t)) {
      static const std::vector<double> edges = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 100.0, 1e30, -1e30,
                                                std::numeric_limits<double>::infinity(),
                                                -std::numeric_limits<double>::infinity(),
                                                std::numeric_limits<double>::quiet_NaN(), 2147483648.0, 65535.5,
                                                -129.0, 4294967296.0, 9.3e18, 1e-310};
      std::vector<double> v;
      for (int n = 0; n < kN; ++n)
        v.push_back(pick(0, 2) == 0 ? one_of(edges) : std::ldexp(pick(-1000, 1000) / 7.0, pick(-8, 24)));
      f.from_vector(v);
      return;
    }
    const int w = bit_width(t);
    const int64_t hi = w == 64 ? INT64_MAX : (is_signed(t) ? (int64_t{1} << (w - 1)) - 1 : (int64_t{1} << w) - 1);
    const int64_t lo = is_signed(t) ? -hi - 1 : 0;
    std::vector<int64_t> v;
    for (int n = 0; n < kN; ++n) {
      int64_t x;
      switch (pick(0, 5)) {
        case 0: x = lo; break;
        case 1: x = hi; break;
        case 2: x = pick(-2, 2); break;
        case 3: x = pick(0, 70); break;
        default: x = static_cast<int64_t>(std::uniform_int_distribution<uint64_t>(0, ~uint64_t{0})(rng_) >> 1); break;
      }
      x = std::clamp(x, lo, hi);
      v.push_back(x);
    }
    f.from_vector(v);
  }

  Node constant() {
    const DataType t = any_type();
    if (is_float(t)) {
      static const std::vector<double> c = {0.0, -0.0, 0.5, 1.0, -1.0, 3.0, 1e10, -7.25};
      return {Expr::constant(t, one_of(c)), t};
    }
    static const std::vector<int> c = {0, 1, -1, 2, 3, 7, 31, 32, 33, 63, 64, 100, -128, 255};
    int v = one_of(c);
    if (!is_signed(t) && v < 0) v = -v;
    // As a value of t: wrapped to its width (255 is -1 as an i8), which
    // Expr::constant takes only once it fits.
    const int w = bit_width(t);
    int64_t value = v;
    if (w < 64 && is_signed(t)) {
      const uint64_t low = static_cast<uint64_t>(value) & ((uint64_t{1} << w) - 1), sign = uint64_t{1} << (w - 1);
      value = static_cast<int64_t>((low ^ sign) - sign);
    }
    return {Expr::constant(t, value), t, 1000 + v};
  }

  Node leaf() {
    switch (pick(0, 4)) {
      case 0: return constant();
      case 1: return {*index_, DataType::i32, 100};
      default: {
        const int k = pick(0, static_cast<int>(inputs_.size()) - 1);
        const auto& [f, t] = inputs_[static_cast<size_t>(k)];
        return {f(*index_), t, k};
      }
    }
  }

  Node as_int(Node n) {
    if (!is_float(n.t) && n.t != DataType::u1) return n;
    const DataType t = any_int_type();
    return {cast(t, n.e), t};
  }

  static DataType promoted(DataType a, DataType b) {
    // docs/ir.md's promotion, for the generator's bookkeeping only.
    if (is_float(a) || is_float(b)) return (a == DataType::f64 || b == DataType::f64) ? DataType::f64 : DataType::f32;
    if (a == DataType::u1) return b;
    if (b == DataType::u1) return a;
    if (bit_width(a) != bit_width(b)) return bit_width(a) > bit_width(b) ? a : b;
    return is_signed(a) ? b : a;
  }

  // An expression that is not the same leaf as `a`: x - x and x ^ x are
  // zeros a driver derives and may fold with the wrong sign (docs/ir.md,
  // "Floats"), which the comparison could not tell from a real difference.
  Node other_than(const Node& a, int depth) {
    for (int tries = 0;; ++tries) {
      Node b = exact_expr(depth);
      if (b.leaf < 0 || b.leaf != a.leaf || tries == 8) return b;
    }
  }

  // A boolean from a comparison of two exact expressions.
  Node condition() {
    Node a = exact_expr(pick(0, 2)), b = other_than(a, pick(0, 2));
    switch (pick(0, 5)) {
      case 0: return {a.e < b.e, DataType::u1};
      case 1: return {a.e <= b.e, DataType::u1};
      case 2: return {a.e > b.e, DataType::u1};
      case 3: return {a.e >= b.e, DataType::u1};
      case 4: return {a.e == b.e, DataType::u1};
      default: return {a.e != b.e, DataType::u1};
    }
  }

  // An expression every backend computes bit for bit like the interpreter.
  Node exact_expr(int depth) {
    if (depth <= 0) return leaf();
    switch (pick(0, 9)) {
      case 0: {  // unary
        Node x = exact_expr(depth - 1);
        switch (pick(0, 6)) {
          case 0: return {-x.e, x.t == DataType::u1 ? DataType::u1 : x.t};
          case 1: { Node n = as_int(x); return {~n.e, n.t}; }
          case 2: return {abs(x.e), x.t};
          case 3: { Node f = x.t == DataType::f64 ? x : Node{cast(DataType::f32, x.e), DataType::f32};
                    return pick(0, 2) == 0 ? Node{floor(f.e), f.t} : pick(0, 1) ? Node{ceil(f.e), f.t} : Node{round(f.e), f.t}; }
          case 4: { Node n = as_int(x); return {pick(0, 2) == 0 ? popcnt(n.e) : pick(0, 1) ? clz(n.e) : ctz(n.e), n.t}; }
          case 5: return {cast(DataType::i32, !x.e), DataType::i32};
          default: { const DataType t = any_type(); return {cast(t, x.e), t}; }
        }
      }
      case 1: case 2: case 3: case 4: {  // arithmetic
        Node a = exact_expr(depth - 1), b = other_than(a, depth - 1);
        const DataType t = promoted(a.t, b.t);
        switch (pick(0, 6)) {
          case 0: return {a.e + b.e, t};
          case 1: return {a.e - b.e, t};
          case 2: return {a.e * b.e, t};
          case 3: return {a.e / b.e, t};
          case 4: return {a.e % b.e, t};
          case 5: return {min(a.e, b.e), t};
          default: return {max(a.e, b.e), t};
        }
      }
      case 5: case 6: {  // bits
        Node a = as_int(exact_expr(depth - 1)), b = as_int(other_than(a, depth - 1));
        switch (pick(0, 4)) {
          case 0: return {a.e & b.e, promoted(a.t, b.t)};
          case 1: return {a.e | b.e, promoted(a.t, b.t)};
          case 2: return {a.e ^ b.e, promoted(a.t, b.t)};
          case 3: return {a.e << b.e, a.t};
          default: return {a.e >> b.e, a.t};
        }
      }
      case 7: {  // integer pow (exact; float pow is the driver's)
        Node a = as_int(exact_expr(depth - 1)), b = as_int(exact_expr(depth - 1));
        return {pow(a.e, b.e), promoted(a.t, b.t)};
      }
      case 8: {  // select on a comparison
        Node c = condition(), a = exact_expr(depth - 1), b = exact_expr(depth - 1);
        return {select(c.e, a.e, b.e), promoted(a.t, b.t)};
      }
      default: {  // a cast through another type
        Node x = exact_expr(depth - 1);
        const DataType t = any_type();
        return {cast(t, x.e), t};
      }
    }
  }

  Expr transcendental(Expr x) {
    switch (pick(0, 8)) {
      case 0: return sqrt(x);
      case 1: return sin(x);
      case 2: return cos(x);
      case 3: return exp(x);
      case 4: return log(x);
      case 5: return atan(x);
      case 6: return tanh(x);
      case 7: return pow(abs(x), Expr::constant(x.type(), 0.75));
      default: return atan2(x, x + Expr::constant(x.type(), 1.5));
    }
  }

  std::mt19937_64 rng_;
  std::optional<Expr> index_;  // the parallel loop's index, while recording
  std::vector<std::pair<Field, DataType>> inputs_;
  std::vector<RandomOutput> outputs_;
};

inline std::string hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Runs seed `seed` on the interpreter and on `config`'s backend and returns
// a description of each disagreement (empty when they agree).
inline std::vector<std::string> random_program_disagreements(uint64_t seed, const Config& config) {
  auto run = [&](const Config& c, std::vector<RandomOutput>* outputs) {
    Program prog(c);
    *outputs = RandomProgram(seed).run(prog);
    prog.sync();
    std::vector<std::vector<uint64_t>> bits;
    for (const RandomOutput& o : *outputs) bits.push_back(field_bits(o.field));
    return bits;
  };
  Config reference;
  reference.arch = Arch::Interp;
  std::vector<RandomOutput> outputs, other;
  const auto want = run(reference, &outputs);
  const auto got = run(config, &other);
  std::vector<std::string> problems;
  for (size_t o = 0; o < outputs.size(); ++o) {
    std::vector<uint64_t> w = want[o], g = got[o];
    const RandomOutput& out = outputs[o];
    if (out.compare == RandomOutput::Compare::unordered) {
      std::sort(w.begin(), w.end());
      std::sort(g.begin(), g.end());
    }
    for (size_t n = 0; n < w.size() && n < g.size(); ++n) {
      if (w[n] == g[n] || (is_nan_bits(out.type, w[n]) && is_nan_bits(out.type, g[n]))) continue;
      if (out.compare == RandomOutput::Compare::loose) {
        // Precision as docs/ir.md states it; huge trig arguments are not compared.
        const double x = as_double(out.type, want[o - 1][n]);
        if (std::fabs(x) > 1e3 || close_enough(out.type, w[n], g[n])) continue;
      }
      const std::string what = "seed " + std::to_string(seed) + ", " + std::string(arch_name(config.arch)) + ": " +
                               out.what + " (" + std::string(type_name(out.type)) + ") element " + std::to_string(n) +
                               ": interpreter 0x" + hex(w[n]) + ", got 0x" + hex(g[n]);
      problems.push_back(what);
      break;
    }
  }
  return problems;
}

}  // namespace grove::testing
