// Mat in the kernel language (grove/matrix.h) on every backend, checked
// against the same algebra written out in plain C++ here, or against the
// properties that define it (a rotation's transpose is its inverse...).
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <vector>

#include "backend_fixture.h"

using namespace grove;
using ::testing::AllOf;
using ::testing::HasSubstr;
using grove::testing::error_of;

namespace {

class Matrices : public grove::testing::BackendTest {
 protected:
  // f64 math on Vulkan is computed in f32 (docs/ir.md); elsewhere it is libm's.
  double f64_tolerance() const { return GetParam() == Arch::Vulkan ? 2e-4 : 1e-10; }
};
GROVE_ALL_BACKENDS(Matrices);

template <size_t N>
using Square = std::array<std::array<double, N>, N>;

template <size_t N>
Square<N> product(const Square<N>& a, const Square<N>& b) {
  Square<N> p{};
  for (size_t r = 0; r < N; ++r)
    for (size_t c = 0; c < N; ++c)
      for (size_t k = 0; k < N; ++k) p[r][c] += a[r][k] * b[k][c];
  return p;
}

// The determinant by Gaussian elimination with partial pivoting: another
// algorithm than the kernel's cofactor expansion.
template <size_t N>
double determinant_by_elimination(Square<N> a) {
  double det = 1.0;
  for (size_t col = 0; col < N; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < N; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    if (a[pivot][col] == 0.0) return 0.0;
    if (pivot != col) {
      std::swap(a[pivot], a[col]);
      det = -det;
    }
    det *= a[col][col];
    for (size_t r = col + 1; r < N; ++r) {
      const double f = a[r][col] / a[col][col];
      for (size_t c = col; c < N; ++c) a[r][c] -= f * a[col][c];
    }
  }
  return det;
}

// Reads element `e` of an n x n matrix field.
template <size_t N>
Square<N> read_matrix(const Field& m, int e) {
  Square<N> out{};
  for (size_t r = 0; r < N; ++r)
    for (size_t c = 0; c < N; ++c) out[r][c] = m[static_cast<int>(r * N + c)].read<double>({e});
  return out;
}

template <size_t N>
void write_matrix(const Field& m, int e, const Square<N>& v) {
  for (size_t r = 0; r < N; ++r)
    for (size_t c = 0; c < N; ++c) m[static_cast<int>(r * N + c)].write({e}, v[r][c]);
}

// What polar_decompose and svd give for each matrix of `fs`, in `type`.
template <size_t N>
struct Decomposed {
  Square<N> R, S, U, V;
  std::array<double, N> sigma;
};
template <size_t N>
std::vector<Decomposed<N>> decompose(const Config& config, DataType type, const std::vector<Square<N>>& fs) {
  const int n = static_cast<int>(fs.size()), d = static_cast<int>(N);
  Program prog(config);
  Field F = prog.matrix_field(d, d, type, "F", {n});
  Field R = prog.matrix_field(d, d, type, "R", {n}), S = prog.matrix_field(d, d, type, "S", {n});
  Field U = prog.matrix_field(d, d, type, "U", {n}), V = prog.matrix_field(d, d, type, "V", {n});
  Field sigma = prog.vector_field(d, type, "sigma", {n});
  for (int e = 0; e < n; ++e) write_matrix(F, e, fs[static_cast<size_t>(e)]);
  Kernel k = prog.kernel("decompose", [&] {
    for_range(0, n, [&](Expr e) {
      const Polar p = polar_decompose(F(e).mat());
      R(e) = p.R;
      S(e) = p.S;
      const Svd sv = svd(F(e).mat());
      U(e) = sv.U;
      sigma(e) = sv.sigma;
      V(e) = sv.V;
    });
  });
  k();
  std::vector<Decomposed<N>> out(fs.size());
  for (int e = 0; e < n; ++e) {
    Decomposed<N>& o = out[static_cast<size_t>(e)];
    o.R = read_matrix<N>(R, e);
    o.S = read_matrix<N>(S, e);
    o.U = read_matrix<N>(U, e);
    o.V = read_matrix<N>(V, e);
    for (int i = 0; i < d; ++i) o.sigma[static_cast<size_t>(i)] = sigma[i].read<double>({e});
  }
  return out;
}

TEST_P(Matrices, ProductsTransposeTraceDeterminantAndInverse) {
  constexpr int kCount = 3;
  const std::vector<Square<3>> as{
      {{{2, -1, 0.5}, {1, 3, -2}, {0.25, 4, 1}}}, {{{1, 0, 0}, {0, 2, 0}, {0, 0, 4}}}, {{{-3, 1, 2}, {5, -1, 0}, {1, 1, 1}}}};
  const std::vector<Square<3>> bs{
      {{{1, 2, 3}, {4, 5, 6}, {7, 8, 10}}}, {{{0, 1, 0}, {1, 0, 0}, {0, 0, 1}}}, {{{0.5, -2, 1}, {3, 0, -1}, {2, 2, 2}}}};
  Program prog(config());
  Field a = prog.matrix_field(3, 3, f64, "a", {kCount});
  Field bm = prog.matrix_field(3, 3, f64, "b", {kCount});
  Field p = prog.matrix_field(3, 3, f64, "p", {kCount});
  Field t = prog.matrix_field(3, 3, f64, "t", {kCount});
  Field inv = prog.matrix_field(3, 3, f64, "inv", {kCount});
  Field tr = prog.field(f64, "tr", {kCount});
  Field det = prog.field(f64, "det", {kCount});
  Field mv = prog.vector_field(3, f64, "mv", {kCount});
  for (int e = 0; e < kCount; ++e) {
    write_matrix(a, e, as[static_cast<size_t>(e)]);
    write_matrix(bm, e, bs[static_cast<size_t>(e)]);
  }
  Kernel k = prog.kernel("algebra", [&] {
    for_range(0, kCount, [&](Expr e) {
      const Mat A = a(e).mat(), B = bm(e).mat();
      p(e) = A * B;
      t(e) = transpose(A);
      inv(e) = inverse(A);
      tr(e) = trace(A);
      det(e) = determinant(A);
      mv(e) = A * Vec{Expr(1.0), Expr(-2.0), Expr(0.5)};
    });
  });
  k();
  for (int e = 0; e < kCount; ++e) {
    const Square<3>& A = as[static_cast<size_t>(e)];
    const Square<3> want = product(A, bs[static_cast<size_t>(e)]);
    const Square<3> got = read_matrix<3>(p, e), tt = read_matrix<3>(t, e), ii = read_matrix<3>(inv, e);
    const Square<3> identity = product(A, ii);
    for (size_t r = 0; r < 3; ++r)
      for (size_t c = 0; c < 3; ++c) {
        EXPECT_NEAR(got[r][c], want[r][c], 1e-12) << e << " " << r << c;
        EXPECT_EQ(tt[r][c], A[c][r]) << e << " " << r << c;
        EXPECT_NEAR(identity[r][c], r == c ? 1.0 : 0.0, 1e-12) << e << " " << r << c;
      }
    EXPECT_EQ(tr.read<double>({e}), A[0][0] + A[1][1] + A[2][2]);
    EXPECT_NEAR(det.read<double>({e}), determinant_by_elimination<3>(A), 1e-12);
    const double v[3] = {1.0, -2.0, 0.5};
    for (int r = 0; r < 3; ++r)
      EXPECT_NEAR(mv[r].read<double>({e}), A[static_cast<size_t>(r)][0] * v[0] + A[static_cast<size_t>(r)][1] * v[1] +
                                                  A[static_cast<size_t>(r)][2] * v[2], 1e-12);
  }
}

// 4 x 4 integer matrices: the cofactor expansion is exact, and so is the
// elimination of these small values in doubles.
TEST_P(Matrices, FourByFourDeterminantsOfIntegers) {
  const std::vector<Square<4>> ms{{{{2, -1, 0, 3}, {1, 3, -2, 1}, {0, 4, 1, -1}, {5, 0, 2, 2}}},
                                  {{{1, 2, 3, 4}, {2, 4, 6, 8}, {0, 1, 0, 1}, {3, 3, 3, 3}}},
                                  {{{-1, 7, 2, 0}, {3, 0, -5, 1}, {2, 2, 2, -4}, {0, 1, 1, 6}}}};
  Program prog(config());
  Field m = prog.matrix_field(4, 4, i32, "m", {3});
  Field det = prog.field(i32, "det", {3});
  for (int e = 0; e < 3; ++e)
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c)
        m[r * 4 + c].write({e}, static_cast<int32_t>(ms[static_cast<size_t>(e)][static_cast<size_t>(r)][static_cast<size_t>(c)]));
  Kernel k = prog.kernel("det4", [&] { for_range(0, 3, [&](Expr e) { det(e) = determinant(m(e).mat()); }); });
  k();
  for (int e = 0; e < 3; ++e)
    EXPECT_EQ(det.read<int32_t>({e}), static_cast<int32_t>(std::lround(determinant_by_elimination<4>(ms[static_cast<size_t>(e)]))));
}

