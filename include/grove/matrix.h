// grove/matrix.h — small matrices in the kernel language (Taichi's
// ti.Matrix): a Mat of expressions, up to 64 components, with the algebra a
// simulation needs (products, transpose, determinant, inverse, outer
// products, the polar decomposition and the SVD of 2x2 and 3x3 matrices).
// Like Vec,
// a Mat is unrolled when the kernel body runs: every operation becomes the
// scalar IR of its components, so every backend runs it.
#pragma once

#include <initializer_list>
#include <vector>

#include "grove/dsl.h"

namespace grove {

class Mat {
 public:
  Mat() = default;
  // Row by row: Mat{{a, b}, {c, d}}.
  Mat(std::initializer_list<std::initializer_list<Expr>> rows);
  // `rows` x `cols` components in row-major order.
  Mat(int rows, int cols, std::vector<Expr> row_major);
  // Zeros and the identity, of `type` (unknown: Config::default_fp).
  static Mat zeros(int rows, int cols, DataType type = DataType::unknown);
  static Mat identity(int n, DataType type = DataType::unknown);
  // One row (column) per vector, all of one size.
  static Mat from_rows(const std::vector<Vec>& rows);
  static Mat from_columns(const std::vector<Vec>& columns);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  // Component (r, c); out of range is a grove::Error naming the kernel.
  const Expr& operator()(int r, int c) const;
  Expr& operator()(int r, int c);
  Vec row(int r) const;
  Vec col(int c) const;
  const std::vector<Expr>& components() const { return c_; }  // row-major

 private:
  int rows_ = 0, cols_ = 0;
  std::vector<Expr> c_;
};

// Component-wise sums and differences, a scalar with every component.
Mat operator+(const Mat& a, const Mat& b);
Mat operator-(const Mat& a, const Mat& b);
Mat operator-(const Mat& a);
Mat operator*(const Mat& a, const Expr& s);
Mat operator*(const Expr& s, const Mat& a);
Mat operator/(const Mat& a, const Expr& s);
// Matrix products: a's columns must match b's rows (the vector's size).
Mat operator*(const Mat& a, const Mat& b);
Vec operator*(const Mat& a, const Vec& v);

Mat transpose(const Mat& a);
Expr trace(const Mat& a);
// Square matrices of at most 4 x 4. inverse() divides by the determinant:
// a singular matrix gives infinities or NaN, as in Taichi.
Expr determinant(const Mat& a);
Mat inverse(const Mat& a);
// a b^T: rows from a, columns from b.
Mat outer(const Vec& a, const Vec& b);
// The Frobenius norm and its square.
Expr norm(const Mat& a);
Expr norm_sqr(const Mat& a);
// 3-vectors only.
Vec cross(const Vec& a, const Vec& b);
Vec normalized(const Vec& a);

// F = R S with R a rotation and S symmetric (2x2 or 3x3, float types).
struct Polar {
  Mat R, S;
};
Polar polar_decompose(const Mat& F);
// F = U diag(sigma) V^T with U and V rotations and the sigma in decreasing
// order of magnitude (the last is negative when det F < 0), for 2x2 (Taichi's
// closed form) and 3x3 (Jacobi sweeps on F^T F, then a QR by Givens
// rotations: McAdams et al. 2011, with exact rotations) float matrices.
struct Svd {
  Mat U;
  Vec sigma;
  Mat V;
};
Svd svd(const Mat& F);

}  // namespace grove

// The matrix part of the kernel language (grove/dsl.h, grove::dsl).
namespace grove::dsl {
using grove::Mat;
using grove::Polar;
using grove::Svd;
using grove::transpose;
using grove::trace;
using grove::determinant;
using grove::inverse;
using grove::outer;
using grove::norm;
using grove::norm_sqr;
using grove::cross;
using grove::normalized;
using grove::polar_decompose;
using grove::svd;
}  // namespace grove::dsl
