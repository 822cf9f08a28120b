// src/program/vulkan_backend.cpp — the compile side of the Vulkan backend:
// lowered IR to one SPIR-V module per task (src/spirv/codegen.h), written
// into the kernel's plan and loaded on the runtime's Vulkan device
// (runtime/vulkan/vulkan_device.h), which launches it.
//
// optimize_spirv() is not run on the modules: on lavapipe it changed no run
// time measurably (saxpy over 1M floats 9.7 vs 10.3 ms per launch, a
// struct-for over 20k cells 8.5 vs 6.4 ms, within the noise of a shared
// machine) and more than doubled compile time (33 -> 85 ms for saxpy); the
// driver's own compiler does the same work.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "grove/error.h"
#include "ir/assert.h"
#include "ir/plan_builder.h"
#include "program/backend.h"
#include "program/registry.h"
#include "program/program_impl.h"
#include "program/test_hooks.h"
#include "program/vulkan_backend.h"
#include "runtime/vulkan/device.h"
#include "runtime/vulkan/target.h"
#include "runtime/vulkan/vulkan_device.h"
#include "spirv/codegen.h"
#include "spirv/validate.h"

namespace grove::detail {

namespace {

// The loop limiter of Mesa's llvmpipe (LP_MAX_TGSI_LOOP_ITERATIONS).
constexpr uint32_t kLavapipeLoopLimit = 65535;
// The longest task lavapipe is given (spirv::CodegenOptions::max_task_words):
// 256 KiB of SPIR-V, about 15,000 instructions, which took about 15 s.
constexpr uint32_t kLavapipeTaskWords = 65536;

// The features a kernel's code needs of a device: 64-bit values, 64-bit
// atomics, and float atomic adds where the code generator took them (its
// modules say whether they sum with subgroup operations and keep float
// controls).
rt::Features features_of(const ir::Kernel& kernel, const spirv::CodegenOptions& options) {
  rt::Features f;
  ir::walk(kernel.body(), [&](ir::Stmt* s) {
    const DataType t = s->kind() == ir::StmtKind::TreeLoad || s->kind() == ir::StmtKind::TreeStore ? s->storage() : s->type();
    f.shader_int64 |= t == DataType::i64 || t == DataType::u64;
    f.shader_float64 |= t == DataType::f64;
    const bool atomic = s->kind() == ir::StmtKind::TreeAtomic || s->kind() == ir::StmtKind::TreeCas;
    f.atomic_int64 |= atomic && bit_width(s->type()) == 64 && is_integral(s->type());
    f.atomic_float32_add |= atomic && s->type() == DataType::f32 && options.features.atomic_float32_add;
  });
  return f;
}

void dump(const rt::KernelPlan& plan);

// The plan with its SPIR-V for `target`, made with no device: argument
// words, each task's code, entry point, local size and bindings, the
// messages (numbered from 0; the device numbers them again), the features
// the code uses, and the target (KernelPlan::target), which a device checks
// when it loads the plan.
rt::KernelPlan make_plan(const ir::Kernel& kernel, const ir::SNodeForest& forest, rt::KernelPlan plan,
                         const vk::Target& target, const std::string& target_name, bool debug) {
  spirv::CodegenOptions options = codegen_options_for(target);
  options.target_name = target_name;
  options.debug = debug;
  options.validate = spirv::validation_requested();
  spirv::KernelModules modules = spirv::generate_kernel(kernel, forest, options, target.push_constants);
  rt::SpirvCode code;
  code.target = vk::describe(target);
  plan.arg_words = modules.arg_words;
  for (size_t n = 0; n < plan.args.size(); ++n) {
    plan.args[n].word = modules.arg_offsets.at(n);
    plan.args[n].words = static_cast<uint32_t>(storage_words(compute_type(plan.args[n].type)));
  }
  GROVE_ASSERT(modules.tasks.size() == plan.tasks.size(), "SPIR-V codegen made a module per task");
  bool signed_zeros = false, denormals = false, subgroups = false;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    spirv::TaskModule& m = modules.tasks[i];
    rt::TaskPlan& t = plan.tasks[i];
    t.entry_point = m.entry_point;
    t.count_entry_point = m.count_entry_point;
    t.local_size = m.local_size;
    t.iterations_per_invocation = m.iterations_per_invocation;
    t.static_iterations = m.static_iterations;
    t.grid = std::move(m.grid);
    for (const spirv::TreeKey& key : m.trees) t.slots.push_back(ir::slot_of(plan, key.first, key.second));
    code.modules.push_back(std::move(m.words));
    signed_zeros |= m.signed_zero_inf_nan_preserve;
    denormals |= m.denorm_preserve;
    subgroups |= m.subgroup_operations;
  }
  plan.code = std::move(code);
  plan.messages = std::move(modules.messages);
  plan.features = features_of(kernel, options);
  plan.features.signed_zero_inf_nan_preserve = signed_zeros;
  plan.features.denorm_preserve = denormals;
  plan.features.subgroup_arithmetic = subgroups;
  return plan;
}

// Config::vulkan_target, or (empty) the one `info` describes.
vk::Target target_for(const std::string& text, const vk::DeviceInfo* info) {
  if (text.empty()) {
    GROVE_ASSERT(info != nullptr, "a Vulkan target from no device");
    return vk::target_of(*info);
  }
  return vk::parse_target(text, "Config::vulkan_target");
}

std::string name_of_target(const std::string& text) {
  return text.empty() ? "this Vulkan device" : "the Vulkan target '" + text + "'";
}

// The code generator for a target, with no device: on its own (for
// Config::vulkan_target) it makes AOT modules only.
class VulkanCompiler : public Backend {
 public:
  // `cpu_device`: the code runs on a Vulkan device that is a CPU.
  VulkanCompiler(const vk::Target& target, const std::string& target_name, bool debug, bool cpu_device)
      : target_(target), target_name_(target_name), debug_(debug), cpu_device_(cpu_device) {}
  Arch arch() const override { return Arch::Vulkan; }
  const ir::TargetOps* target_ops() const override { return &spirv::target_ops(target_.features.shader_int64); }
  // A device that is a CPU (lavapipe, SwiftShader) runs an invocation's
  // points on its SIMD lanes with no coalescing to lose, and divides in
  // scalar code. A for_range over a shape gives each invocation a piece of
  // a row, so that it finds its point with a division per piece, not per
  // point (vk_stencil5_nd, the side passed as an argument: 0.56 of the
  // hand-written GLSL with a point per invocation, 1.17-1.19 with pieces of
  // 16, 1.09-1.11 as a 2-D launch); a GPU spreads the shape over a 2-D or
  // 3-D launch, a point per invocation with no division.
  uint32_t range_piece() const override { return cpu_device_ ? kCpuDevicePiece : 1; }
  uint32_t grid_axes() const override { return cpu_device_ ? 1 : 3; }
  // On a CPU device an iteration of a list loop (struct-for, listgen)
  // takes a run of up to 64 cells of a container, shortened while the list
  // is too short to leave 2048 iterations (8 groups), so that few blocks
  // still spread over the cores; a GPU takes a cell per invocation.
  // Measured on lavapipe against one cell an iteration: smoke_step 0.50-0.52
  // -> 0.57-0.60 of its C++ model, mpm3d_step 0.55 -> 0.58-0.62,
  // vk_sparse_struct_for 1.09-1.11 -> 1.17-1.56 of the GLSL (a constant
  // run of 64 left mpm3d's ~216 blocks to one group: 23-36 ms a step).
  uint32_t cells_per_iteration() const override { return cpu_device_ ? 64 : 1; }
  bool groups_activations() const override { return true; }  // SPIR-V copies each site's code
  bool subgroup_activations() const override { return target_.features.subgroup_arithmetic; }
  ir::LowerAccessOptions::NearReads near_reads() const override {  // measured on lavapipe only
    return cpu_device_ ? ir::LowerAccessOptions::NearReads::all : ir::LowerAccessOptions::NearReads::off;
  }
  uint32_t least_list_iterations() const override { return cpu_device_ ? 2048 : 0; }
  std::unique_ptr<rt::LoadedKernel> compile(const ir::Kernel& kernel, std::string_view, const ir::SNodeForest&,
                                            rt::KernelPlan) override {
    throw Error("kernel '" + kernel.name() + "': the Vulkan code generator without a device only makes modules");
  }
  rt::KernelPlan generate(const ir::Kernel& kernel, std::string_view, const ir::SNodeForest& forest,
                          rt::KernelPlan plan) override {
    return make_plan(kernel, forest, std::move(plan), target_, target_name_, debug_);
  }