// Polar decomposition and SVD of 2 x 2 matrices, checked by what defines
// them: R, U and V rotations, S symmetric, R S = F, U diag(sigma) V^T = F,
// sigma in decreasing order. Among the inputs: a reflection (det < 0), a
// diagonal matrix, a near-diagonal one and a rotation.
TEST_P(Matrices, PolarDecompositionAndSvdOfTwoByTwo) {
  const std::vector<Square<2>> fs{{{{1.2, 0.3}, {-0.4, 0.9}}},  {{{0.5, 2.0}, {1.5, -0.7}}},
                                  {{{2.0, 0.0}, {0.0, 0.5}}},   {{{0.5, 1e-7}, {0.0, 2.0}}},
                                  {{{0.0, -1.0}, {1.0, 0.0}}},  {{{1.0, 0.2}, {0.2, 1.0}}}};
  const int n = static_cast<int>(fs.size());
  for (DataType type : {f32, f64}) {
    SCOPED_TRACE(type_name(type));
    const double tol = type == f32 ? 2e-4 : f64_tolerance();
    const std::vector<Decomposed<2>> got = decompose<2>(config(), type, fs);
    for (int e = 0; e < n; ++e) {
      SCOPED_TRACE(e);
      const Square<2>& f = fs[static_cast<size_t>(e)];
      const Decomposed<2>& g = got[static_cast<size_t>(e)];
      const Square<2>&r = g.R, &s = g.S, &u = g.U, &v = g.V;
      const double s0 = g.sigma[0], s1 = g.sigma[1];
      auto rotation = [&](const Square<2>& q) {
        EXPECT_NEAR(q[0][0] * q[0][0] + q[1][0] * q[1][0], 1.0, tol);
        EXPECT_NEAR(q[0][0] * q[0][1] + q[1][0] * q[1][1], 0.0, tol);
        EXPECT_NEAR(q[0][0] * q[1][1] - q[0][1] * q[1][0], 1.0, tol);  // det 1: no reflection
      };
      rotation(r);
      rotation(u);
      rotation(v);
      EXPECT_NEAR(s[0][1], s[1][0], tol);
      const Square<2> rs = product(r, s);
      Square<2> usv{};
      for (size_t i = 0; i < 2; ++i)
        for (size_t j = 0; j < 2; ++j) usv[i][j] = u[i][0] * s0 * v[j][0] + u[i][1] * s1 * v[j][1];
      for (size_t i = 0; i < 2; ++i)
        for (size_t j = 0; j < 2; ++j) {
          EXPECT_NEAR(rs[i][j], f[i][j], tol) << i << j;
          EXPECT_NEAR(usv[i][j], f[i][j], tol) << i << j;
        }
      EXPECT_GE(s0, s1);
      EXPECT_NEAR(s0 * s1, f[0][0] * f[1][1] - f[0][1] * f[1][0], tol * 4);  // the product of the singular values is det F
    }
  }
}

