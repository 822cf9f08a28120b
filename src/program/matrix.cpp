// src/program/matrix.cpp — grove/matrix.h: small matrices, unrolled into
// their components' scalar expressions while a kernel body runs.
#include "grove/matrix.h"

#include <string>
#include <utility>

#include "program/program_impl.h"

namespace grove {

namespace {

using detail::kernel_error;

constexpr int kMaxComponents = 64;

std::string size_of(const Mat& a) { return std::to_string(a.rows()) + "x" + std::to_string(a.cols()); }

void check_square(const Mat& a, const char* what, int most) {
  if (a.rows() != a.cols() || a.rows() < 1 || a.rows() > most)
    kernel_error(std::string(what) + " of a " + size_of(a) + " matrix; it takes square matrices of 1x1 to " +
                 std::to_string(most) + "x" + std::to_string(most));
}

template <typename F>
Mat each(const Mat& a, F&& f) {
  std::vector<Expr> out;
  out.reserve(a.components().size());
  for (const Expr& x : a.components()) out.push_back(f(x));
  return Mat(a.rows(), a.cols(), std::move(out));
}

template <typename F>
Mat zip(const Mat& a, const Mat& b, const char* what, F&& f) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    kernel_error(std::string("matrices of sizes ") + size_of(a) + " and " + size_of(b) + " cannot be " + what);
  std::vector<Expr> out;
  out.reserve(a.components().size());
  for (size_t n = 0; n < a.components().size(); ++n) out.push_back(f(a.components()[n], b.components()[n]));
  return Mat(a.rows(), a.cols(), std::move(out));
}

Expr zero_of(DataType type) { return type == DataType::unknown ? Expr(0.0) : Expr::constant(type, 0); }
Expr one_of(DataType type) { return type == DataType::unknown ? Expr(1.0) : Expr::constant(type, 1); }

// The determinant of the rows `rows` and columns `cols` of `a` (Laplace
// expansion along the first row: at most 4 x 4, so at most 24 products).
Expr minor_determinant(const Mat& a, const std::vector<int>& rows, const std::vector<int>& cols) {
  if (rows.size() == 1) return a(rows[0], cols[0]);
  if (rows.size() == 2) return a(rows[0], cols[0]) * a(rows[1], cols[1]) - a(rows[0], cols[1]) * a(rows[1], cols[0]);
  const std::vector<int> below(rows.begin() + 1, rows.end());
  Expr sum = zero_of(a(0, 0).type());
  for (size_t k = 0; k < cols.size(); ++k) {
    std::vector<int> rest;
    for (size_t c = 0; c < cols.size(); ++c)
      if (c != k) rest.push_back(cols[c]);
    const Expr term = a(rows[0], cols[k]) * minor_determinant(a, below, rest);
    sum = k == 0 ? term : (k % 2 == 0 ? sum + term : sum - term);
  }
  return sum;
}

std::vector<int> all_but(int n, int skip) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i)
    if (i != skip) out.push_back(i);
  return out;
}

void check_float(const Mat& F, const char* what) {
  check_square(F, what, 3);
  if (F.rows() < 2) kernel_error(std::string(what) + " takes 2x2 and 3x3 matrices, not " + size_of(F));
  if (!is_float(F(0, 0).type()))
    kernel_error(std::string(what) + " of a matrix of " + std::string(type_name(F(0, 0).type())) +
                 "; it takes float matrices (cast the components first)");
}

}  // namespace

// ---- Mat ----------------------------------------------------------------------

Mat::Mat(std::initializer_list<std::initializer_list<Expr>> rows) {
  rows_ = static_cast<int>(rows.size());
  cols_ = rows_ == 0 ? 0 : static_cast<int>(rows.begin()->size());
  for (const auto& r : rows) {
    if (static_cast<int>(r.size()) != cols_)
      kernel_error("a Mat's rows must have one length: a row of " + std::to_string(r.size()) + " after rows of " +
                   std::to_string(cols_));
    c_.insert(c_.end(), r.begin(), r.end());
  }
  if (rows_ * cols_ > kMaxComponents)
    kernel_error("a Mat of " + size_of(*this) + " components; a Mat holds at most 64");
}

