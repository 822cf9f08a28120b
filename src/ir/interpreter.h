// src/ir/interpreter.h — the reference interpreter: executes a kernel's IR
// directly, at any stage. It is the oracle every backend is tested against.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ir/snode.h"
#include "runtime/core/scalar.h"

namespace grove::ir {

// What a running kernel sees: the program's trees and where `print` goes.
struct InterpreterEnv {
  const SNodeForest* snodes = nullptr;
  // The words of the instance a statement works on: of tree `tree` (its
  // type), through the kernel's tree parameter `tree_param` (-1: the tree's
  // own instance, or the scratch buffer).
  std::function<std::span<uint32_t>(int tree, int tree_param)> buffer;
  bool debug = false;  // bounds-check every field access
  std::function<void(std::string_view)> print;
  // Offloaded kernels: asked before each task with its index; a task is
  // skipped when it answers false (the list scheduler). Null: run all.
  std::function<bool(size_t task)> run_task;
  // Told each task that ran and how long it took on the host's clock
  // (profiling); null: tasks are not timed.
  std::function<void(size_t task, double seconds)> task_time;
};

// A kernel prepared for repeated execution. Parallel loops run serially in
// index order (one valid schedule); atomics are therefore exact.
class Interpreter {
 public:
  explicit Interpreter(const Kernel& kernel);
  ~Interpreter();
  // `args` are bit patterns of the kernel's argument types. User errors
  // (debug-mode bounds violations) raise grove::Error naming the kernel.
  void run(std::span<const uint64_t> args, InterpreterEnv& env) const;

  struct Impl;  // the prepared form (interpreter.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

// Element storage and print formatting: runtime/core/scalar.h.
using rt::format_print;
using rt::load_element;
using rt::store_element;

}  // namespace grove::ir
