// src/ir/passes/legalize_math.cpp — the math functions a target cannot
// compute to docs/ir.md's precision, written in primitive statements.
//
// f32: the Cephes single-precision algorithms (within 3 ulp of libm), so
// that every device computes the same values, close to the interpreter's.
// Vulkan allows up to 4096 ulp for GLSL.std.450's atan, lavapipe's asin,
// atan, log near 1 and tanh near 0 were hundreds of ulp from libm, and
// NVIDIA's driver 580 gave cos(1.75) and tan(1.75) about 15 ulp away. sin,
// cos and tan are written out for |x| <= 8192 (exact products in the
// argument reduction); beyond, the target's own.
//
// f64 where the target has no f64 forms: computed in f32, keeping f64's
// range: exp as 2^k e^r with r reduced in f64, log as e ln2 + log m,
// atan2 with both arguments scaled by one power of two, pow as exp(y log x).
// No 64-bit integers are used, so a device with f64 but without Int64
// takes them too: powers of two are built from f32 exponents, and an f64's
// exponent is found by halving and doubling.
#include <cmath>
#include <limits>

#include "ir/passes/legalize_emit.h"

namespace grove::ir::legalize_detail {

namespace {

constexpr float kPi = 3.14159265358979323846f;
constexpr float kPiO2 = 1.57079632679489661923f;
constexpr float kPiO4 = 0.785398163397448309616f;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The functions are written as nested expressions: within one, the order
// of the statements made follows the compiler's order of evaluating
// arguments (the meaning does not; the text form of a legalized kernel may
// differ between compilers).
class Math {
 public:
  explicit Math(Emit& e) : e_(e) {}

  // ---- f32 ----
  Stmt* f(float v) { return e_.num(DataType::f32, v); }
  Stmt* i(int64_t v) { return e_.num(DataType::i32, static_cast<double>(v)); }
  Stmt* u(uint64_t v) { return e_.bits(DataType::u32, v); }
  Stmt* add(Stmt* a, Stmt* b) { return e_.add(a, b); }
  Stmt* sub(Stmt* a, Stmt* b) { return e_.sub(a, b); }
  Stmt* mul(Stmt* a, Stmt* b) { return e_.mul(a, b); }
  Stmt* div(Stmt* a, Stmt* b) { return e_.div(a, b); }
  Stmt* sel(Stmt* c, Stmt* a, Stmt* b) { return e_.sel(c, a, b); }
  Stmt* abs(Stmt* x) { return e_.un(UnaryOp::abs, x); }
  Stmt* neg(Stmt* x) { return e_.un(UnaryOp::neg, x); }
  Stmt* is_nan(Stmt* x) { return e_.is_nan(x); }
  Stmt* is_inf(Stmt* x) { return e_.eq(abs(x), e_.num(x->type(), kInf)); }

  // Highest power first.
  Stmt* horner(Stmt* x, std::initializer_list<float> coefficients) {
    Stmt* r = nullptr;
    for (float c : coefficients) r = r == nullptr ? f(c) : add(mul(r, x), f(c));
    return r;
  }
  // 2^k as an f32, for an i32 -126 <= k <= 127.
  Stmt* pow2(Stmt* k) { return e_.bitcast(DataType::f32, e_.shl(add(k, i(127)), 23)); }
  // max(lo, min(x, hi)), NaN -> lo (so that a cast of it keeps its precondition).
  Stmt* clamp(Stmt* x, Stmt* lo, Stmt* hi) {
    Stmt* above = sel(e_.ge(x, lo), x, lo);
    return sel(e_.le(above, hi), above, hi);
  }

