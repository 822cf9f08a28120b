// src/ir/passes/legalize.cpp — docs/ir.md's meaning of each operation a
// target lacks, written once in primitive statements (legalize.h). The
// interpreter's arithmetic (eval.cpp) is the definition; every lowering
// here computes the same bits, which tests/ir/legalize_test.cpp checks by
// interpreting kernels before and after (the math functions, written in
// legalize_math.cpp, within the precision docs/ir.md states).
#include "ir/passes/legalize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include "ir/assert.h"
#include "ir/builder.h"
#include "ir/passes/legalize_emit.h"
#include "ir/type_rules.h"
#include "runtime/core/context_records.h"

namespace grove::ir {

namespace {

using legalize_detail::Emit;

DataType unsigned_of(DataType t) {
  switch (bit_width(t)) {
    case 8: return DataType::u8;
    case 16: return DataType::u16;
    case 64: return DataType::u64;
    default: return DataType::u32;
  }
}

// The smallest and largest value of an integer type, as bit patterns of it.
uint64_t min_bits(DataType t) { return is_signed(t) ? uint64_t{1} << (bit_width(t) - 1) : 0; }
uint64_t max_bits(DataType t) {
  const int w = bit_width(t);
  const uint64_t all = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  return is_signed(t) ? all >> 1 : all;
}

class Legalizer {
 public:
  Legalizer(Kernel& kernel, const TargetOps& target) : kernel_(kernel), target_(target) {}

  void run() {
    kernel_.messages.clear();
    block(kernel_.body());
    kernel_.stage = Stage::legal;
  }

 private:
  void block(Block* b) {
    for (size_t i = 0; i < b->size(); ++i) {
      Stmt* s = b->at(i);
      for (size_t n = 0; n < s->operands().size(); ++n)
        if (auto it = replaced_.find(s->operands()[n]); it != replaced_.end()) s->set_operand(n, it->second);
      Builder builder(b, i);
      builder.set_tree_param(s->tree_param());
      Emit e(builder);
      if (Stmt* r = lower(e, s)) {
        replaced_[s] = r;
        i = builder.position();
        // s, which now follows what replaced it, is kept until the pass
        // ends: a statement made later at its address would otherwise be
        // taken for it by replaced_.
        removed_.push_back(b->take(i));
        --i;
        continue;
      }
      for (const auto& inner : s->blocks()) block(inner.get());
    }
  }

  // The value that replaces `s` (built before it with `e`), or nullptr.
  Stmt* lower(Emit& e, Stmt* s) {
    switch (s->kind()) {
      case StmtKind::Unary: return unary(e, s);
      case StmtKind::Binary: return binary(e, s);
      case StmtKind::Cast: return cast(e, s);
      case StmtKind::TreeLoad: return s->storage() == DataType::f16 && !target_.f16_storage ? f16_load(e, s) : nullptr;
      case StmtKind::TreeStore: return s->storage() == DataType::f16 && !target_.f16_storage ? f16_store(e, s) : nullptr;
      case StmtKind::TreeAtomic: return float_min_max_atomic(e, s);
      case StmtKind::Print: return print(e, s);
      case StmtKind::Assert: return assertion(e, s);
      default: return nullptr;
    }
  }