Mat::Mat(int rows, int cols, std::vector<Expr> row_major) : rows_(rows), cols_(cols), c_(std::move(row_major)) {
  if (rows < 0 || cols < 0 || rows * cols > kMaxComponents)
    kernel_error("a Mat of " + std::to_string(rows) + "x" + std::to_string(cols) + "; a Mat holds at most 64 components");
  if (c_.size() != static_cast<size_t>(rows) * static_cast<size_t>(cols))
    kernel_error("a " + size_of(*this) + " Mat made of " + std::to_string(c_.size()) + " components");
}

Mat Mat::zeros(int rows, int cols, DataType type) {
  if (rows < 0 || cols < 0 || rows * cols > kMaxComponents)
    kernel_error("Mat::zeros(" + std::to_string(rows) + ", " + std::to_string(cols) + "): a Mat holds at most 64 components");
  return Mat(rows, cols, std::vector<Expr>(static_cast<size_t>(rows) * static_cast<size_t>(cols), zero_of(type)));
}

Mat Mat::identity(int n, DataType type) {
  Mat m = zeros(n, n, type);
  for (int i = 0; i < n; ++i) m(i, i) = one_of(type);
  return m;
}

Mat Mat::from_rows(const std::vector<Vec>& rows) {
  std::vector<Expr> out;
  const int cols = rows.empty() ? 0 : rows.front().size();
  for (const Vec& r : rows) {
    if (r.size() != cols) kernel_error("Mat::from_rows: rows of sizes " + std::to_string(cols) + " and " + std::to_string(r.size()));
    out.insert(out.end(), r.components().begin(), r.components().end());
  }
  return Mat(static_cast<int>(rows.size()), cols, std::move(out));
}

Mat Mat::from_columns(const std::vector<Vec>& columns) { return transpose(from_rows(columns)); }

const Expr& Mat::operator()(int r, int c) const {
  if (r < 0 || r >= rows_ || c < 0 || c >= cols_)
    kernel_error("component (" + std::to_string(r) + ", " + std::to_string(c) + ") of a " + size_of(*this) + " matrix");
  return c_[static_cast<size_t>(r * cols_ + c)];
}

Expr& Mat::operator()(int r, int c) { return const_cast<Expr&>(std::as_const(*this)(r, c)); }

Vec Mat::row(int r) const {
  std::vector<Expr> out;
  for (int c = 0; c < cols_; ++c) out.push_back((*this)(r, c));
  return Vec(std::move(out));
}

Vec Mat::col(int c) const {
  std::vector<Expr> out;
  for (int r = 0; r < rows_; ++r) out.push_back((*this)(r, c));
  return Vec(std::move(out));
}

// ---- arithmetic -----------------------------------------------------------------

Mat operator+(const Mat& a, const Mat& b) { return zip(a, b, "added", [](const Expr& x, const Expr& y) { return x + y; }); }
Mat operator-(const Mat& a, const Mat& b) { return zip(a, b, "subtracted", [](const Expr& x, const Expr& y) { return x - y; }); }
Mat operator-(const Mat& a) { return each(a, [](const Expr& x) { return -x; }); }
Mat operator*(const Mat& a, const Expr& s) { return each(a, [&](const Expr& x) { return x * s; }); }
Mat operator*(const Expr& s, const Mat& a) { return each(a, [&](const Expr& x) { return s * x; }); }
Mat operator/(const Mat& a, const Expr& s) { return each(a, [&](const Expr& x) { return x / s; }); }

Mat operator*(const Mat& a, const Mat& b) {
  if (a.cols() != b.rows())
    kernel_error("the product of a " + size_of(a) + " and a " + size_of(b) + " matrix: the first's columns must "
                 "match the second's rows");
  std::vector<Expr> out;
  for (int r = 0; r < a.rows(); ++r)
    for (int c = 0; c < b.cols(); ++c) out.push_back(dot(a.row(r), b.col(c)));
  return Mat(a.rows(), b.cols(), std::move(out));
}

Vec operator*(const Mat& a, const Vec& v) {
  if (a.cols() != v.size())
    kernel_error("the product of a " + size_of(a) + " matrix and a vector of " + std::to_string(v.size()));
  std::vector<Expr> out;
  for (int r = 0; r < a.rows(); ++r) out.push_back(dot(a.row(r), v));
  return Vec(std::move(out));
}

Mat transpose(const Mat& a) {
  std::vector<Expr> out;
  for (int c = 0; c < a.cols(); ++c)
    for (int r = 0; r < a.rows(); ++r) out.push_back(a(r, c));
  return Mat(a.cols(), a.rows(), std::move(out));
}