  // Cephes expf: x = n ln2 + r, e^r by a polynomial, times 2^n in two steps.
  Stmt* exp(Stmt* x) {
    Stmt* xc = clamp(x, f(-104.0f), f(89.0f));
    Stmt* z = e_.un(UnaryOp::floor, add(mul(f(1.44269504088896341f), xc), f(0.5f)));
    Stmt* r = sub(xc, mul(z, f(0.693359375f)));
    r = sub(r, mul(z, f(-2.12194440e-4f)));
    Stmt* rr = mul(r, r);
    Stmt* p = horner(r, {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                         5.0000001201e-1f});
    Stmt* y = add(add(mul(p, rr), r), f(1.0f));
    Stmt* n = e_.cast(DataType::i32, z);
    Stmt* n1 = e_.shr(n, 1);
    Stmt* n2 = sub(n, n1);
    Stmt* out = mul(mul(y, pow2(n1)), pow2(n2));
    out = sel(e_.bin(BinaryOp::cmp_gt, x, f(88.72283905206835f)), f(static_cast<float>(kInf)), out);
    out = sel(e_.lt(x, f(-103.278929903431851103f)), f(0.0f), out);
    return sel(is_nan(x), x, out);
  }

  // Cephes logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by a polynomial.
  Stmt* log(Stmt* x) {
    Stmt* raw = e_.bitcast(DataType::u32, x);
    Stmt* denormal = e_.land(e_.eq(e_.band_k(raw, 0x7f800000u), u(0)), e_.ne(x, f(0.0f)));
    Stmt* xs = sel(denormal, mul(x, f(8388608.0f)), x);
    Stmt* bits = e_.bitcast(DataType::u32, xs);
    Stmt* ex = e_.bitcast(DataType::i32, e_.band_k(e_.shr(bits, 23), 0xffu));
    ex = sub(ex, i(126));
    ex = sub(ex, sel(denormal, i(23), i(0)));
    Stmt* m = e_.bitcast(DataType::f32, e_.bor_k(e_.band_k(bits, 0x007fffffu), 0x3f000000u));  // [0.5, 1)
    Stmt* small = e_.lt(m, f(0.70710678118654752440f));
    ex = sel(small, sub(ex, i(1)), ex);
    Stmt* xm = sel(small, sub(add(m, m), f(1.0f)), sub(m, f(1.0f)));
    Stmt* z = mul(xm, xm);
    Stmt* p = horner(xm, {7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f,
                          -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f});
    Stmt* y = mul(mul(p, xm), z);
    Stmt* fe = e_.cast(DataType::f32, ex);
    y = add(y, mul(f(-2.12194440e-4f), fe));
    y = add(y, mul(f(-0.5f), z));
    Stmt* r = add(add(xm, y), mul(f(0.693359375f), fe));
    const float inf = std::numeric_limits<float>::infinity();
    r = sel(e_.eq(x, f(inf)), f(inf), r);
    r = sel(e_.lt(x, f(0.0f)), f(std::numeric_limits<float>::quiet_NaN()), r);
    r = sel(e_.eq(x, f(0.0f)), f(-inf), r);
    return sel(is_nan(x), x, r);
  }

  // Cephes's reduction of |x| to [-pi/4, pi/4] for sinf, cosf and tanf: the
  // octant j = floor(|x| 4 / pi), made even, and |x| - j pi/4 in three parts
  // (exact products for |x| up to 8192; larger |x| and NaN reduce 0, whose
  // result is replaced). f64 arguments are reduced in f64 (Cephes' sin.c
  // constants, exact products up to 2^30), so that the f32 polynomials see
  // the reduced argument to f32's precision even next to a zero or a pole.
  struct Octant {
    Stmt* j;     // u32, 0..7
    Stmt* z;     // f32
    Stmt* near;  // u1: |x| within the reduction's range
  };
  Octant reduce_octant(Stmt* a) {
    const bool wide = a->type() == DataType::f64;
    Stmt* near = e_.le(a, wide ? d(0x1p30) : f(8192.0f));  // false for NaN
    a = sel(near, a, e_.zero(a->type()));
    Stmt* j = e_.cast(DataType::u32, mul(a, wide ? d(1.27323954473516268615) : f(1.27323954473516f)));
    j = add(j, e_.band_k(j, 1));
    Stmt* y = e_.cast(a->type(), j);
    Stmt* z;
    if (wide) {
      z = sub(sub(sub(a, mul(y, d(7.85398125648498535156e-1))), mul(y, d(3.77489470793079817668e-8))),
              mul(y, d(2.69515142907905952645e-15)));
      z = to_f32(z);
    } else {
      z = sub(sub(sub(a, mul(y, f(0.78515625f))), mul(y, f(2.4187564849853515625e-4f))),
              mul(y, f(3.77489497744594108e-8f)));
    }
    return {e_.band_k(j, 7), z, near};
  }

