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

}  // namespace grove::ir