// An APIC-style scatter: every iteration adds an outer product to one
// matrix element (atomically, per component) and a cross product to a
// vector; small integers in f32, so every sum is exact in any order.
TEST_P(Matrices, OuterProductsAddedToAMatrixFieldAtomically) {
  Program prog(config());
  Field c = prog.matrix_field(2, 3, f32, "c", {1});
  Field w = prog.vector_field(3, f32, "w", {1});
  Kernel k = prog.kernel("scatter", [&] {
    for_range(0, 90, [&](Expr n) {
      const Expr q = cast(f32, n % 3), r = cast(f32, n % 5);
      c(0) += outer(Vec{Expr(1.0f), q}, Vec{r, Expr(1.0f), q - 1.0f});
      w(0) += cross(Vec{q, Expr(1.0f), Expr(0.0f)}, Vec{Expr(0.0f), r, Expr(1.0f)});
    });
  });
  k();
  double want[2][3] = {}, wv[3] = {};
  for (int n = 0; n < 90; ++n) {
    const double q = n % 3, r = n % 5;
    const double a[2] = {1.0, q}, b[3] = {r, 1.0, q - 1.0};
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want[i][j] += a[i] * b[j];
    // (q, 1, 0) x (0, r, 1) = (1, -q, q r)
    wv[0] += 1.0;
    wv[1] += -q;
    wv[2] += q * r;
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(c[i * 3 + j].read<float>({0}), static_cast<float>(want[i][j])) << i << j;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(w[i].read<float>({0}), static_cast<float>(wv[i])) << i;
}

// The 3x3 SVD and polar decomposition (Jacobi sweeps on F^T F, then a QR
// by Givens rotations), checked by what defines them, in f32 and f64.
// Among the inputs: a reflection, a diagonal matrix, one of rank 2, a
// rotation, one with two equal singular values and a general one.
TEST_P(Matrices, PolarDecompositionAndSvdOfThreeByThree) {
  const std::vector<Square<3>> fs{{{{1.2, 0.3, -0.5}, {-0.4, 0.9, 0.2}, {0.1, 0.7, 1.5}}},
                                  {{{0.5, 2.0, 0.0}, {1.5, -0.7, 0.3}, {0.0, 0.4, -1.1}}},
                                  {{{2.0, 0.0, 0.0}, {0.0, 0.5, 0.0}, {0.0, 0.0, 3.0}}},
                                  {{{1.0, 2.0, 3.0}, {2.0, 4.0, 6.0}, {1.0, 0.0, 1.0}}},
                                  {{{0.0, -1.0, 0.0}, {1.0, 0.0, 0.0}, {0.0, 0.0, 1.0}}},
                                  {{{2.0, 0.0, 0.0}, {0.0, 0.0, 2.0}, {0.0, -2.0, 0.0}}},
                                  {{{-1.0, 0.2, 0.1}, {0.3, 1.0, -0.2}, {0.1, 0.1, 1.0}}}};
  const int n = static_cast<int>(fs.size());
  for (DataType type : {f32, f64}) {
    SCOPED_TRACE(type_name(type));
    const double tol = type == f32 ? 5e-4 : std::max(f64_tolerance(), 1e-9);
    const std::vector<Decomposed<3>> got = decompose<3>(config(), type, fs);
    for (int e = 0; e < n; ++e) {
      SCOPED_TRACE(e);
      const Square<3>& f = fs[static_cast<size_t>(e)];
      const Decomposed<3>& g = got[static_cast<size_t>(e)];
      const Square<3>&r = g.R, &s = g.S, &u = g.U, &v = g.V;
      const std::array<double, 3>& sg = g.sigma;
      auto rotation = [&](const Square<3>& q) {
        Square<3> qt{};
        for (size_t i = 0; i < 3; ++i)
          for (size_t j = 0; j < 3; ++j) qt[i][j] = q[j][i];
        const Square<3> id = product(qt, q);
        for (size_t i = 0; i < 3; ++i)
          for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(id[i][j], i == j ? 1.0 : 0.0, tol) << i << j;
        EXPECT_NEAR(determinant_by_elimination<3>(q), 1.0, tol);
      };
      rotation(r);
      rotation(u);
      rotation(v);
      const Square<3> rs = product(r, s);
      for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 3; ++j) {
          EXPECT_NEAR(s[i][j], s[j][i], tol) << i << j;
          EXPECT_NEAR(rs[i][j], f[i][j], tol * 4) << i << j;
          double usv = 0;
          for (size_t m = 0; m < 3; ++m) usv += u[i][m] * sg[m] * v[j][m];
          EXPECT_NEAR(usv, f[i][j], tol * 4) << i << j;
        }
      EXPECT_GE(sg[0] + tol, sg[1]);
      EXPECT_GE(sg[1] + tol, std::fabs(sg[2]));
      EXPECT_NEAR(sg[0] * sg[1] * sg[2], determinant_by_elimination<3>(f), tol * 16);
    }
  }
}

