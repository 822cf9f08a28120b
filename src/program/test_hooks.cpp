// src/program/test_hooks.cpp — the process-wide state behind test_hooks.h.
#include "program/test_hooks.h"

#include <mutex>

#include "grove/program.h"
#include "program/program_impl.h"
#include "runtime/core/plan.h"

namespace grove::detail {

namespace {
std::mutex g_mutex;
VulkanTestProfile g_profile;
std::vector<std::string> g_messages;
// The observer of one kind. A function's static: a setter may run in
// another translation unit's static initialisation, before this one's.
template <typename Observer>
Observer& observer_slot() {
  static Observer observer;
  return observer;
}
template <typename Observer>
void set_observer(Observer observer) {
  std::lock_guard lock(g_mutex);
  observer_slot<Observer>() = std::move(observer);
}
// A copy, called outside the lock (an observer may use the hooks itself).
template <typename Observer>
Observer current_observer() {
  std::lock_guard lock(g_mutex);
  return observer_slot<Observer>();
}
}  // namespace

void set_lowered_kernel_observer(LoweredKernelObserver observer) { set_observer(std::move(observer)); }

void observe_lowered_kernel(const ir::Kernel& kernel, bool debug) {
  if (LoweredKernelObserver observer = current_observer<LoweredKernelObserver>()) observer(kernel, debug);
}

void set_program_end_observer(ProgramEndObserver observer) { set_observer(std::move(observer)); }

bool program_end_observed() { return static_cast<bool>(current_observer<ProgramEndObserver>()); }

void end_traced_program(Program& program) {
  ProgramImpl& p = *program.impl();
  if (!p.trace.started()) return;
  const std::unique_ptr<std::vector<HostOp>> trace = p.trace.take();  // what the observer does is not traced
  const ProgramEndObserver observer = current_observer<ProgramEndObserver>();
  try {
    if (observer) observer(program, *trace);
  } catch (...) {  // NOLINT(bugprone-empty-catch): called from a destructor
  }
}

void set_vulkan_test_profile(const VulkanTestProfile& profile) {
  std::lock_guard lock(g_mutex);
  g_profile = profile;
}

VulkanTestProfile vulkan_test_profile() {
  std::lock_guard lock(g_mutex);
  return g_profile;
}

std::vector<std::string> vulkan_validation_messages() {
  std::lock_guard lock(g_mutex);
  return g_messages;
}

void record_vulkan_validation_message(std::string message) {
  std::lock_guard lock(g_mutex);
  g_messages.push_back(std::move(message));
}

namespace {
KernelRecord& kernel_named(Program& program, std::string_view name) {
  if (KernelRecord* k = program.impl()->kernels.named(name)) return *k;
  throw Error("no kernel named '" + std::string(name) + "'");
}
}  // namespace

std::vector<uint8_t> kernel_plan_bytes(Program& program, std::string_view name) {
  KernelRecord& rec = kernel_named(program, name);
  program.impl()->compile(rec);
  return rt::serialize(rec.compiled->plan);
}

bool field_in_host_memory(Program& program, const Field& field) {
  ProgramImpl& p = *program.impl();
  for (int id : field.component_ids()) p.materialize_field(id, "the host");
  return p.context->in_host_memory(p.host_instance(field));
}

std::vector<uint32_t> root_pointer_slots(Program& program, const SNode& pointer) {
  ProgramImpl& p = *program.impl();
  const ir::SNodeDecl& s = p.forest().snode(pointer.id());
  if (s.type != ir::SNodeType::pointer || s.parent < 0 || p.forest().snode(s.parent).parent >= 0)
    throw Error("root_pointer_slots: SNode '" + pointer.name() + "' is not a pointer under a root");
  const rt::TreeLayout& layout = p.forest().layout(s.tree);
  std::vector<uint32_t> slots(static_cast<size_t>(s.num_cells));
  p.context->read_words(p.trees.own_instance(s.tree), layout.root_offset + s.component_offset, s.num_cells, slots.data());
  return slots;
}

std::span<const uint32_t> pool_words(Program& program, const SNode& node) {
  ProgramImpl& p = *program.impl();
  const ir::SNodeDecl& s = p.forest().snode(node.id());
  const rt::TreeLayout& layout = p.forest().layout(s.tree);
  const rt::SNodeLayout& n = layout.node(node.id());
  if (!n.has_pool()) throw Error("pool_words: SNode '" + node.name() + "' has no pool");
  const std::span<uint32_t> words = p.context->device().host_words(p.trees.own_instance(s.tree));
  if (words.empty()) return {};
  return words.subspan(static_cast<size_t>(n.pool_offset), static_cast<size_t>(n.capacity * n.pool_entry_words));
}

void load_kernel_plan(Program& program, std::string_view name, std::span<const uint8_t> bytes) {
  KernelRecord& rec = kernel_named(program, name);
  program.impl()->compile(rec);
  rec.compiled = program.impl()->context->device().load(rt::deserialize_plan(bytes, "kernel plan of '" + rec.name + "'"));
  rec.full_plan.reset();  // the plan loaded stays
  rec.tier_up_job.reset();
}

bool kernel_runs_quick_code(Program& program, std::string_view name) { return kernel_named(program, name).quick(); }

bool kernel_tiers_up(Program& program, std::string_view name) { return kernel_named(program, name).tier_up_job != nullptr; }

void wait_for_tier_ups(Program& program) {
  ProgramImpl& p = *program.impl();
  auto lock = p.lock();
  for (const auto& rec : p.kernels)
    if (rec->tier_up_job) p.tier_up(*rec);
}

}  // namespace grove::detail
