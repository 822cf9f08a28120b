// grove/dsl.h — the C++ kernel language: expressions, variables, loops, branches, atomics.
// Everything here is used inside a kernel body, which runs once when the
// kernel is first compiled and records IR; it never computes on the host.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "grove/program.h"

namespace grove {

namespace ir {
class Stmt;
}

// A value inside a kernel. Built from literals (int -> i32, double/float ->
// Config::default_fp, bool -> u1, int64_t -> i64, unsigned -> u32) or from
// other expressions.
class Expr {
 public:
  // Not yet given a value (Expr base[2];): assign it before use; a use
  // before that is a grove::Error naming the kernel.
  Expr() : stmt_(nullptr) {}
  Expr(int v);                 // NOLINT(google-explicit-constructor)
  Expr(unsigned v);            // NOLINT
  Expr(long v);                // NOLINT
  Expr(unsigned long v);       // NOLINT
  Expr(long long v);           // NOLINT
  Expr(unsigned long long v);  // NOLINT
  Expr(float v);               // NOLINT
  Expr(double v);              // NOLINT
  Expr(bool v);                // NOLINT
  explicit Expr(ir::Stmt* stmt) : stmt_(stmt) {}

  ir::Stmt* stmt() const { return stmt_; }
  DataType type() const;

  // A constant of exactly this type: Expr::constant(f64, 0.1),
  // Expr::constant(u64, ~uint64_t{0}). The value must keep its value in the
  // type (floats round to the nearest): a fraction for an integer type, a
  // value out of the type's range or NaN for an integer is a grove::Error
  // naming the kernel, the type and the value. Integers above 2^53 need an
  // integer argument: a double cannot hold them.
  static Expr constant(DataType type, double value);
  template <typename T>
    requires std::is_integral_v<T> && (!std::is_same_v<T, bool>)
  static Expr constant(DataType type, T value) {
    if constexpr (std::is_signed_v<T>) return constant_bits(type, DataType::i64, static_cast<uint64_t>(static_cast<int64_t>(value)));
    else return constant_bits(type, DataType::u64, static_cast<uint64_t>(value));
  }

 private:
  static Expr constant_bits(DataType type, DataType from, uint64_t bits);
  ir::Stmt* stmt_;
};

class Vec;
class Mat;  // grove/matrix.h

// A local variable of a kernel (zero-initialised unless given a value).
class Var {
 public:
  Var(const Expr& init);                     // NOLINT: its type is init's type
  Var(DataType type, const Expr& init);
  explicit Var(DataType type);
  Var(const Var& other);                     // a new variable holding other's value
  Var(const FieldRef& init);                 // NOLINT
  // A vector or matrix variable, one local per component: Var v = Vec{0.0, 0.0}.
  Var(const Vec& init);                      // NOLINT
  Var(const Mat& init);                      // NOLINT (grove/matrix.h)
  template <typename T>
    requires std::is_arithmetic_v<T>
  Var(T init) : Var(Expr(init)) {}           // NOLINT: Var x = 0.0f;
  Var& operator=(const Expr& value);
  Var& operator=(const Var& other);
  template <typename T>
    requires std::is_arithmetic_v<T>
  Var& operator=(T value) {  // v = 2.5f; (otherwise ambiguous between Expr and Var)
    return *this = Expr(value);
  }
  Var& operator+=(const Expr& v);
  Var& operator-=(const Expr& v);
  Var& operator*=(const Expr& v);
  Var& operator/=(const Expr& v);
  operator Expr() const;                     // NOLINT: reads the variable
  Expr load() const { return *this; }
  DataType type() const;
  // A vector or matrix variable: assigned and read whole (the sizes must match).
  Var& operator=(const Vec& value);
  Var& operator=(const Mat& value);
  Vec vec() const;
  Mat mat() const;