  // Cephes sinf and cosf: by octant, the sine or the cosine polynomial of
  // the reduced argument, and its sign; of an f64 x, an f32 result.
  Stmt* sin_cos(Stmt* x, bool cosine) {
    Stmt* a = abs(x);
    const Octant o = reduce_octant(a);
    Stmt* zz = mul(o.z, o.z);
    Stmt* sin_poly = add(mul(mul(horner(zz, {-1.9515295891e-4f, 8.3321608736e-3f, -1.6666654611e-1f}), zz), o.z), o.z);
    Stmt* cos_poly =
        add(sub(mul(mul(horner(zz, {2.443315711809948e-5f, -1.388731625493765e-3f, 4.166664568298827e-2f}), zz), zz),
                mul(f(0.5f), zz)),
            f(1.0f));
    // Octants 2 and 6 (j is even) take the other function's polynomial.
    Stmt* other = e_.eq_k(e_.band_k(e_.add_k(o.j, 1), 2), 2);
    Stmt* r = cosine ? sel(other, sin_poly, cos_poly) : sel(other, cos_poly, sin_poly);
    // The sign: cosine is even and negative in octants 2 and 4; sine is odd
    // (sin(-0) is -0) and negative in octants 4 and 6.
    Stmt* flip;
    if (cosine) {
      flip = e_.eq_k(e_.band_k(e_.add_k(o.j, 2), 4), 4);
    } else {
      Stmt* octant_negative = e_.ne_k(e_.band_k(o.j, 4), 0);
      flip = e_.ne(octant_negative, e_.is_negative(x));
    }
    r = sel(flip, neg(r), r);
    return sel(o.near, r, e_.un(cosine ? UnaryOp::cos : UnaryOp::sin, as_f32(x)));
  }

  // Cephes tanf: the tangent polynomial of the reduced argument, or minus
  // its reciprocal in octants 2 and 6; odd.
  Stmt* tan(Stmt* x) {
    Stmt* a = abs(x);
    const Octant o = reduce_octant(a);
    Stmt* zz = mul(o.z, o.z);
    Stmt* p = horner(zz, {9.38540185543e-3f, 3.11992232697e-3f, 2.44301354525e-2f, 5.34112807005e-2f,
                          1.33387994085e-1f, 3.33331568548e-1f});
    Stmt* t = sel(e_.bin(BinaryOp::cmp_gt, a, e_.num(a->type(), 1.0e-4f)), add(mul(mul(p, zz), o.z), o.z), o.z);
    Stmt* flip = e_.ne_k(e_.band_k(o.j, 2), 0);
    t = sel(flip, div(f(-1.0f), t), t);
    t = sel(e_.is_negative(x), neg(t), t);  // tan(-0) is -0
    return sel(o.near, t, e_.un(UnaryOp::tan, as_f32(x)));
  }

  // Cephes atanf: reduce |x| to [0, tan(pi/8)] around 0, pi/4 or pi/2.
  Stmt* atan(Stmt* x) {
    Stmt* a = abs(x);
    Stmt* big = e_.bin(BinaryOp::cmp_gt, a, f(2.414213562373095f));
    Stmt* mid = e_.bin(BinaryOp::cmp_gt, a, f(0.4142135623730950f));
    Stmt* reduced = sel(big, div(f(-1.0f), a), sel(mid, div(sub(a, f(1.0f)), add(a, f(1.0f))), a));
    Stmt* base = sel(big, f(kPiO2), sel(mid, f(kPiO4), f(0.0f)));
    Stmt* z = mul(reduced, reduced);
    Stmt* p = horner(z, {8.05374449538e-2f, -1.38776856032e-1f, 1.99777106478e-1f, -3.33329491539e-1f});
    Stmt* r = add(base, add(mul(mul(p, z), reduced), reduced));
    return e_.copysign(r, x);
  }