  // std::fmod, exactly (musl's fmod): the mantissas' long division, a bit
  // a step, in unsigned integers of the float's width; special cases
  // selected. The loop runs over the difference of the exponents (up to
  // 277 steps for f32, 2098 for f64).
  Stmt* float_mod(Emit& e, Stmt* x, Stmt* y) {
    const DataType t = x->type();
    const bool wide = t == DataType::f64;
    const DataType u = wide ? DataType::u64 : DataType::u32, si = wide ? DataType::i64 : DataType::i32;
    const int width = wide ? 64 : 32;
    const int mantissa_bits = wide ? 52 : 23;
    const uint64_t exp_mask = wide ? 0x7ff : 0xff;
    const uint64_t implicit = uint64_t{1} << mantissa_bits;
    Builder& b = e.builder();
    auto k = [&](Emit& at, uint64_t v) { return at.bits(u, v); };
    // The highest set bit of v (v != 0).
    auto msb = [&](Emit& at, Stmt* v) {
      Stmt* top = k(at, static_cast<uint64_t>(width - 1));
      Stmt* zeros = at.un(UnaryOp::clz, v);
      return at.sub(top, zeros);
    };
    Stmt* ux = e.bitcast(u, x);
    Stmt* uy = e.bitcast(u, y);
    Stmt* ex = e.band_k(e.shr(ux, mantissa_bits), exp_mask);
    Stmt* ey = e.band_k(e.shr(uy, mantissa_bits), exp_mask);
    Stmt* sx = e.band_k(ux, uint64_t{1} << (width - 1));
    Stmt* ax = e.shl(ux, 1);
    Stmt* ay = e.shl(uy, 1);
    Stmt* y_zero = e.eq_k(ay, 0);
    Stmt* y_nan = e.is_nan(y);
    Stmt* x_special = e.eq_k(ex, exp_mask);
    Stmt* nan = e.lor(e.lor(y_zero, y_nan), x_special);
    Stmt* small = e.le(ax, ay);  // |x| <= |y|
    Stmt* equal = e.eq(ax, ay);
    // Mantissas with the implicit bit; subnormals normalised (an exponent
    // below 1, as u's bits).
    auto normalise = [&](Stmt* bits, Stmt* exp, Stmt** mant, Stmt** scaled) {
      Stmt* frac = e.band_k(bits, implicit - 1);
      Stmt* sub = e.eq_k(exp, 0);
      Stmt* top = msb(e, e.bor_k(frac, 1));
      Stmt* shift = e.sub(k(e, static_cast<uint64_t>(mantissa_bits)), top);  // 1..mantissa_bits
      Stmt* up = e.bin(BinaryOp::shl, frac, shift);
      *mant = e.sel(sub, up, e.bor_k(frac, implicit));
      Stmt* below = e.sub(k(e, 1), shift);
      *scaled = e.sel(sub, below, exp);
    };
    Stmt *mx, *nx, *my, *ny;
    normalise(ux, ex, &mx, &nx);
    normalise(uy, ey, &my, &ny);
    Stmt* skip = e.lor(nan, small);
    Stmt* m_var = b.alloca_var(u);
    Stmt* e_var = b.alloca_var(u);
    Stmt* zero_var = b.alloca_var(DataType::u1);
    b.local_store(m_var, mx);
    b.local_store(e_var, nx);
    // One subtract step: m - my where that is not negative (0: x is a
    // multiple of y, the result 0).
    auto step = [&](Builder& at) {
      Emit s(at);
      Stmt* m = at.local_load(m_var);
      Stmt* diff = s.sub(m, my);
      Stmt* fits = s.ge(m, my);
      Stmt* exact = s.land(fits, s.eq_k(diff, 0));
      at.local_store(zero_var, s.lor(at.local_load(zero_var), exact));
      return s.sel(fits, diff, m);
    };
    Stmt* loop = b.while_loop();
    {
      Builder in(loop->body());
      Emit ie(in);
      Stmt* going = ie.lnot(ie.lor(skip, in.local_load(zero_var)));
      Stmt* ev = ie.bitcast(si, in.local_load(e_var));
      Stmt* above = ie.bin(BinaryOp::cmp_gt, ev, ie.bitcast(si, ny));
      Stmt* done = in.if_stmt(ie.lnot(ie.land(going, above)));
      Builder(done->then_block()).break_stmt();
      Stmt* m = step(in);
      in.local_store(m_var, ie.shl(m, 1));
      Stmt* one = k(ie, 1);
      in.local_store(e_var, ie.sub(in.local_load(e_var), one));
    }
    Stmt* m = step(b);
    Stmt* zero = b.local_load(zero_var);
    // Renormalised (the implicit bit set again), then the float rebuilt.
    Stmt* top = msb(e, e.bor_k(m, 1));
    Stmt* shift = e.sub(k(e, static_cast<uint64_t>(mantissa_bits)), top);  // 0..mantissa_bits
    Stmt* mn = e.bin(BinaryOp::shl, m, shift);
    Stmt* en = e.sub(b.local_load(e_var), shift);
    Stmt* mantissa = e.sub(mn, k(e, implicit));
    Stmt* normal = e.bor(mantissa, e.shl(en, mantissa_bits));
    Stmt* down = e.sub(k(e, 1), en);
    Stmt* most = k(e, static_cast<uint64_t>(width - 1));
    down = e.sel(e.bin(BinaryOp::cmp_gt, down, most), most, down);
    Stmt* subnormal = e.bin(BinaryOp::shr, mn, down);
    Stmt* signed_en = e.bitcast(si, en);
    Stmt* positive = e.bin(BinaryOp::cmp_gt, signed_en, e.bits(si, 0));
    Stmt* r = e.sel(positive, normal, subnormal);
    r = e.sel(zero, k(e, 0), r);
    Stmt* result = e.bitcast(t, e.bor(r, sx));
    Stmt* signed_zero = e.bitcast(t, sx);
    result = e.sel(small, e.sel(equal, signed_zero, x), result);
    Stmt* qnan = e.num(t, std::numeric_limits<double>::quiet_NaN());
    return e.sel(nan, qnan, result);
  }