Expr trace(const Mat& a) {
  check_square(a, "trace", 8);
  Expr sum = a(0, 0);
  for (int i = 1; i < a.rows(); ++i) sum = sum + a(i, i);
  return sum;
}

Expr determinant(const Mat& a) {
  check_square(a, "determinant", 4);
  return minor_determinant(a, all_but(a.rows(), -1), all_but(a.cols(), -1));
}

Mat inverse(const Mat& a) {
  check_square(a, "inverse", 4);
  const int n = a.rows();
  const Expr det = determinant(a);
  if (n == 1) return Mat{{one_of(a(0, 0).type()) / det}};
  // The adjugate's (r, c) is the cofactor (c, r).
  std::vector<Expr> out;
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) {
      const Expr m = minor_determinant(a, all_but(n, c), all_but(n, r));
      out.push_back(((r + c) % 2 == 0 ? m : -m) / det);
    }
  return Mat(n, n, std::move(out));
}

Mat outer(const Vec& a, const Vec& b) {
  std::vector<Expr> out;
  for (int r = 0; r < a.size(); ++r)
    for (int c = 0; c < b.size(); ++c) out.push_back(a[r] * b[c]);
  return Mat(a.size(), b.size(), std::move(out));
}

Expr norm_sqr(const Mat& a) {
  if (a.components().empty()) kernel_error("the norm of an empty matrix");
  return dot(Vec(a.components()), Vec(a.components()));
}
Expr norm(const Mat& a) { return sqrt(norm_sqr(a)); }

