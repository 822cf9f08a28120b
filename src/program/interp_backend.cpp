// src/program/interp_backend.cpp — the reference interpreter as a backend:
// a device whose buffers are host vectors and whose kernels are their
// lowered IR, run statement by statement.
#include <iostream>
#include <map>
#include <string>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/interpreter.h"
#include "program/backend.h"

namespace grove::detail {

namespace {

// The plan, and the IR it was made from (the interpreter's code).
class InterpKernel : public rt::LoadedKernel {
 public:
  InterpKernel(const ir::Kernel& k, const ir::SNodeForest& f) : interpreter(k), forest(f) {}
  ir::Interpreter interpreter;
  const ir::SNodeForest& forest;
};

class InterpDevice : public rt::Device {
 public:
  explicit InterpDevice(const BackendOptions& o) : options_(o) {}
  std::string name() const override { return "reference interpreter on the host CPU"; }
  bool synchronous() const override { return true; }

  void create_buffer(int id, int64_t words, std::span<const uint32_t> head) override {
    if (buffers_.size() <= static_cast<size_t>(id)) buffers_.resize(static_cast<size_t>(id) + 1);
    std::vector<uint32_t>& b = buffers_[static_cast<size_t>(id)];
    b.assign(static_cast<size_t>(words), 0u);
    std::copy(head.begin(), head.end(), b.begin());
  }
  void destroy_buffer(int id) override { std::vector<uint32_t>().swap(buffer(id, 0, 0, "destroy")); }
  void read_words(int id, int64_t offset, int64_t count, uint32_t* out) override {
    const auto& b = buffer(id, offset, count, "read");
    std::copy(b.begin() + offset, b.begin() + offset + count, out);
  }
  void write_words(int id, int64_t offset, int64_t count, const uint32_t* in) override {
    auto& b = buffer(id, offset, count, "write");
    std::copy(in, in + count, b.begin() + offset);
  }
  std::unique_ptr<rt::LoadedKernel> load(rt::KernelPlan plan) override {
    throw Error("kernel '" + plan.name + "': the interpreter runs kernels from their IR, which a plan does not "
                "hold; load plans on a backend whose plans carry code (Vulkan)");
  }
  void launch(rt::LoadedKernel& loaded, std::span<const uint64_t> args, const std::vector<bool>& run,
              std::span<const int> slot_buffers) override {
    auto& k = static_cast<InterpKernel&>(loaded);
    // The IR names a buffer by its tree and tree parameter: the plan's slot
    // of that pair is bound to one of this device's buffers.
    std::map<std::pair<int, int>, int> bound;
    for (size_t s = 0; s < k.plan.slots.size(); ++s)
      bound[{k.plan.slots[s].tree_type, k.plan.slots[s].param}] = slot_buffers[s];
    ir::InterpreterEnv env;
    env.snodes = &k.forest;
    env.buffer = [&](int tree, int param) -> std::vector<uint32_t>& {
      auto it = bound.find({tree, param});
      if (it == bound.end())
        throw InternalError("interpreter: kernel '" + k.plan.name + "' names tree " + std::to_string(tree) +
                            " (tree parameter " + std::to_string(param) + "), which its plan binds to no buffer");
      return buffers_.at(static_cast<size_t>(it->second));
    };
    env.debug = options_.debug;
    env.print = options_.print ? options_.print : [](std::string_view s) { std::cout << s << std::flush; };
    env.run_task = [&](size_t i) { return i < run.size() ? bool(run[i]) : true; };
    k.interpreter.run(args, env);
  }
  void sync() override {}

 private:
  // The buffer `id`, once [offset, offset + count) is checked to lie inside
  // it (an address outside is a bug in Grove: it must not corrupt the heap).
  std::vector<uint32_t>& buffer(int id, int64_t offset, int64_t count, const char* what) {
    if (id < 0 || static_cast<size_t>(id) >= buffers_.size())
      throw InternalError("interpreter: host " + std::string(what) + " of buffer " + std::to_string(id) +
                          ", which does not exist");
    auto& b = buffers_[static_cast<size_t>(id)];
    if (offset < 0 || count < 0 || offset > static_cast<int64_t>(b.size()) - count)
      throw InternalError("interpreter: host " + std::string(what) + " of words [" + std::to_string(offset) +
                          ", " + std::to_string(offset) + " + " + std::to_string(count) + ") of buffer " +
                          std::to_string(id) + ", which has " + std::to_string(b.size()) + " words");
    return b;
  }

  BackendOptions options_;
  std::vector<std::vector<uint32_t>> buffers_;
};

class InterpBackend : public Backend {
 public:
  Arch arch() const override { return Arch::Interp; }
  std::unique_ptr<rt::LoadedKernel> compile(const ir::Kernel& kernel, const ir::SNodeForest& forest,
                                            rt::KernelPlan plan) override {
    auto k = std::make_unique<InterpKernel>(kernel, forest);
    plan.backend = "interp";  // the code is the lowered IR the interpreter keeps
    k->plan = std::move(plan);
    return k;
  }
};

}  // namespace

BackendAndDevice make_interp_backend(const BackendOptions& options) {
  return {std::make_unique<InterpDevice>(options), std::make_unique<InterpBackend>()};
}

}  // namespace grove::detail