  // ---- print and assert: records in the context buffer ----
  // (runtime/core/context_layout.h; docs/ir.md, "Print and assert"). The
  // kernel's messages are numbered in program order; a record carries
  // message_base + the number, which the host's ContextRecords formats.
  // Each value is stored as a tree_store of its own type: its storage
  // bits, in two words for 64-bit values, which sit at even words
  // (print_record_layout).
  uint32_t add_message(const Stmt* s, bool is_assert) {
    rt::MessagePlan m;
    m.id = static_cast<uint32_t>(kernel_.messages.size());
    m.is_assert = is_assert;
    m.format = s->text();
    for (size_t n = is_assert ? 1 : 0; n < s->operands().size(); ++n) m.types.push_back(s->operands()[n]->type());
    kernel_.messages.push_back(std::move(m));
    return kernel_.messages.back().id;
  }
  static Stmt* word(Emit& e, uint32_t w) { return e.bits(DataType::u32, w); }
  static Stmt* message_id(Emit& e, uint32_t number) {
    Stmt* base = e.builder().message_base();
    return e.add(base, word(e, number));
  }

  // One atomic add reserves the record's words; a record that does not
  // fit is dropped and counted.
  Stmt* print(Emit& e, Stmt* s) {
    namespace ctx = rt::context;
    const uint32_t id = add_message(s, false);
    Builder& b = e.builder();
    const DataType u = DataType::u32;
    std::vector<DataType> types;
    for (const Stmt* v : s->operands()) types.push_back(v->type());
    std::vector<uint32_t> offsets;
    Stmt* n = word(e, rt::print_record_layout(types, &offsets));
    Stmt* at = b.tree_atomic(AtomicOp::add, kContextTree, u, word(e, ctx::kPrintHead), n);
    Stmt* capacity = b.tree_load(kContextTree, u, word(e, ctx::kPrintCapacity));
    // at + n <= capacity, without wrapping (made in this order: the
    // statements come in one order whatever the compiler's).
    Stmt* room = e.ge(capacity, n);
    Stmt* left = e.sub(capacity, n);
    Stmt* fits = e.land(room, e.le(at, left));
    Stmt* branch = b.if_stmt(fits);
    Builder w(branch->then_block());
    Emit we(w);
    Stmt* base = we.add(at, word(we, ctx::kHeaderWords));
    w.tree_store(kContextTree, u, base, message_id(we, id));
    for (size_t k = 0; k < s->operands().size(); ++k) {
      Stmt* v = s->operands()[k];
      w.tree_store(kContextTree, v->type(), we.add(base, word(we, offsets[k])), v);
    }
    Builder d(branch->else_block());
    Emit de(d);
    Stmt* one = word(de, 1);
    d.tree_atomic(AtomicOp::add, kContextTree, u, word(de, ctx::kPrintDropped), one);
    return at;  // a print has no value; nothing refers to it
  }