 protected:
  const vk::Target& target() const { return target_; }

 private:
  static constexpr uint32_t kCpuDevicePiece = 16;
  vk::Target target_;
  std::string target_name_;
  bool debug_;
  bool cpu_device_;
};

// The code generator for Config::vulkan_target (by default what the device
// offers), loading what it makes on the device.
class VulkanBackend : public VulkanCompiler {
 public:
  VulkanBackend(rt::Device& device, bool debug, const std::string& target)
      : VulkanCompiler(target_for(target, &vk::vulkan_device_of(device)->info()), name_of_target(target), debug,
                       lays_out_for_cpu(vk::vulkan_device_of(device)->info())),
        device_(device) {
    const vk::DeviceInfo& info = vk::vulkan_device_of(device)->info();
    if (target.empty()) return;  // the device's own
    if (const std::string wrong = vk::mismatch(info, this->target()); !wrong.empty())
      throw Error("Config::vulkan_target is '" + target + "'; " + info.name + " " + wrong);
  }
  std::unique_ptr<rt::LoadedKernel> compile(const ir::Kernel& kernel, std::string_view text,
                                            const ir::SNodeForest& forest, rt::KernelPlan plan) override {
    plan = generate(kernel, text, forest, std::move(plan));
    dump(plan);
    return device_.load(std::move(plan));
  }

