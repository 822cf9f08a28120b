// src/ir/passes/legalize.h — the one place where the meaning of an
// operation a target cannot compute as docs/ir.md defines it is written out:
// a lowered kernel becomes primitive statements a code generator translates
// one for one (docs/ir.md, "Legalization").
#pragma once

#include <memory>

#include "ir/ir.h"

namespace grove::ir {

// What a code generator's target computes natively, exactly as docs/ir.md
// defines it. Everything else, legalize writes in primitives. Each target
// describes itself beside its code generator (spirv::target_ops,
// llvm_backend::target_ops); the interpreter has everything and is never
// legalized.
struct TargetOps {
  // unary round (half away from zero) on floats (LLVM's llvm.round).
  bool float_round = false;
  // binary pow on floats with C99's special cases (libm's, libdevice's
  // pow). Without it, `pow` at stage legal is the target's pow of a base
  // x > 0, and legalize writes the cases of zero, negative and infinite
  // bases, infinite exponents and NaN around it.
  bool float_pow = false;
  // tree_load and tree_store of f16 storage, converting with round to
  // nearest even. Without it they become u16 words and the conversion in
  // integer arithmetic.
  bool f16_storage = false;
  // f32 exp, log, sin, cos, tan, asin, acos, atan, tanh and atan2 within
  // 1-2 ulp of libm. Without it, legalize writes Cephes' single-precision
  // algorithms (within 3 ulp); sin, cos and tan of |x| > 8192 stay the
  // target's own.
  bool float_math = false;
  // The same functions and pow on f64, with f64's precision. Without it,
  // they are computed in f32 (the f32 forms above): exp, log, atan2 and pow
  // keep f64's range, the odd functions return tiny arguments unchanged.
  bool f64_math = false;
  // Float `mod` as C's fmod, exactly. Without it, legalize writes musl's
  // long division of the mantissas (a loop, a bit a step) in integers of
  // the float's width: for f64 only where the target has `int64`, else f64
  // `mod` stays the target's (SPIR-V's OpFRem, which is x - y * trunc(x / y)
  // on some drivers: inexact).
  bool exact_fmod = false;
  // 64-bit integer arithmetic (Vulkan: shaderInt64), for what legalize
  // writes with it.
  bool int64 = false;
};

// Rewrites `kernel` (stage lowered) for `target`, which moves it to stage
// legal. Always, whatever the target: integer division and modulo guarded
// against 0 and MIN / -1, shift counts taken modulo the width, float to
// integer casts saturating (NaN -> 0), integer pow by squaring (unrolled),
// min and max as selects of a comparison, u1 arithmetic and casts from and
// to u1 as logic, rsqrt as 1 / sqrt, integer abs as a select, and float
// atomic min and max as compare-and-swap loops. After it, the primitives
// keep these preconditions (the interpreter checks them on legal kernels):
// integer div and mod see a divisor that is not 0 and not -1 under a MIN
// dividend (mod: not -1 for signed types); shl and shr a count below the
// width; a float to integer cast a value whose truncation fits the type.
void legalize(Kernel& kernel, const TargetOps& target);

// For a code generator's entry point: `kernel` itself when it is legal (the
// program's pipeline legalized it), else a legalized copy kept in `copy`
// (a lowered kernel from a test or a dump).
const Kernel& legal_form(const Kernel& kernel, const TargetOps& target, std::unique_ptr<Kernel>& copy);

}  // namespace grove::ir