  // A failing assertion claims the context's record (the first one wins),
  // fills it and stops its invocation: what follows it never runs.
  Stmt* assertion(Emit& e, Stmt* s) {
    namespace ctx = rt::context;
    const uint32_t id = add_message(s, true);
    const DataType u = DataType::u32;
    Stmt* check = e.builder().if_stmt(e.lnot(s->cond()));
    check->set_unlikely(true);
    Builder f(check->then_block());
    Emit fe(f);
    static_assert(ctx::kAssertFlag == 0);
    Stmt* zero = word(fe, 0);  // the flag's word, and its value while no assertion failed
    Stmt* claimed = word(fe, 1);
    Stmt* old = f.tree_cas(kContextTree, u, zero, zero, claimed);
    Stmt* first = f.if_stmt(fe.eq(old, zero));
    Builder r(first->then_block());
    Emit re(r);
    Stmt* message = message_id(re, id);
    r.tree_store(kContextTree, u, word(re, ctx::kAssertMessage), message);
    const size_t values = std::min<size_t>(s->operands().size() - 1, ctx::kMaxAssertValues);
    for (size_t k = 0; k < values; ++k) {
      Stmt* v = s->operands()[k + 1];
      r.tree_store(kContextTree, v->type(), word(re, static_cast<uint32_t>(ctx::kAssertValues + 2 * k)), v);
    }
    f.stop();
    return check;
  }

  // ---- unary ----
  Stmt* unary(Emit& e, Stmt* s) {
    Stmt* x = s->operand();
    const DataType t = x->type();
    const UnaryOp op = s->unary_op();
    if (t == DataType::u1) {
      if (op == UnaryOp::logic_not || op == UnaryOp::bit_not) return op == UnaryOp::bit_not ? e.lnot(x) : nullptr;
      return x;  // neg, abs, floor... of a u1: itself
    }
    if (is_float(t)) {
      if (op == UnaryOp::rsqrt) {
        Stmt* one = e.one(t);
        return e.div(one, e.un(UnaryOp::sqrt, x));
      }
      if (op == UnaryOp::round && !target_.float_round) return round(e, x);
      return legalize_detail::math_unary(e, op, x, target_);
    }
    if (op != UnaryOp::abs) return nullptr;
    if (!is_signed(t)) return x;
    Stmt* negative = e.lt(x, e.zero(t));
    Stmt* minus = e.un(UnaryOp::neg, x);
    return e.sel(negative, minus, x);
  }

  // std::round: half away from zero. x - trunc(x) is exact, so the test is too.
  Stmt* round(Emit& e, Stmt* x) {
    const DataType t = x->type();
    Stmt* t0 = e.trunc(x);
    Stmt* frac = e.un(UnaryOp::abs, e.sub(x, t0));
    Stmt* negative = e.lt(x, e.zero(t));
    Stmt* minus_one = e.num(t, -1);
    Stmt* step = e.sel(negative, minus_one, e.one(t));
    Stmt* away = e.add(t0, step);
    Stmt* half_or_more = e.ge(frac, e.num(t, 0.5));
    return e.sel(half_or_more, away, t0);
  }

  // ---- binary ----
  Stmt* binary(Emit& e, Stmt* s) {
    Stmt* a = s->lhs();
    Stmt* b = s->rhs();
    const DataType t = a->type();
    const BinaryOp op = s->binary_op();
    if (t == DataType::u1) return u1_binary(e, op, a, b);
    switch (op) {
      // b < a ? b : a and a < b ? b : a, the interpreter's (NaN and -0.0 included).
      case BinaryOp::min: return e.sel(e.lt(b, a), b, a);
      case BinaryOp::max: return e.sel(e.lt(a, b), b, a);
      default: break;
    }
    if (is_float(t)) {
      if (op == BinaryOp::pow && (!target_.float_pow || (t == DataType::f64 && !target_.f64_math)))
        return float_pow(e, a, b);
      if (op == BinaryOp::mod && !target_.exact_fmod && (t == DataType::f32 || target_.int64))
        return float_mod(e, a, b);
      if (op == BinaryOp::atan2) return legalize_detail::math_atan2(e, a, b, target_);
      return nullptr;
    }
    switch (op) {
      case BinaryOp::div: case BinaryOp::mod: return guarded_division(e, op, a, b);
      case BinaryOp::shl: case BinaryOp::shr: return masked_shift(e, op, a, b);
      case BinaryOp::pow: return int_pow(e, a, b);
      default: return nullptr;
    }
  }