 private:
  void check_scalar() const;
  void allocate(const std::vector<Expr>& components);
  ir::Stmt* alloca_;               // the first (or only) component
  std::vector<ir::Stmt*> more_;    // the other components of a vector or matrix variable
  int rows_ = 1, cols_ = 1;
};

// An element of a field inside a kernel: reads when used as a value, writes
// when assigned. `+=` and friends are atomic, as in Taichi.
class FieldRef {
 public:
  FieldRef(Field field, Indices index) : field_(std::move(field)), index_(std::move(index)) {}
  operator Expr() const;              // NOLINT: reads (scalar fields only)
  // Reads every component (explicit: an implicit one would make `a + b`
  // ambiguous between scalar and vector arithmetic).
  explicit operator Vec() const;
  Vec vec() const;
  Expr load() const { return *this; }
  FieldRef& operator=(const Expr& value);
  FieldRef& operator=(const FieldRef& other);
  FieldRef& operator=(const Vec& value);
  FieldRef& operator+=(const Expr& v);  // atomic add
  FieldRef& operator-=(const Expr& v);  // atomic sub
  // A load, a product (quotient) and a store, as Taichi's x[i] *= v: not
  // atomic, so only one invocation may update an element at a time.
  FieldRef& operator*=(const Expr& v);
  FieldRef& operator/=(const Expr& v);
  FieldRef& operator+=(const Vec& v);   // component-wise atomic add
  FieldRef& operator-=(const Vec& v);   // component-wise atomic sub
  // A matrix field's element (grove/matrix.h): read, written, and added to
  // component by component (atomically).
  Mat mat() const;
  FieldRef& operator=(const Mat& value);
  FieldRef& operator+=(const Mat& v);
  FieldRef operator[](int component) const;       // vector component
  FieldRef operator()(int row, int col) const;    // matrix component
  const Field& field() const { return field_; }
  const Indices& index() const { return index_; }

 private:
  Field field_;
  Indices index_;
};

template <typename... I>
FieldRef Field::operator()(const I&... index) const {
  return (*this)(Indices{Expr(index)...});
}

// A vector of expressions (a vector field's components, up to 64), operated
// on component-wise.
class Vec {
 public:
  Vec() = default;
  Vec(std::initializer_list<Expr> c) : c_(c) {}
  explicit Vec(std::vector<Expr> c) : c_(std::move(c)) {}
  int size() const { return static_cast<int>(c_.size()); }
  const Expr& operator[](int i) const { return c_.at(static_cast<size_t>(i)); }
  Expr& operator[](int i) { return c_.at(static_cast<size_t>(i)); }
  const std::vector<Expr>& components() const { return c_; }