  // atan(y / x) moved to the right quadrant, with std::atan2's signed zeros
  // and infinities.
  Stmt* atan2(Stmt* y, Stmt* x) {
    Stmt* yb = e_.bitcast(DataType::u32, y);
    Stmt* xb = e_.bitcast(DataType::u32, x);
    Stmt* sign_xor = e_.band_k(e_.bin(BinaryOp::bit_xor, yb, xb), 0x80000000u);
    Stmt* ratio = div(y, x);
    Stmt* both_inf = e_.land(is_inf(x), is_inf(y));
    ratio = sel(both_inf, e_.bitcast(DataType::f32, e_.bor_k(sign_xor, 0x3f800000u)), ratio);
    Stmt* both_zero = e_.land(e_.eq(x, f(0.0f)), e_.eq(y, f(0.0f)));
    ratio = sel(both_zero, e_.bitcast(DataType::f32, sign_xor), ratio);
    Stmt* z = atan(ratio);
    Stmt* x_negative = e_.is_negative(x);
    Stmt* shifted = add(e_.copysign(f(kPi), y), z);
    return sel(x_negative, shifted, z);
  }

  // Cephes asinf: near +-1 through asin(x) = pi/2 - 2 asin(sqrt((1 - x) / 2)).
  Stmt* asin(Stmt* x) {
    Stmt* a = abs(x);
    Stmt* large = e_.bin(BinaryOp::cmp_gt, a, f(0.5f));
    Stmt* z_large = mul(f(0.5f), sub(f(1.0f), a));
    Stmt* xx = sel(large, e_.un(UnaryOp::sqrt, z_large), a);
    Stmt* z = sel(large, z_large, mul(a, a));
    Stmt* p = horner(z, {4.2163199048e-2f, 2.4181311049e-2f, 4.5470025998e-2f, 7.4953002686e-2f, 1.6666752422e-1f});
    Stmt* r = add(mul(mul(p, z), xx), xx);
    r = sel(large, sub(f(kPiO2), add(r, r)), r);
    r = sel(e_.lt(a, f(1.0e-4f)), a, r);
    r = sel(e_.bin(BinaryOp::cmp_gt, a, f(1.0f)), f(std::numeric_limits<float>::quiet_NaN()), r);
    r = sel(is_nan(x), x, r);
    return e_.copysign(r, x);
  }

  // Cephes acosf, through asin of the half angle away from 0.
  Stmt* acos(Stmt* x) {
    Stmt* negative = e_.lt(x, f(-0.5f));
    Stmt* positive = e_.bin(BinaryOp::cmp_gt, x, f(0.5f));
    Stmt* half = e_.un(UnaryOp::sqrt, mul(f(0.5f), add(f(1.0f), sel(negative, x, neg(x)))));
    Stmt* s = asin(sel(e_.lor(negative, positive), half, x));
    Stmt* twice = add(s, s);
    Stmt* r = sel(negative, sub(f(kPi), twice), sel(positive, twice, sub(f(kPiO2), s)));
    return sel(is_nan(x), x, r);
  }

  // Cephes tanhf: a polynomial below 0.625, else 1 - 2 / (e^{2|x|} + 1).
  Stmt* tanh(Stmt* x) {
    Stmt* a = abs(x);
    Stmt* s = exp(add(a, a));
    Stmt* far = sub(f(1.0f), div(f(2.0f), add(s, f(1.0f))));
    Stmt* sq = mul(x, x);
    Stmt* p = horner(sq, {-5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f,
                          -3.33332819422e-1f});
    Stmt* near = e_.copysign(add(mul(mul(p, sq), x), x), x);  // tanh(-0) = -0
    return sel(e_.ge(a, f(0.625f)), e_.copysign(far, x), near);
  }

  Stmt* f32_unary(UnaryOp op, Stmt* x) {
    switch (op) {
      case UnaryOp::exp: return exp(x);
      case UnaryOp::log: return log(x);
      case UnaryOp::sin: return sin_cos(x, false);
      case UnaryOp::cos: return sin_cos(x, true);
      case UnaryOp::tan: return tan(x);
      case UnaryOp::asin: return asin(x);
      case UnaryOp::acos: return acos(x);
      case UnaryOp::atan: return atan(x);
      case UnaryOp::tanh: return tanh(x);
      default: return nullptr;
    }
  }