  // u1 arithmetic as logic (eval.cpp's bool cases); comparisons other than
  // equality as logic too, so that no target orders booleans.
  Stmt* u1_binary(Emit& e, BinaryOp op, Stmt* a, Stmt* b) {
    switch (op) {
      case BinaryOp::add: case BinaryOp::sub: case BinaryOp::bit_xor: return e.ne(a, b);
      case BinaryOp::mul: case BinaryOp::bit_and: case BinaryOp::min: case BinaryOp::div: return e.land(a, b);
      case BinaryOp::bit_or: case BinaryOp::max: return e.lor(a, b);
      case BinaryOp::mod: return e.zero(DataType::u1);
      case BinaryOp::pow: return e.lor(a, e.lnot(b));
      case BinaryOp::shl: case BinaryOp::shr: return a;  // the count modulo 1 is 0
      case BinaryOp::cmp_lt: return e.land(e.lnot(a), b);
      case BinaryOp::cmp_le: return e.lor(e.lnot(a), b);
      case BinaryOp::cmp_gt: return e.land(a, e.lnot(b));
      case BinaryOp::cmp_ge: return e.lor(a, e.lnot(b));
      default: return nullptr;  // cmp_eq, cmp_ne, logic_and, logic_or: primitives
    }
  }

  // By zero: 0. Signed: MIN / -1 is 0, and anything % -1 is 0.
  Stmt* guarded_division(Emit& e, BinaryOp op, Stmt* a, Stmt* b) {
    const DataType t = a->type();
    const bool s = is_signed(t);
    if (b->is_const()) {
      const int64_t d = b->const_int();
      if (d != 0 && !(s && d == -1)) return nullptr;  // a primitive as it is
    }
    Stmt* bad = e.eq(b, e.zero(t));
    if (s) {
      Stmt* minus_one = e.eq(b, e.num(t, -1));
      if (op == BinaryOp::div) minus_one = e.land(minus_one, e.eq_k(a, min_bits(t)));
      bad = e.lor(bad, minus_one);
    }
    Stmt* one = e.one(t);
    Stmt* q = e.bin(op, a, e.sel(bad, one, b));
    return e.sel(bad, e.zero(t), q);
  }

  Stmt* masked_shift(Emit& e, BinaryOp op, Stmt* a, Stmt* b) {
    const int w = bit_width(a->type());
    if (b->is_const() && static_cast<uint64_t>(b->const_int()) < static_cast<uint64_t>(w)) return nullptr;
    return e.bin(op, a, e.band(b, e.num(b->type(), w - 1)));
  }

  // Power by squaring over every bit of the exponent, unrolled (no loop, so
  // that it may stand anywhere a value may); a negative exponent gives 0,
  // but 1 for a == 1 and +-1 for a == -1 (eval.cpp).
  Stmt* int_pow(Emit& e, Stmt* a, Stmt* b) {
    const DataType t = a->type();
    const int w = bit_width(t);
    Stmt* result = e.one(t);
    Stmt* base = a;
    if (b->is_const() && (!is_signed(t) || b->const_int() >= 0)) {
      bool first = true;
      for (uint64_t n = static_cast<uint64_t>(b->const_int()) & (w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1);
           n != 0; n >>= 1) {
        if (n & 1) result = first ? base : e.mul(result, base);
        first = first && (n & 1) == 0;
        if (n > 1) base = e.mul(base, base);
      }
      return result;
    }
    Stmt* exponent = e.cast(unsigned_of(t), b);
    for (int k = 0; k < w; ++k) {
      Stmt* bit = e.ne_k(e.band_k(exponent, uint64_t{1} << k), 0);
      Stmt* product = e.mul(result, base);
      result = e.sel(bit, product, result);
      if (k + 1 < w) base = e.mul(base, base);
    }
    if (!is_signed(t)) return result;
    Stmt* one = e.one(t);
    Stmt* minus_one = e.num(t, -1);
    Stmt* zero = e.zero(t);
    Stmt* odd = e.ne(e.band(b, one), zero);
    Stmt* of_minus_one = e.sel(odd, minus_one, one);
    Stmt* of_other = e.sel(e.eq(a, minus_one), of_minus_one, zero);
    Stmt* negative = e.sel(e.eq(a, one), one, of_other);
    return e.sel(e.lt(b, zero), negative, result);
  }