 private:
  std::vector<Expr> c_;
};

// ---- arithmetic, comparison, logic and bit operators ----
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator/(const Expr& a, const Expr& b);  // integers: truncates toward zero
Expr operator%(const Expr& a, const Expr& b);  // integers: sign of the dividend
Expr operator<(const Expr& a, const Expr& b);
Expr operator<=(const Expr& a, const Expr& b);
Expr operator>(const Expr& a, const Expr& b);
Expr operator>=(const Expr& a, const Expr& b);
Expr operator==(const Expr& a, const Expr& b);
Expr operator!=(const Expr& a, const Expr& b);
Expr operator&&(const Expr& a, const Expr& b);  // both sides are evaluated
Expr operator||(const Expr& a, const Expr& b);
Expr operator&(const Expr& a, const Expr& b);
Expr operator|(const Expr& a, const Expr& b);
Expr operator^(const Expr& a, const Expr& b);
Expr operator<<(const Expr& a, const Expr& b);
Expr operator>>(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
Expr operator!(const Expr& a);
Expr operator~(const Expr& a);

Vec operator+(const Vec& a, const Vec& b);
Vec operator-(const Vec& a, const Vec& b);
Vec operator*(const Vec& a, const Vec& b);
Vec operator*(const Vec& a, const Expr& s);
Vec operator*(const Expr& s, const Vec& a);
Vec operator/(const Vec& a, const Expr& s);
// A scalar with every component: 1.5 - fx is {1.5 - fx[0], 1.5 - fx[1], ...}.
Vec operator+(const Vec& a, const Expr& s);
Vec operator+(const Expr& s, const Vec& a);
Vec operator-(const Vec& a, const Expr& s);
Vec operator-(const Expr& s, const Vec& a);
Vec operator/(const Expr& s, const Vec& a);
Vec operator-(const Vec& a);
// Component-wise comparisons (a Vec of u1), with a vector or a scalar.
Vec operator<(const Vec& a, const Vec& b);
Vec operator<=(const Vec& a, const Vec& b);
Vec operator>(const Vec& a, const Vec& b);
Vec operator>=(const Vec& a, const Vec& b);
Vec operator==(const Vec& a, const Vec& b);
Vec operator!=(const Vec& a, const Vec& b);
Vec operator<(const Vec& a, const Expr& s);
Vec operator<=(const Vec& a, const Expr& s);
Vec operator>(const Vec& a, const Expr& s);
Vec operator>=(const Vec& a, const Expr& s);
Vec operator==(const Vec& a, const Expr& s);
Vec operator!=(const Vec& a, const Expr& s);
// Component-wise math.
Vec pow(const Vec& a, const Expr& e);
Vec pow(const Vec& a, const Vec& e);
Vec abs(const Vec& a);
Vec min(const Vec& a, const Vec& b);
Vec max(const Vec& a, const Vec& b);
// One condition for every component, or one per component.
Vec select(const Expr& cond, const Vec& a, const Vec& b);
Vec select(const Vec& cond, const Vec& a, const Vec& b);
Expr dot(const Vec& a, const Vec& b);
Expr norm(const Vec& a);
Expr norm_sqr(const Vec& a);

// ---- math ----
Expr sqrt(const Expr& x);
Expr rsqrt(const Expr& x);
Expr sin(const Expr& x);
Expr cos(const Expr& x);
Expr tan(const Expr& x);
Expr asin(const Expr& x);
Expr acos(const Expr& x);
Expr atan(const Expr& x);
Expr atan2(const Expr& y, const Expr& x);
Expr tanh(const Expr& x);
Expr exp(const Expr& x);
Expr log(const Expr& x);
Expr pow(const Expr& x, const Expr& y);
Expr abs(const Expr& x);
Expr floor(const Expr& x);
Expr ceil(const Expr& x);
Expr round(const Expr& x);
// Bits of an integer, counted over its type's width (a bool counts as an i32):
// set bits, leading zeros and trailing zeros; clz and ctz of 0 are the width.
Expr popcnt(const Expr& x);
Expr clz(const Expr& x);
Expr ctz(const Expr& x);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
Expr select(const Expr& cond, const Expr& a, const Expr& b);  // both evaluated
Expr cast(DataType type, const Expr& x);
template <typename T>
Expr cast(const Expr& x) {
  return cast(type_of<T>(), x);
}

// ---- atomics on field elements: return the old value ----
Expr atomic_add(const FieldRef& dest, const Expr& v);
Expr atomic_sub(const FieldRef& dest, const Expr& v);
Expr atomic_min(const FieldRef& dest, const Expr& v);
Expr atomic_max(const FieldRef& dest, const Expr& v);
Expr atomic_and(const FieldRef& dest, const Expr& v);
Expr atomic_or(const FieldRef& dest, const Expr& v);
Expr atomic_xor(const FieldRef& dest, const Expr& v);

// ---- SNode operations (indices in the SNode's own index space) ----
// Activates the cell and every sparse ancestor on its path.
void activate(const SNodeRef& snode, const Indices& index);
// Deactivates the cell and frees everything below it; for a dynamic SNode,
// `index` names the list (without the dynamic axis) and empties it.
void deactivate(const SNodeRef& snode, const Indices& index);
Expr is_active(const SNodeRef& snode, const Indices& index);
// Appends an element to the list of a dynamic SNode and returns the index
// written, or -1 if the list is full or its pool has no room (reported after
// the launch). With one field placed under the list, one value; with several
// (a struct element, Taichi's ti.append with a struct value, or the
// components of a vector field), one value per scalar field in placement
// order, all written under the one index.
Expr append(const SNodeRef& snode, const Indices& index, const Expr& value);
Expr append(const SNodeRef& snode, const Indices& index, std::initializer_list<Expr> values);
Expr append(const SNodeRef& snode, const Indices& index, const Vec& values);  // Vec(std::vector<Expr>) too
Expr length(const SNodeRef& snode, const Indices& index);

// ---- control flow ----
// for i in range(begin, end): parallel at the top level of a kernel. The
// index is i32 whatever the bounds' type (a 64-bit literal does not widen
// it); a constant bound outside i32 is refused, and so is a bound computed
// at run time of a type that may not fit (i64, u32, u64: cast it to i32).
void for_range(const Expr& begin, const Expr& end, const std::function<void(Expr)>& body);
// for I in ti.grouped(field): once per active cell, indices grouped.
void for_each(const Field& field, const std::function<void(Indices)>& body);
// A struct-for over the active cells of an SNode, in its own index space.
void for_each(const SNodeRef& snode, const std::function<void(Indices)>& body);
// Check that a struct-for body takes as many indices as there are axes.
void for_each(const Field& field, const std::function<void(Indices)>& body, int arity);
void for_each(const SNodeRef& snode, const std::function<void(Indices)>& body, int arity);

// One axis of a multi-dimensional range: [0, end), or {begin, end}.
struct RangeAxis {
  template <typename E>
    requires(std::is_constructible_v<Expr, const E&> && !std::is_same_v<E, RangeAxis>)
  RangeAxis(const E& end) : begin(0), end(end) {}  // NOLINT(google-explicit-constructor)
  template <typename B, typename E>
  RangeAxis(const B& begin, const E& end) : begin(begin), end(end) {}
  Expr begin, end;
};
// for i, j in ti.ndrange(n, m): every point of a shape, the last axis
// fastest; each axis an end ({n, m}) or a begin and an end ({{1, n - 1},
// {1, m - 1}}). At the top level of a kernel it is one parallel loop with
// no division per point: on a CPU each iteration takes a piece of a row
// (the last axis), a loop the compiler vectorises; on a GPU each thread
// takes one point, consecutive threads consecutive points of a row. As
// every loop it counts in i32 (a constant shape of more iterations is
// refused). As in a top-level for_range, break_() is refused directly
// inside it and continue_() ends the point.
void for_range(std::initializer_list<RangeAxis> axes, const std::function<void(Indices)>& body, int arity = -1);

namespace detail {
// How many Exprs a struct-for body takes (0..4).
template <typename F>
constexpr int struct_for_arity() {
  return std::is_invocable_v<F> ? 0
         : std::is_invocable_v<F, Expr> ? 1
         : std::is_invocable_v<F, Expr, Expr> ? 2
         : std::is_invocable_v<F, Expr, Expr, Expr> ? 3 : 4;
}
// Calls `body` with one Expr per axis.
template <typename F>
std::function<void(Indices)> per_axis(F& body) {
  return [&body](Indices I) {
    if constexpr (std::is_invocable_v<F>) {
      body();
    } else if constexpr (std::is_invocable_v<F, Expr>) {
      body(I.at(0));
    } else if constexpr (std::is_invocable_v<F, Expr, Expr>) {
      body(I.at(0), I.at(1));
    } else if constexpr (std::is_invocable_v<F, Expr, Expr, Expr>) {
      body(I.at(0), I.at(1), I.at(2));
    } else {
      body(I.at(0), I.at(1), I.at(2), I.at(3));
    }
  };
}
}  // namespace detail

// for i, j in field (or an SNode): the callable takes one Expr per axis.
template <typename F>
  requires(!std::is_invocable_v<F, Indices>)
void for_each(const Field& field, F&& body) {
  for_each(field, detail::per_axis(body), detail::struct_for_arity<F>());
}
template <typename F>
  requires(!std::is_invocable_v<F, Indices>)
void for_each(const SNodeRef& snode, F&& body) {
  for_each(snode, detail::per_axis(body), detail::struct_for_arity<F>());
}

// for_range over a shape with one Expr per axis: for_range({n, m}, [&](Expr i, Expr j) { ... }).
template <typename F>
  requires(!std::is_invocable_v<F, Indices>)
void for_range(std::initializer_list<RangeAxis> axes, F&& body) {
  for_range(axes, detail::per_axis(body), detail::struct_for_arity<F>());
}

class IfBuilder {
 public:
  explicit IfBuilder(ir::Stmt* stmt) : stmt_(stmt) {}
  void else_(const std::function<void()>& body);
  IfBuilder elif_(const Expr& cond, const std::function<void()>& body);

 private:
  ir::Stmt* stmt_;
};
IfBuilder if_(const Expr& cond, const std::function<void()>& then_body);
// while (cond()) body(): the condition is re-evaluated before every iteration.
void while_(const std::function<Expr()>& cond, const std::function<void()>& body);
// An endless loop, left with break_().
void loop_(const std::function<void()>& body);
// Leaves the innermost while_/loop_ or nested for_range. Not directly in a
// parallel loop (a top-level for_range, a for_each), as in Taichi.
void break_();
// Ends the current iteration of the innermost loop; in a parallel loop, of
// that iteration only.
void continue_();

// print("x = ", x, ", y = ", y): strings and values, a newline added.
namespace detail {
struct PrintItem {
  std::string text;
  ir::Stmt* value = nullptr;
  PrintItem(const char* s) : text(s) {}         // NOLINT
  PrintItem(std::string s) : text(std::move(s)) {}  // NOLINT
  PrintItem(std::string_view s) : text(s) {}    // NOLINT
  PrintItem(const Expr& e) : value(e.stmt()) {}  // NOLINT
  PrintItem(const Var& v) : value(Expr(v).stmt()) {}  // NOLINT
  PrintItem(const FieldRef& r) : value(Expr(r).stmt()) {}  // NOLINT
  PrintItem(int v) : value(Expr(v).stmt()) {}  // NOLINT
  PrintItem(float v) : value(Expr(v).stmt()) {}  // NOLINT
  PrintItem(double v) : value(Expr(v).stmt()) {}  // NOLINT
};
void print_items(const std::vector<PrintItem>& items);
}  // namespace detail
template <typename... T>
void print(const T&... items) {
  detail::print_items({detail::PrintItem(items)...});
}

}  // namespace grove

// The kernel language alone, for `using namespace grove::dsl;`: the
// expression types, the functions kernel bodies call, and the words that
// declare fields and kernels (the types f32..., the axes i, ij..., arg),
// and none of the host's classes, whose names (Args, Config, Field, Kernel,
// Program, Shape, Stats, Tree...) a program is likely to have too: those stay
// grove::Program and so on. `using namespace grove;` still takes everything.
namespace grove::dsl {
// Types of values and their names.
using grove::u1;
using grove::i8;
using grove::i16;
using grove::i32;
using grove::i64;
using grove::u8;
using grove::u16;
using grove::u32;
using grove::u64;
using grove::f16;
using grove::f32;
using grove::f64;
using grove::real;
using grove::DataType;
// Axes of SNodes, and kernel arguments.
using grove::i;
using grove::j;
using grove::k;
using grove::l;
using grove::ij;
using grove::ijk;
using grove::ijkl;
using grove::axes;
using grove::arg;
// Values.
using grove::Expr;
using grove::Var;
using grove::Vec;
using grove::FieldRef;
using grove::Indices;
using grove::RangeAxis;
// Operations (the operators are found through their operands' namespace).
using grove::sqrt;
using grove::rsqrt;
using grove::sin;
using grove::cos;
using grove::tan;
using grove::asin;
using grove::acos;
using grove::atan;
using grove::atan2;
using grove::tanh;
using grove::exp;
using grove::log;
using grove::pow;
using grove::abs;
using grove::floor;
using grove::ceil;
using grove::round;
using grove::popcnt;
using grove::clz;
using grove::ctz;
using grove::min;
using grove::max;
using grove::select;
using grove::cast;
using grove::dot;
using grove::norm;
using grove::norm_sqr;
using grove::atomic_add;
using grove::atomic_sub;
using grove::atomic_min;
using grove::atomic_max;
using grove::atomic_and;
using grove::atomic_or;
using grove::atomic_xor;
// Sparse structure.
using grove::activate;
using grove::deactivate;
using grove::is_active;
using grove::append;
using grove::length;
// Control flow and output.
using grove::for_range;
using grove::for_each;
using grove::if_;
using grove::while_;
using grove::loop_;
using grove::break_;
using grove::continue_;
using grove::print;
}  // namespace grove::dsl