 private:
  // A device that is a CPU, unless a test asks for a GPU's layout.
  static bool lays_out_for_cpu(const vk::DeviceInfo& info) {
    return info.type == vk::DeviceType::cpu && !vulkan_test_profile().gpu_layout;
  }
  rt::Device& device_;
};

// GROVE_DUMP_DIR: each task's module and its disassembly next to the IR dumps.
void dump(const rt::KernelPlan& plan) {
  const std::string dir = dump_dir();
  if (dir.empty()) return;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const rt::TaskPlan& task = plan.tasks[i];
    const std::vector<uint32_t>& words = plan.spirv().modules.at(i);
    std::string base = dump_name(plan.name) + ".t" + std::to_string(i) + "_" + rt::task_kind_name(task.kind);
    std::filesystem::path p = std::filesystem::path(dir) / base;
    std::ofstream(p.string() + ".spv", std::ios::binary)
        .write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
    std::ofstream(p.string() + ".spvasm") << spirv::disassemble(words);
  }
}

}  // namespace

namespace {

BackendAndDevice make_vulkan_backend(const BackendOptions& options) {
  vk::DeviceOptions d;
  d.select = options.device;
  d.validation = options.validation;
  d.on_validation_message = [](std::string_view message) {
    record_vulkan_validation_message(std::string(message));
    std::cerr << "[grove] Vulkan validation: " << message << "\n";
  };
  VulkanTestProfile p = vulkan_test_profile();
  d.profile.no_int64 = p.no_int64;
  d.profile.no_float64 = p.no_float64;
  d.profile.no_float_atomics = p.no_float_atomics;
  d.profile.no_float_controls = p.no_float_controls;
  d.profile.no_unified_memory = p.no_unified_memory;
  d.profile.max_storage_buffer_range = p.max_storage_buffer_range;
  d.profile.max_workgroup_invocations = p.max_workgroup_invocations;
  vk::RuntimeOptions r;
  r.debug = options.debug;
  r.print = options.print;
  r.device = d;
  r.external = options.vulkan_external;
  BackendAndDevice out;
  out.device = vk::make_vulkan_device(r);
  out.backend = std::make_unique<VulkanBackend>(*out.device, options.debug, options.vulkan_target);
  return out;
}

bool vulkan_first_for_auto(const BackendOptions& options) {
  const char* env = std::getenv("GROVE_VULKAN_DEVICE");
  if (!options.device.empty() || (env != nullptr && *env != '\0')) return true;  // the user named one
  try {
    for (const vk::DeviceInfo& d : vk::enumerate_devices())
      if (d.unsupported_reason.empty() && d.type != vk::DeviceType::cpu) return true;
  } catch (const Error&) {
    // No loader: no Vulkan GPU.
  }
  return false;
}

}  // namespace

const BackendEntry kVulkanBackend = {
    .arch = Arch::Vulkan,
    .make = make_vulkan_backend,
    // A GPU first; a CPU driver (lavapipe runs kernels in parallel too, but
    // through a shader compiler's generic code) after the LLVM CPU backend.
    .auto_rank = [](const BackendOptions& options) { return vulkan_first_for_auto(options) ? 0 : 3; },
    // A target that cannot be read is an error whatever the arch.
    .check_options = [](const BackendOptions& options) {
      if (!options.vulkan_target.empty()) vk::parse_target(options.vulkan_target, "Config::vulkan_target");
    },
    .module_code = "SPIR-V",
    // With no device, for Config::vulkan_target.
    .make_compiler = [](const BackendOptions& options) -> std::unique_ptr<Backend> {
      if (options.vulkan_target.empty())
        throw Error("aot::Module for Arch::Vulkan from a Program on another arch needs Config::vulkan_target, the "
                    "Vulkan target to compile for (a preset such as 'desktop' or 'lavapipe', or its features: "
                    "runtime/vulkan/target.h; `grove info` shows each device's), or a Program running on Vulkan");
      // Code for llvmpipe is laid out for the CPU it is.
      const vk::Target target = target_for(options.vulkan_target, nullptr);
      return std::make_unique<VulkanCompiler>(target, name_of_target(options.vulkan_target), options.debug,
                                              target.llvmpipe);
    },
};

vk::Device* vulkan_device(const Program& program) { return vk::vulkan_device_of(program.impl()->context->device()); }

spirv::CodegenOptions codegen_options_for(const vk::Target& target) {
  spirv::CodegenOptions options;
#define GROVE_FEATURE(field, device_name) options.features.field = target.features.field;
#include "runtime/core/features.def"
  options.local_size = target.local_size;
  // Mesa's llvmpipe (lavapipe) leaves any loop once an invocation has taken
  // 65535 back-edges in all (gallivm's loop limiter): count and report.
  // It also folds x * 0.0 with a literal zero whatever the float controls say.
  if (target.llvmpipe) {
    options.max_loop_iterations = kLavapipeLoopLimit;
    options.max_task_words = kLavapipeTaskWords;
    options.opaque_float_zero = true;
  }
  return options;
}

spirv::CodegenOptions codegen_options_for(const vk::DeviceInfo& info) { return codegen_options_for(vk::target_of(info)); }

}  // namespace grove::detail