  // std::pow's special cases (C99 Annex F) around the target's pow of |x|,
  // which is left undefined for x < 0 and for x = 0 with y <= 0.
  Stmt* float_pow(Emit& e, Stmt* x, Stmt* y) {
    const DataType t = x->type();
    Stmt* zero = e.num(t, 0.0);
    Stmt* one = e.num(t, 1.0);
    Stmt* minus_one = e.num(t, -1.0);
    Stmt* inf = e.num(t, std::numeric_limits<double>::infinity());
    Stmt* nan = e.num(t, std::numeric_limits<double>::quiet_NaN());
    Stmt* ax = e.un(UnaryOp::abs, x);
    Stmt* ay = e.un(UnaryOp::abs, y);
    Stmt* y_int = e.eq(e.trunc(y), y);
    Stmt* half = e.mul(y, e.num(t, 0.5));
    Stmt* y_odd = e.land(y_int, e.ne(e.trunc(half), half));
    Stmt* x_neg = e.lt(x, zero);
    Stmt* y_neg = e.lt(y, zero);
    Stmt* odd_negative = e.land(x_neg, y_odd);
    Stmt* core = legalize_detail::math_pow_core(e, ax, y, target_);
    if (core == nullptr) core = e.bin(BinaryOp::pow, ax, y);
    core = e.sel(odd_negative, e.un(UnaryOp::neg, core), core);
    Stmt* r = e.sel(e.land(x_neg, e.lnot(y_int)), nan, core);  // finite x < 0, non-integer y
    // x = +-inf
    Stmt* inf_r = e.sel(y_neg, zero, inf);
    inf_r = e.sel(odd_negative, e.un(UnaryOp::neg, inf_r), inf_r);
    r = e.sel(e.eq(ax, inf), inf_r, r);
    // y = +-inf
    Stmt* below_one = e.lt(ax, one);
    Stmt* shrinks = e.sel(below_one, inf, zero);
    Stmt* grows = e.sel(below_one, zero, inf);
    Stmt* yinf_r = e.sel(y_neg, shrinks, grows);
    yinf_r = e.sel(e.eq(ax, one), one, yinf_r);
    r = e.sel(e.eq(ay, inf), yinf_r, r);
    // x = +-0
    Stmt* zero_r = e.sel(y_neg, inf, zero);
    zero_r = e.sel(y_odd, e.copysign(zero_r, x), zero_r);
    // (f32's test by its bits: lavapipe's LLVM, seeing `x == 0` choose the
    // copysign of x, took x for +0 there, and pow(-0, -1) came out +inf
    // for one order of the kernel's loads and -inf for the other. It
    // folds `|x| == 0` to `x == 0` as well.)
    Stmt* x_zero = t == DataType::f32 ? e.eq_k(e.band_k(e.bitcast(DataType::u32, x), 0x7fffffff), 0) : e.eq(x, zero);
    r = e.sel(x_zero, zero_r, r);
    r = e.sel(e.eq(y, one), x, r);  // exact, whatever the target's pow does
    // x = -1 and an integer y (finite y beyond f32's range reaches pow as inf
    // where f64 computes in f32).
    Stmt* of_minus_one = e.sel(y_odd, minus_one, one);
    r = e.sel(e.land(e.eq(x, minus_one), y_int), of_minus_one, r);
    // NaN operands, then the two cases that are 1 even for NaN.
    Stmt* x_nan = e.is_nan(x);
    Stmt* any_nan = e.lor(x_nan, e.is_nan(y));
    r = e.sel(any_nan, nan, r);
    Stmt* x_one = e.eq(x, one);
    Stmt* always_one = e.lor(x_one, e.eq(ay, zero));
    return e.sel(always_one, one, r);
  }

  // ---- casts ----
  Stmt* cast(Emit& e, Stmt* s) {
    Stmt* x = s->operand();
    const DataType from = x->type(), to = s->type();
    if (from == to) return nullptr;
    if (to == DataType::u1) return e.ne(x, e.zero(from));  // float: true for NaN, as != is
    if (from == DataType::u1) {
      Stmt* one = e.one(to);
      return e.sel(x, one, e.zero(to));
    }
    if (is_float(from) && !is_float(to)) return saturating_cast(e, x, to);
    return nullptr;
  }

