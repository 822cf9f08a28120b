// src/program/interp_backend.cpp — the reference interpreter as a backend.
#include <iostream>
#include <string>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/interpreter.h"
#include "program/backend.h"

namespace grove::detail {

namespace {

class InterpKernel : public CompiledKernel {
 public:
  explicit InterpKernel(const ir::Kernel& k) : interpreter(k) {}
  ir::Interpreter interpreter;
};

class InterpBackend : public Backend {
 public:
  explicit InterpBackend(const BackendOptions& o) : options_(o) {}
  Arch arch() const override { return Arch::Interp; }
  std::string device_name() const override { return "reference interpreter on the host CPU"; }
  bool synchronous() const override { return true; }

  void create_buffer(int tree, const std::vector<uint32_t>& initial) override {
    if (buffers_.size() <= static_cast<size_t>(tree)) buffers_.resize(static_cast<size_t>(tree) + 1);
    buffers_[static_cast<size_t>(tree)] = initial;
  }
  void read_words(int tree, int64_t offset, int64_t count, uint32_t* out) override {
    const auto& b = buffer(tree, offset, count, "read");
    std::copy(b.begin() + offset, b.begin() + offset + count, out);
  }
  void write_words(int tree, int64_t offset, int64_t count, const uint32_t* in) override {
    auto& b = buffer(tree, offset, count, "write");
    std::copy(in, in + count, b.begin() + offset);
  }
  std::unique_ptr<CompiledKernel> compile(const ir::Kernel& kernel, const ir::SNodeForest& forest,
                                          rt::KernelPlan plan) override {
    forest_ = &forest;
    auto k = std::make_unique<InterpKernel>(kernel);
    plan.backend = "interp";  // the code is the lowered IR the interpreter keeps
    k->plan = std::move(plan);
    return k;
  }
  std::unique_ptr<CompiledKernel> load(rt::KernelPlan plan) override {
    throw Error("kernel '" + plan.name + "': the interpreter runs kernels from their IR, which a plan does not "
                "hold; load plans on a backend whose plans carry code (Vulkan)");
  }
  void launch(CompiledKernel& kernel, std::span<const uint64_t> args, const std::vector<bool>& run) override {
    ir::InterpreterEnv env;
    env.snodes = forest_;
    env.trees = &buffers_;
    env.debug = options_.debug;
    env.print = options_.print ? options_.print : [](std::string_view s) { std::cout << s << std::flush; };
    env.run_task = [&](size_t i) { return i < run.size() ? bool(run[i]) : true; };
    static_cast<InterpKernel&>(kernel).interpreter.run(args, env);
  }
  void sync() override {}

 private:
  // The buffer of `tree`, once [offset, offset + count) is checked to lie
  // inside it (an address outside is a bug in Grove: it must not corrupt
  // the heap).
  std::vector<uint32_t>& buffer(int tree, int64_t offset, int64_t count, const char* what) {
    if (tree < 0 || static_cast<size_t>(tree) >= buffers_.size())
      throw InternalError("interpreter: host " + std::string(what) + " of tree " + std::to_string(tree) +
                          ", which has no buffer");
    auto& b = buffers_[static_cast<size_t>(tree)];
    if (offset < 0 || count < 0 || offset > static_cast<int64_t>(b.size()) - count)
      throw InternalError("interpreter: host " + std::string(what) + " of words [" + std::to_string(offset) +
                          ", " + std::to_string(offset) + " + " + std::to_string(count) + ") of tree " +
                          std::to_string(tree) + ", which has " + std::to_string(b.size()) + " words");
    return b;
  }

  BackendOptions options_;
  const ir::SNodeForest* forest_ = nullptr;
  std::vector<std::vector<uint32_t>> buffers_;
};

}  // namespace

std::unique_ptr<Backend> make_interp_backend(const BackendOptions& options) {
  return std::make_unique<InterpBackend>(options);
}

}  // namespace grove::detail