// Vector and matrix variables carry values out of loops and branches: a
// 2x2 product accumulated over a serial loop, and a vector chosen in an if.
TEST_P(Matrices, VectorAndMatrixVariables) {
  Program prog(config());
  Field m = prog.matrix_field(2, 2, i32, "m", {4});
  Field v = prog.vector_field(2, i32, "v", {4});
  Kernel k = prog.kernel("vars", [&] {
    for_range(0, 4, [&](Expr e) {
      Var acc = Mat::identity(2, i32);
      const Mat step{{Expr(1), Expr(1)}, {Expr(0), Expr(1)}};  // adds the row below to the top one
      for_range(0, e + 1, [&](Expr) { acc = acc.mat() * step; });  // nested: a serial loop
      m(e) = acc.mat();
      Var w = Vec{e, -e};
      if_(e % 2 == 1, [&] { w = w.vec() * 10; });
      Var copy = w;  // a new variable holding w's value
      w = Vec{Expr(0), Expr(0)};
      v(e) = copy.vec();
    });
  });
  k();
  for (int e = 0; e < 4; ++e) {
    // step^(e+1) = [[1, e+1], [0, 1]]
    EXPECT_EQ(m[0].read<int32_t>({e}), 1);
    EXPECT_EQ(m[1].read<int32_t>({e}), e + 1);
    EXPECT_EQ(m[2].read<int32_t>({e}), 0);
    EXPECT_EQ(m[3].read<int32_t>({e}), 1);
    const int scale = e % 2 == 1 ? 10 : 1;
    EXPECT_EQ(v[0].read<int32_t>({e}), e * scale);
    EXPECT_EQ(v[1].read<int32_t>({e}), -e * scale);
  }
}