  // Truncation toward zero, saturating out of range, NaN -> 0 (eval.cpp
  // float_to_int, which compares the value as a double: x <= lo, x >= hi).
  Stmt* saturating_cast(Emit& e, Stmt* x, DataType to) {
    const DataType from = x->type();
    const double lo = is_signed(to) ? -std::ldexp(1.0, bit_width(to) - 1) : 0.0;
    const double hi = is_signed(to) ? static_cast<double>(static_cast<int64_t>(max_bits(to)))
                                    : static_cast<double>(max_bits(to));
    double lo_f = lo, hi_f = hi;
    if (from == DataType::f32) {
      // For an f32 x that is x <= (largest float <= lo) and x >= (smallest float >= hi).
      float lf = static_cast<float>(lo), hf = static_cast<float>(hi);
      if (static_cast<double>(lf) > lo) lf = std::nextafter(lf, -std::numeric_limits<float>::infinity());
      if (static_cast<double>(hf) < hi) hf = std::nextafter(hf, std::numeric_limits<float>::infinity());
      lo_f = lf, hi_f = hf;
    }
    Stmt* nan = e.is_nan(x);
    Stmt* low = e.le(x, e.num(from, lo_f));
    Stmt* high = e.ge(x, e.num(from, hi_f));
    Stmt* out = e.lor(e.lor(nan, low), high);
    Stmt* safe = e.sel(out, e.zero(from), x);
    Stmt* r = e.cast(to, safe);
    r = e.sel(high, e.bits(to, max_bits(to)), r);
    r = e.sel(low, e.bits(to, min_bits(to)), r);
    return e.sel(nan, e.zero(to), r);
  }

  // ---- tree memory ----
  // f16 storage as a u16 word, converted in integer arithmetic (ir::f16_to_f32).
  Stmt* f16_load(Emit& e, Stmt* s) {
    Builder& b = e.builder();
    Stmt* h = e.cast(DataType::u32, b.tree_load(s->tree(), DataType::u16, s->address()));
    Stmt* sign = e.shl(e.band_k(h, 0x8000), 16);
    Stmt* exp = e.band_k(e.shr(h, 10), 0x1f);
    Stmt* man = e.band_k(h, 0x3ff);
    Stmt* man_bits = e.shl(man, 13);
    // Normal: the exponent rebiased (15 -> 127); infinities and NaN: all ones.
    Stmt* r = e.bor(e.shl(e.add_k(exp, 112), 23), man_bits);
    Stmt* special = e.bor_k(man_bits, 0x7f800000);
    r = e.sel(e.eq_k(exp, 0x1f), special, r);
    // Zero and subnormal: man * 2^-24, exact in f32.
    Stmt* tiny = e.cast(DataType::f32, man);
    tiny = e.bitcast(DataType::u32, e.mul(tiny, e.num(DataType::f32, 0x1p-24)));
    r = e.sel(e.eq_k(exp, 0), tiny, r);
    return e.bitcast(DataType::f32, e.bor(r, sign));
  }