  // ---- f64 through f32 ----
  Stmt* d(double v) { return e_.num(DataType::f64, v); }
  Stmt* to_f32(Stmt* x) { return e_.cast(DataType::f32, x); }
  Stmt* to_f64(Stmt* x) { return e_.cast(DataType::f64, x); }
  Stmt* as_f32(Stmt* x) { return x->type() == DataType::f32 ? x : to_f32(x); }

  // 2^m as an f64, exactly, for an i32 |m| <= 550: (2^q)^5 2^r with m = 5q + r.
  Stmt* pow2_f64(Stmt* m) {
    Stmt* q = e_.div(m, i(5));
    Stmt* r = sub(m, mul(q, i(5)));
    Stmt* pq = to_f64(pow2(q));
    Stmt* p = mul(mul(mul(mul(pq, pq), pq), pq), pq);
    return mul(p, to_f64(pow2(r)));
  }
  // v 2^n for an i32 |n| <= 1100, in two steps so that the result rounds
  // once even where it is subnormal.
  Stmt* ldexp(Stmt* v, Stmt* n) {
    Stmt* n1 = e_.shr(n, 1);
    return mul(mul(v, pow2_f64(n1)), pow2_f64(sub(n, n1)));
  }
  // frexp of a positive finite f64 v: m in [0.5, 1) and the i32 e with
  // v = m 2^e, by multiplying with powers of two (each exact); a subnormal
  // v is scaled by 2^54 first. For 0, infinities and NaN, unspecified.
  struct Frexp {
    Stmt* m;
    Stmt* e;
  };
  Frexp frexp(Stmt* v) {
    Stmt* subnormal = e_.lt(v, d(2.2250738585072014e-308));
    Stmt* w = sel(subnormal, mul(v, d(0x1p54)), v);
    Stmt* ex = sel(subnormal, i(-54), i(0));
    for (int k = 512; k >= 1; k /= 2) {  // down into [1, 2^1024) ... [1, 2)
      Stmt* big = e_.ge(w, d(std::ldexp(1.0, k)));
      w = sel(big, mul(w, d(std::ldexp(1.0, -k))), w);
      ex = sel(big, add(ex, i(k)), ex);
    }
    for (int k = 512; k >= 1; k /= 2) {  // up into [1, 2)
      Stmt* small = e_.lt(w, d(std::ldexp(1.0, 1 - k)));
      w = sel(small, mul(w, d(std::ldexp(1.0, k))), w);
      ex = sel(small, sub(ex, i(k)), ex);
    }
    return {mul(w, d(0.5)), add(ex, i(1))};
  }

  // e^x = 2^k e^r with r = x - k ln2 in f64 (|r| <= ln2 / 2), e^r in f32.
  Stmt* f64_exp(Stmt* x) {
    Stmt* xc = clamp(x, d(-760.0), d(720.0));
    Stmt* k = e_.un(UnaryOp::floor, add(mul(xc, d(1.4426950408889634)), d(0.5)));
    Stmt* r = sub(xc, mul(k, d(6.93147180369123816490e-01)));
    r = sub(r, mul(k, d(1.90821492927058770002e-10)));
    Stmt* ex = to_f64(exp(to_f32(r)));
    Stmt* out = ldexp(ex, e_.cast(DataType::i32, k));
    out = sel(e_.bin(BinaryOp::cmp_gt, x, d(709.782712893384)), d(kInf), out);
    out = sel(e_.lt(x, d(-745.2)), d(0.0), out);
    return sel(is_nan(x), x, out);
  }