// Component-wise comparisons, select, pow, abs, min and max on Vec; a
// vector field element read into a Var; Exprs declared before their value
// (Expr base[2];), as an MPM port writes them. Small integers and powers of
// two: exact in f32 everywhere.
TEST_P(Matrices, VectorComparisonsSelectMathAndUnassignedExprs) {
  Program prog(config());
  Field v = prog.vector_field(3, f32, "v", {4});
  Field out = prog.vector_field(3, f32, "out", {4});
  Field flags = prog.vector_field(3, i32, "flags", {4});
  for (int e = 0; e < 4; ++e)
    for (int c = 0; c < 3; ++c) v[c].write({e}, static_cast<float>(e - c));  // e - c: -2 .. 3
  Kernel k = prog.kernel("vecmath", [&] {
    for_range(0, 4, [&](Expr e) {
      Var w = v(e);  // a vector variable of the element's 3 components
      const Vec x = w.vec();
      const Vec positive = x > 0.0f;
      Expr base[2];
      base[0] = Expr(2.0f);
      base[1] = base[0] * 2.0f;
      const Vec chosen = select(positive, pow(x, Expr(2.0f)), abs(x) * base[1]);  // x^2 or 4|x|
      out(e) = max(min(chosen, Vec{Expr(8.0f), Expr(8.0f), Expr(8.0f)}), select(e > 2, x, -x));
      const Vec same = x == Vec{Expr(0.0f), Expr(1.0f), Expr(0.0f)};
      for (int c = 0; c < 3; ++c) flags(e)[c] = cast(i32, same[c]) + cast(i32, (x <= Expr(1.0f))[c]) * 10;
    });
  });
  k();
  for (int e = 0; e < 4; ++e)
    for (int c = 0; c < 3; ++c) {
      const float x = static_cast<float>(e - c);
      const float chosen = x > 0 ? x * x : std::fabs(x) * 4.0f;
      const float want = std::max(std::min(chosen, 8.0f), e > 2 ? x : -x);
      EXPECT_EQ(out[c].read<float>({e}), want) << e << c;
      const float target = c == 1 ? 1.0f : 0.0f;
      EXPECT_EQ(flags[c].read<int32_t>({e}), (x == target ? 1 : 0) + (x <= 1.0f ? 10 : 0)) << e << c;
    }
  Kernel bad = prog.kernel("unassigned", [&] {
    Expr never;
    out(0)[0] = never + 1.0f;
  });
  EXPECT_THAT(error_of([&] { bad(); }), AllOf(HasSubstr("kernel 'unassigned'"), HasSubstr("before it was given a value")));
}