Vec cross(const Vec& a, const Vec& b) {
  if (a.size() != 3 || b.size() != 3)
    kernel_error("cross of vectors of sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size()) +
                 "; it takes 3-vectors");
  return Vec{a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

Vec normalized(const Vec& a) { return a / norm(a); }

// ---- 2x2 decompositions (Taichi's polar_decompose2d and svd2d) ----------------------

namespace {


Polar polar_decompose_2x2(const Mat& F) {
  const Expr x = F(0, 0) + F(1, 1), y = F(1, 0) - F(0, 1);
  const Expr scale = rsqrt(x * x + y * y);
  const Expr c = x * scale, s = y * scale;
  Mat R{{c, -s}, {s, c}};
  return {R, transpose(R) * F};
}

Svd svd_2x2(const Mat& F) {
  const DataType t = F(0, 0).type();
  const Polar p = polar_decompose_2x2(F);
  const Mat& S = p.S;
  // A Jacobi rotation diagonalises the symmetric S; none is needed when it
  // is (nearly) diagonal already.
  // (Taichi takes |S01| < 1e-5 as diagonal, which costs f64 its precision;
  // here: below the rounding error of the diagonal, or so small that its
  // square would underflow.)
  const bool single = bit_width(t) <= 32;
  const Expr eps = Expr::constant(t, single ? 0x1p-24 : 0x1p-53), tiny = Expr::constant(t, single ? 1e-18 : 1e-150);
  const Expr off = abs(S(0, 1));
  const Expr diagonal = (off <= eps * (abs(S(0, 0)) + abs(S(1, 1)))) || (off < tiny);
  const Expr half = Expr::constant(t, 0.5), one = one_of(t), two = Expr::constant(t, 2);
  const Expr tao = half * (S(0, 0) - S(1, 1));
  const Expr w = sqrt(tao * tao + S(0, 1) * S(0, 1));
  // Both quotients are computed; the one whose divisor can be 0 is not chosen.
  const Expr tan = select(tao > zero_of(t), S(0, 1) / (tao + w), S(0, 1) / (tao - w));
  const Expr c = select(diagonal, one, rsqrt(tan * tan + one));
  const Expr s = select(diagonal, zero_of(t), -tan * c);
  Expr s1 = c * c * S(0, 0) - two * c * s * S(0, 1) + s * s * S(1, 1);
  Expr s2 = s * s * S(0, 0) + two * c * s * S(0, 1) + c * c * S(1, 1);
  s1 = select(diagonal, S(0, 0), s1);
  s2 = select(diagonal, S(1, 1), s2);
  // V = [[c, s], [-s, c]], its columns swapped (and one negated, to stay a
  // rotation) when that puts the larger singular value first.
  const Expr swap = s1 < s2;
  const Mat V{{select(swap, -s, c), select(swap, c, s)}, {select(swap, -c, -s), select(swap, -s, c)}};
  return {p.R * V, Vec{select(swap, s2, s1), select(swap, s1, s2)}, V};
}

}  // namespace

// ---- 3x3: Jacobi on F^T F, then a QR of F V by Givens rotations --------------------
//
// The method of McAdams et al., "Computing the Singular Value Decomposition
// of 3x3 matrices with minimal branching and elementary floating point
// operations" (2011), with exact rotations instead of their approximate
// quaternion ones: a fixed number of cyclic Jacobi sweeps diagonalises the
// symmetric F^T F (V accumulates the rotations), the columns of B = F V are
// sorted by decreasing norm (V stays a rotation by negating a swapped
// column), and Givens rotations take B to an upper triangular R = U^T B
// whose diagonal holds the singular values (the last carries det F's sign).
// No branch: every choice is a select, so it unrolls into straight code.

namespace {

struct Rotation {
  Expr c, s;
};
struct JacobiRotation : Rotation {
  Expr tan;  // s / c
};

// The Jacobi rotation that zeroes S(p, q) of a symmetric S: with
// d = S(q, q) - S(p, p) and a = 2 S(p, q), tan = sign(d) a / (|d| +
// sqrt(d^2 + a^2)), the smaller root of tan^2 a + 2 tan d - a = 0 (the
// textbook's sign(tau) / (|tau| + sqrt(1 + tau^2)) with tau = d / a,
// multiplied through by |a|: one division fewer on the rotation's chain).
JacobiRotation jacobi(const Mat& S, int p, int q, DataType t) {
  const Expr zero = zero_of(t), one = one_of(t);
  const Expr d = S(q, q) - S(p, p);
  const Expr a = Expr::constant(t, 2) * S(p, q);
  const Expr den = abs(d) + sqrt(d * d + a * a);
  const Expr tan = select(d >= zero, a, -a) / den;
  const Expr c = rsqrt(one + tan * tan);
  // Nothing to rotate when S(p, q) and d are 0 (den is 0).
  const Expr none = den == zero;
  const Expr safe_tan = select(none, zero, tan), safe_c = select(none, one, c);
  return {{safe_c, safe_tan * safe_c}, safe_tan};
}

// S := J^T S J for the rotation that zeroes S(p, q), in the closed form of
// a symmetric S: S(p, p) - tan S(p, q), S(q, q) + tan S(p, q), S(p, q) = 0,
// and the third row and column rotated (6 products where the general
// J^T S J takes 24, and a shorter chain of dependent operations).
void rotate_symmetric(Mat& S, int p, int q, const JacobiRotation& r) {
  const int o = 3 - p - q;
  const Expr apq = S(p, q), sop = S(o, p), soq = S(o, q);
  S(p, p) = S(p, p) - r.tan * apq;
  S(q, q) = S(q, q) + r.tan * apq;
  S(p, q) = zero_of(apq.type());
  S(q, p) = S(p, q);
  S(o, p) = r.c * sop - r.s * soq;
  S(p, o) = S(o, p);
  S(o, q) = r.s * sop + r.c * soq;
  S(q, o) = S(o, q);
}

// m := m J, J the rotation of the (p, q) plane with J(p, p) = J(q, q) = c,
// J(p, q) = s, J(q, p) = -s: columns p and q mix.
void rotate_columns(Mat& m, int p, int q, const Rotation& r) {
  for (int i = 0; i < m.rows(); ++i) {
    const Expr a = m(i, p), b = m(i, q);
    m(i, p) = r.c * a - r.s * b;
    m(i, q) = r.s * a + r.c * b;
  }
}

// m := J^T m: rows p and q mix.
void rotate_rows(Mat& m, int p, int q, const Rotation& r) {
  for (int j = 0; j < m.cols(); ++j) {
    const Expr a = m(p, j), b = m(q, j);
    m(p, j) = r.c * a - r.s * b;
    m(q, j) = r.s * a + r.c * b;
  }
}

// Swaps columns i and j of B and V where column j of B is longer,
// negating one of V's (and B's) so that V stays a rotation.
void sort_columns(Mat& B, Mat& V, int i, int j) {
  const Expr longer = norm_sqr(B.col(i)) < norm_sqr(B.col(j));
  for (Mat* m : {&B, &V})
    for (int r = 0; r < 3; ++r) {
      const Expr a = (*m)(r, i), b = (*m)(r, j);
      (*m)(r, i) = select(longer, b, a);
      (*m)(r, j) = select(longer, -a, b);
    }
}

// The Givens rotation that zeroes B(q, col) against B(p, col), applied to
// B's rows and accumulated into U's columns.
void givens(Mat& B, Mat& U, int p, int q, int col, DataType t) {
  const Expr a = B(p, col), b = B(q, col);
  const Expr r = sqrt(a * a + b * b);
  const Expr none = r == zero_of(t);
  // J(p, q) = s with s = -b / r zeroes row q: B(q) = s a + c b = 0.
  const Rotation g{select(none, one_of(t), a / r), select(none, zero_of(t), -b / r)};
  rotate_rows(B, p, q, g);
  rotate_columns(U, p, q, g);
}

Svd svd_3x3(const Mat& F) {
  const DataType t = F(0, 0).type();
  Mat S = transpose(F) * F;
  Mat V = Mat::identity(3, t);
  // Cyclic Jacobi converges quadratically: 4 sweeps reach f32's rounding
  // (McAdams et al. take 4 too), 7 f64's.
  const int sweeps = bit_width(t) <= 32 ? 4 : 7;
  for (int sweep = 0; sweep < sweeps; ++sweep)
    for (const auto& [p, q] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 2}}) {
      const JacobiRotation r = jacobi(S, p, q, t);
      rotate_symmetric(S, p, q, r);
      rotate_columns(V, p, q, r);
    }
  Mat B = F * V;
  sort_columns(B, V, 0, 1);
  sort_columns(B, V, 0, 2);
  sort_columns(B, V, 1, 2);
  Mat U = Mat::identity(3, t);
  givens(B, U, 0, 1, 0, t);
  givens(B, U, 0, 2, 0, t);
  givens(B, U, 1, 2, 1, t);
  return {U, Vec{B(0, 0), B(1, 1), B(2, 2)}, V};
}

Polar polar_decompose_3x3(const Mat& F) {
  const Svd d = svd_3x3(F);
  // F = U Sigma V^T = (U V^T) (V Sigma V^T); a negative last singular value
  // keeps R a rotation and leaves the reflection in S.
  Mat sigma = Mat::zeros(3, 3, F(0, 0).type());
  for (int i = 0; i < 3; ++i) sigma(i, i) = d.sigma[i];
  return {d.U * transpose(d.V), d.V * sigma * transpose(d.V)};
}

}  // namespace