  // ir::f32_to_f16: round to nearest even, every case computed and the right one selected.
  Stmt* f16_store(Emit& e, Stmt* s) {
    const DataType u = DataType::u32, i = DataType::i32;
    auto round_up = [&](Stmt* half, Stmt* rem, Stmt* mid) {
      Stmt* odd = e.ne_k(e.band_k(half, 1), 0);
      Stmt* above = e.bin(BinaryOp::cmp_gt, rem, mid);
      Stmt* up = e.lor(above, e.land(e.eq(rem, mid), odd));
      Stmt* one = e.bits(u, 1);
      return e.add(half, e.sel(up, one, e.bits(u, 0)));
    };
    auto si = [&](int64_t v) { return e.bits(i, static_cast<uint64_t>(v)); };
    Stmt* x = e.bitcast(u, s->value());
    Stmt* sign = e.band_k(e.shr(x, 16), 0x8000);
    Stmt* exp = e.band_k(e.shr(x, 23), 0xff);
    Stmt* man = e.band_k(x, 0x7fffff);
    // The f16 exponent, exp - 127 + 15, read as signed.
    Stmt* ex = e.bitcast(i, e.sub(exp, e.bits(u, 112)));
    // Normal results: 1 <= ex <= 30.
    Stmt* normal = e.shl(e.bitcast(u, ex), 10);
    normal = e.bor(normal, e.shr(man, 13));
    Stmt* rest = e.band_k(man, 0x1fff);
    normal = round_up(normal, rest, e.bits(u, 0x1000));
    // Subnormal results: -10 <= ex <= 0, shift = 14 - ex in [14, 24] (clamped for the other cases).
    Stmt* fourteen = si(14);
    Stmt* twenty_four = si(24);
    Stmt* shift = e.sub(fourteen, ex);
    shift = e.sel(e.lt(shift, fourteen), fourteen, shift);
    shift = e.bitcast(u, e.sel(e.bin(BinaryOp::cmp_gt, shift, twenty_four), twenty_four, shift));
    Stmt* one = e.bits(u, 1);
    Stmt* full = e.bor_k(man, 0x800000);
    Stmt* sub_half = e.bin(BinaryOp::shr, full, shift);
    Stmt* sub_rem = e.band(full, e.sub(e.bin(BinaryOp::shl, one, shift), one));
    Stmt* sub_mid = e.bin(BinaryOp::shl, one, e.sub(shift, one));
    Stmt* sub = round_up(sub_half, sub_rem, sub_mid);
    Stmt* zero = e.bits(u, 0);
    sub = e.sel(e.lt(ex, si(-10)), zero, sub);
    Stmt* r = e.sel(e.le(ex, si(0)), sub, normal);
    Stmt* infinity = e.bits(u, 0x7c00);
    r = e.sel(e.ge(ex, si(31)), infinity, r);
    Stmt* quiet = e.ne_k(man, 0);
    Stmt* nan_bit = e.sel(quiet, e.bits(u, 0x200), zero);
    Stmt* special = e.bor_k(nan_bit, 0x7c00);
    r = e.sel(e.eq_k(exp, 0xff), special, r);
    Stmt* h = e.cast(DataType::u16, e.bor(sign, r));
    e.builder().tree_store(s->tree(), DataType::u16, s->address(), h);
    return h;  // a tree_store has no value; nothing refers to it
  }

  // Float atomic min and max: a compare-and-swap loop on the value's bits
  // with min and max as the interpreter computes them (no target's float
  // atomics order NaN and -0.0 that way).
  Stmt* float_min_max_atomic(Emit& e, Stmt* s) {
    const DataType t = s->type();
    const AtomicOp op = s->atomic_op();
    if (!is_float(t) || (op != AtomicOp::min && op != AtomicOp::max)) return nullptr;
    Builder& b = e.builder();
    const DataType w = t == DataType::f64 ? DataType::u64 : DataType::u32;
    Stmt* v = s->value();
    Stmt* seen = b.alloca_var(w);
    // The first guess: other invocations may change the word meanwhile, so
    // it is read atomically (docs/memory.md), 64 bits at once where the
    // value is 64-bit: a compare-and-swap of that width needs 64-bit
    // atomics anyway.
    b.local_store(seen, b.tree_load(s->tree(), w, s->address(), true));
    Stmt* old = b.alloca_var(t);
    Stmt* loop = b.while_loop();
    {
      Builder in(loop->body());
      in.set_tree_param(s->tree_param());
      Emit ie(in);
      Stmt* expected = in.local_load(seen);
      Stmt* current = ie.bitcast(t, expected);
      Stmt* updated = op == AtomicOp::min ? ie.sel(ie.lt(v, current), v, current) : ie.sel(ie.lt(current, v), v, current);
      Stmt* desired = ie.bitcast(w, updated);
      Stmt* got = in.tree_cas(s->tree(), w, s->address(), expected, desired);
      Stmt* done = in.if_stmt(ie.eq(got, expected));
      Builder then(done->then_block());
      then.local_store(old, current);
      then.break_stmt();
      in.local_store(seen, got);
    }
    return b.local_load(old);
  }

  Kernel& kernel_;
  const TargetOps& target_;
  std::unordered_map<const Stmt*, Stmt*> replaced_;
  std::vector<std::unique_ptr<Stmt>> removed_;
};

}  // namespace

void legalize(Kernel& kernel, const TargetOps& target) {
  GROVE_ASSERT(kernel.stage == Stage::lowered, "legalize needs a lowered kernel");
  Legalizer(kernel, target).run();
}

const Kernel& legal_form(const Kernel& kernel, const TargetOps& target, std::unique_ptr<Kernel>& copy) {
  if (kernel.stage == Stage::legal) return kernel;
  copy = clone_kernel(kernel);
  legalize(*copy, target);
  return *copy;
}

}  // namespace grove::ir