  // log x = e ln2 + log m for x = m 2^e, m in [sqrt(1/2), sqrt(2)), log m in f32.
  Stmt* f64_log(Stmt* x) {
    Frexp fr = frexp(x);
    Stmt* small = e_.lt(fr.m, d(0.70710678118654752440));
    Stmt* m = sel(small, add(fr.m, fr.m), fr.m);
    Stmt* ex = sel(small, sub(fr.e, i(1)), fr.e);
    Stmt* lm = to_f64(log(to_f32(m)));
    Stmt* fe = to_f64(ex);
    Stmt* r = add(mul(fe, d(6.93147180369123816490e-01)), add(lm, mul(fe, d(1.90821492927058770002e-10))));
    r = sel(e_.eq(x, d(kInf)), d(kInf), r);
    r = sel(e_.lt(x, d(0.0)), d(kNaN), r);
    r = sel(e_.eq(x, d(0.0)), d(-kInf), r);
    return sel(is_nan(x), x, r);
  }


  // Both arguments scaled by the same power of two into f32's range.
  Stmt* f64_atan2(Stmt* y, Stmt* x) {
    Stmt* ax = abs(x);
    Stmt* ay = abs(y);
    Stmt* big = sel(e_.lt(ax, ay), ay, ax);
    Stmt* finite = e_.land(e_.lt(big, d(kInf)), e_.bin(BinaryOp::cmp_gt, big, d(0.0)));
    Stmt* shift = sel(finite, neg(frexp(big).e), i(0));
    // Against an infinity a finite argument acts as a (signed) zero.
    Stmt* inf_big = is_inf(big);
    auto prepare = [&](Stmt* v) {
      Stmt* zeroed = sel(e_.land(inf_big, e_.lnot(is_inf(v))), e_.copysign(d(0.0), v), v);
      return to_f32(ldexp(zeroed, shift));
    };
    Stmt* ys = prepare(y);
    Stmt* xs = prepare(x);
    Stmt* r = to_f64(atan2(ys, xs));
    return sel(e_.lor(is_nan(x), is_nan(y)), d(kNaN), r);
  }

  Stmt* f64_unary(UnaryOp op, Stmt* x) {
    switch (op) {
      case UnaryOp::exp: return f64_exp(x);
      case UnaryOp::log: return f64_log(x);
      default: break;
    }
    Stmt* r = op == UnaryOp::sin   ? sin_cos(x, false)
              : op == UnaryOp::cos ? sin_cos(x, true)
              : op == UnaryOp::tan ? tan(x)
                                   : f32_unary(op, to_f32(x));
    if (r == nullptr) return nullptr;
    r = to_f64(r);
    // The odd functions return tiny arguments as they are (f32 would flush them).
    if (op == UnaryOp::sin || op == UnaryOp::tan || op == UnaryOp::asin || op == UnaryOp::atan ||
        op == UnaryOp::tanh)
      r = sel(e_.lt(abs(x), d(1e-4)), x, r);
    return r;
  }

 private:
  Emit& e_;
};

bool is_math(UnaryOp op) {
  switch (op) {
    case UnaryOp::exp: case UnaryOp::log: case UnaryOp::sin: case UnaryOp::cos: case UnaryOp::tan:
    case UnaryOp::asin: case UnaryOp::acos: case UnaryOp::atan: case UnaryOp::tanh: return true;
    default: return false;
  }
}

}  // namespace

Stmt* math_unary(Emit& e, UnaryOp op, Stmt* x, const TargetOps& target) {
  if (!is_math(op)) return nullptr;
  Math m(e);
  if (x->type() == DataType::f32) return target.float_math ? nullptr : m.f32_unary(op, x);
  if (x->type() == DataType::f64) return target.f64_math ? nullptr : m.f64_unary(op, x);
  return nullptr;
}

Stmt* math_atan2(Emit& e, Stmt* y, Stmt* x, const TargetOps& target) {
  Math m(e);
  if (x->type() == DataType::f32) return target.float_math ? nullptr : m.atan2(y, x);
  if (x->type() == DataType::f64) return target.f64_math ? nullptr : m.f64_atan2(y, x);
  return nullptr;
}

Stmt* math_pow_core(Emit& e, Stmt* x, Stmt* y, const TargetOps& target) {
  if (x->type() != DataType::f64 || target.f64_math) return nullptr;
  Math m(e);
  return m.f64_exp(e.mul(y, m.f64_log(x)));
}

}  // namespace grove::ir::legalize_detail
