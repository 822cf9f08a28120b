// src/ir/printer.h — the textual form of docs/ir.md ("Textual form").
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"

namespace grove::ir {

// The kernel alone (no field declarations), numbered from %0.
std::string print_kernel(const Kernel& kernel);
// Declarations of every field the kernels use (in id order), then the kernels.
std::string print_module(const std::vector<const Kernel*>& kernels);
// One statement of `kernel` on one line, numbered as print_kernel numbers it
// (operands that are not in the kernel print as `%?`); a statement with blocks
// prints its header and `{ ... }`. For diagnostics such as the verifier's.
std::string print_stmt(const Kernel& kernel, const Stmt* stmt);
// One statement of `kernel` without numbering the kernel: every value it
// uses or defines prints as `%?` and its blocks as `{ ... }`, leaving its
// kind, type and attributes (a key of its shape, whose operands the
// caller compares its own way).
std::string print_shape(const Kernel& kernel, const Stmt* stmt);

}  // namespace grove::ir