Polar polar_decompose(const Mat& F) {
  check_float(F, "polar_decompose");
  return F.rows() == 2 ? polar_decompose_2x2(F) : polar_decompose_3x3(F);
}

Svd svd(const Mat& F) {
  check_float(F, "svd");
  return F.rows() == 2 ? svd_2x2(F) : svd_3x3(F);
}

// ---- matrix field elements ----------------------------------------------------------

Mat FieldRef::mat() const {
  std::vector<Expr> out;
  for (int r = 0; r < field_.n(); ++r)
    for (int c = 0; c < field_.m(); ++c) out.push_back(Expr((*this)[r * field_.m() + c]));
  return Mat(field_.n(), field_.m(), std::move(out));
}

FieldRef& FieldRef::operator=(const Mat& value) {
  if (value.rows() != field_.n() || value.cols() != field_.m())
    kernel_error("field '" + field_.name() + "' is " + std::to_string(field_.n()) + "x" + std::to_string(field_.m()) +
                 " but was assigned a " + std::to_string(value.rows()) + "x" + std::to_string(value.cols()) + " matrix");
  for (int r = 0; r < value.rows(); ++r)
    for (int c = 0; c < value.cols(); ++c) (*this)[r * value.cols() + c] = value(r, c);
  return *this;
}

FieldRef& FieldRef::operator+=(const Mat& v) {
  if (v.rows() != field_.n() || v.cols() != field_.m())
    kernel_error("field '" + field_.name() + "' is " + std::to_string(field_.n()) + "x" + std::to_string(field_.m()) +
                 " but was given a " + std::to_string(v.rows()) + "x" + std::to_string(v.cols()) + " matrix");
  for (int r = 0; r < v.rows(); ++r)
    for (int c = 0; c < v.cols(); ++c) atomic_add((*this)[r * v.cols() + c], v(r, c));
  return *this;
}

}  // namespace grove