TEST_P(Matrices, MistakesNameTheKernelAndTheSizes) {
  Program prog(config());
  Field m = prog.matrix_field(2, 2, f32, "m", {1});
  Field mi = prog.matrix_field(2, 2, i32, "mi", {1});
  auto error_in = [&](const char* name, const std::function<void()>& body) {
    Kernel k = prog.kernel(name, [&] { body(); });
    return error_of([&] { k(); });
  };
  EXPECT_THAT(error_in("product", [&] { m(0) = m(0).mat() * Mat::zeros(3, 3); }),
              AllOf(HasSubstr("kernel 'product'"), HasSubstr("2x2 and a 3x3")));
  EXPECT_THAT(error_in("assign", [&] { m(0) = Mat::identity(3); }),
              AllOf(HasSubstr("kernel 'assign'"), HasSubstr("field 'm' is 2x2"), HasSubstr("3x3")));
  EXPECT_THAT(error_in("det5", [&] { m(0)(0, 0) = determinant(Mat::identity(5)); }),
              AllOf(HasSubstr("kernel 'det5'"), HasSubstr("determinant of a 5x5")));
  EXPECT_THAT(error_in("svd4", [&] { (void)svd(Mat::identity(4)); }),
              AllOf(HasSubstr("kernel 'svd4'"), HasSubstr("svd of a 4x4")));
  EXPECT_THAT(error_in("vars", [&] {
                Var v = Vec{Expr(1.0f), Expr(2.0f)};
                v = Mat::identity(3);
              }),
              AllOf(HasSubstr("kernel 'vars'"), HasSubstr("a Var of 2x1 components assigned a 3x3")));
  EXPECT_THAT(error_in("vars2", [&] {
                Var v = Vec{Expr(1.0f), Expr(2.0f)};
                m(0)(0, 0) = Expr(v);
              }),
              AllOf(HasSubstr("kernel 'vars2'"), HasSubstr("read it with vec()")));
  EXPECT_THAT(error_in("svdi", [&] { (void)svd(mi(0).mat()); }),
              AllOf(HasSubstr("kernel 'svdi'"), HasSubstr("float matrices")));
  EXPECT_THAT(error_in("big", [&] { (void)Mat::zeros(9, 9); }), AllOf(HasSubstr("kernel 'big'"), HasSubstr("at most 64")));
  EXPECT_THAT(error_in("ragged", [&] { (void)Mat{{Expr(1.0f), Expr(2.0f)}, {Expr(3.0f)}}; }),
              AllOf(HasSubstr("kernel 'ragged'"), HasSubstr("one length")));
  EXPECT_THAT(error_in("at", [&] { (void)Mat::identity(2)(2, 0); }), AllOf(HasSubstr("kernel 'at'"), HasSubstr("(2, 0)")));
  // The Program goes on.
  Kernel ok = prog.kernel("ok", [&] { m(0) = Mat::identity(2, f32) * Expr(3.0f); });
  ok();
  EXPECT_EQ(m[0].read<float>({0}), 3.0f);
  EXPECT_EQ(m[1].read<float>({0}), 0.0f);
}

}  // namespace
