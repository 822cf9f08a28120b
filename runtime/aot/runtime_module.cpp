// runtime/aot/runtime_module.cpp — grove::runtime (grove/runtime.h): AOT
// modules on a device of the module's backend (its format, formats.h,
// opens it) through rt::Context, with nothing of the compiler.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <array>
#include <map>
#include <mutex>

#include "grove/runtime.h"
#include "runtime/aot/formats.h"
#include "runtime/aot/module.h"
#include "runtime/core/context.h"
#include "runtime/core/field_walk.h"
#include "runtime/core/scalar.h"

#ifdef GROVE_RUNTIME_VULKAN
#include "runtime/vulkan/vulkan_device.h"
#endif

namespace grove::runtime {

namespace {

// What a kernel takes, for errors: "numbers (n: i32, scale: f32) and 1 tree(s)".
std::string signature(const rt::KernelPlan& plan, size_t trees) {
  std::string numbers;
  for (const rt::ArgPlan& a : plan.args)
    numbers += (numbers.empty() ? "" : ", ") + a.name + ": " + std::string(type_name(a.type));
  return (numbers.empty() ? std::string("no numbers") : "numbers (" + numbers + ")") + " and " +
         std::to_string(trees) + " tree(s)";
}

}  // namespace

class ModuleImpl {
 public:
  // Threads sharing a Module (or its Trees) take turns: every operation
  // holds this while it runs (grove/runtime.h, "Threads").
  std::recursive_mutex mutex;
  std::string source;
  rt::aot::ModuleData data;
  std::unique_ptr<rt::Context> context;
  std::map<std::string, std::unique_ptr<rt::LoadedKernel>, std::less<>> loaded;
  int scratch = -1;
  std::map<int, std::string> tree_names;  // by instance
  std::map<int, int> own_instance;        // by tree type: the instance of a Program's own tree
  int unnamed = 0;

  const rt::aot::ModuleTreeType& type_of_instance(int instance) const {
    return *data.tree_type(context->instance(instance).type);
  }

  rt::LoadedKernel& kernel(std::string_view name) {
    auto it = loaded.find(name);
    if (it != loaded.end()) return *it->second;
    const rt::KernelPlan* plan = data.kernel(name);
    if (plan == nullptr) {
      std::string names;
      for (const rt::KernelPlan& k : data.kernels)
        if (k.name.rfind("__", 0) != 0) names += (names.empty() ? "" : ", ") + k.name;
      throw Error(source + " has no kernel '" + std::string(name) + "' (it has: " + (names.empty() ? "none" : names) + ")");
    }
    std::unique_ptr<rt::LoadedKernel> k = context->device().load(*plan);
    return *loaded.emplace(std::string(name), std::move(k)).first->second;
  }

  struct Prepared {
    rt::LoadedKernel* kernel;
    std::vector<uint64_t> bits;
    std::vector<int> slots;
  };
  void launch(std::string_view name, std::span<const Arg> args) {
    const std::lock_guard lock(mutex);
    Prepared p = prepare(name, args);
    context->launch(*p.kernel, p.bits, p.slots);
  }
  void record(void* command_buffer, std::string_view name, std::span<const Arg> args) {
    const std::lock_guard lock(mutex);
    Prepared p = prepare(name, args);
    context->record(*p.kernel, p.bits, p.slots, command_buffer);
  }
  // The kernel, its arguments' bits and the instances bound to its slots.
  Prepared prepare(std::string_view name, std::span<const Arg> args) {
    rt::LoadedKernel& k = kernel(name);
    const rt::KernelPlan& plan = k.plan;
    const std::string what = "kernel '" + plan.name + "' of " + source;
    // The tree arguments the kernel takes: one per tree parameter its slots name.
    size_t tree_params = 0;
    for (const rt::TreeSlotPlan& slot : plan.slots)
      if (slot.kind != rt::TreeSlotPlan::Kind::scratch && slot.param >= 0)
        tree_params = std::max(tree_params, static_cast<size_t>(slot.param) + 1);
    std::vector<uint64_t> bits;
    std::vector<int> trees;
    for (const Arg& a : args) {
      if (a.tree != nullptr) {
        if (a.tree->module_.get() != this)
          throw Error(what + ": tree argument " + std::to_string(trees.size()) + " belongs to another module");
        context->instance(a.tree->instance_);  // raises if destroyed
        trees.push_back(a.tree->instance_);
        // A tree past the kernel's trees while a number is still to come:
        // the caller passed a tree for that number.
        if (trees.size() > tree_params && bits.size() < plan.args.size())
          throw Error(what + ": argument '" + plan.args[bits.size()].name + "' (" +
                      std::string(type_name(plan.args[bits.size()].type)) + ") was given a tree ('" +
                      tree_names[trees.back()] + "' of type '" + type_of_instance(trees.back()).name +
                      "'); it takes " + signature(plan, tree_params));
        continue;
      }
      const size_t n = bits.size();
      if (n >= plan.args.size())
        throw Error(what + " takes " + std::to_string(plan.args.size()) +
                    " number argument(s) but was given more; it takes " + signature(plan, tree_params));
      const rt::ArgPlan& spec = plan.args[n];
      const std::string problem = rt::argument_problem(a.type, a.bits, spec.type);
      if (!problem.empty())
        throw Error(what + ": argument '" + spec.name + "' (" + std::string(type_name(spec.type)) + ") was given " +
                    problem + "; convert it on the host first");
      bits.push_back(rt::convert_argument(a.type, a.bits, spec.type));
    }
    if (bits.size() != plan.args.size())
      throw Error(what + " takes " + std::to_string(plan.args.size()) + " number argument(s) but was given " +
                  std::to_string(bits.size()) + "; it takes " + signature(plan, tree_params));
    std::vector<int> slots;
    for (size_t s = 0; s < plan.slots.size(); ++s) {
      const rt::TreeSlotPlan& slot = plan.slots[s];
      if (slot.kind == rt::TreeSlotPlan::Kind::scratch) {
        slots.push_back(scratch);
        continue;
      }
      if (slot.param < 0) {  // a Program's own tree (the reader checked that it is one)
        slots.push_back(own_instance.at(slot.tree_type));
        continue;
      }
      const auto param = static_cast<size_t>(slot.param);
      const std::string& want = data.tree_type(slot.tree_type)->name;
      if (param >= trees.size())
        throw Error(what + " takes a tree of type '" + want + "' as tree argument " + std::to_string(param) +
                    " but was given " + std::to_string(trees.size()) + " tree(s)");
      if (context->instance(trees[param]).type != slot.tree_type)
        throw Error(what + ": tree argument " + std::to_string(param) + " ('" + tree_names[trees[param]] +
                    "') is of type '" + type_of_instance(trees[param]).name + "', not '" + want + "'");
      slots.push_back(trees[param]);
    }
    if (trees.size() > tree_params)
      throw Error(what + " takes " + std::to_string(tree_params) + " tree argument(s) but was given " +
                  std::to_string(trees.size()) + "; it takes " + signature(plan, tree_params));
    return {&k, std::move(bits), std::move(slots)};
  }
};

// ---- Module ------------------------------------------------------------------------------

Module Module::load(const std::string& path, const Options& options) {
  const std::vector<uint8_t> bytes = rt::aot::read_file(path);
  return load(bytes, "module '" + path + "'", options);
}

Module Module::load(std::span<const uint8_t> bytes, std::string_view source, const Options& options) {
  auto impl = std::make_shared<ModuleImpl>();
  impl->source = std::string(source);
  impl->data = rt::aot::read_module(bytes, source);
  // read_module knows the format: it refuses a backend it has none for.
  impl->context = std::make_unique<rt::Context>(rt::aot::module_format(impl->data.backend)->open(options, impl->source));
  const char* profile_env = std::getenv("GROVE_PROFILE");
  if (options.profile || (profile_env && *profile_env && std::string_view(profile_env) != "0"))
    impl->context->set_profiling(true);
  for (const rt::aot::ModuleTreeType& t : impl->data.tree_types) {
    impl->context->add_type(t.id, t.layout);
    if (!t.own) continue;
    const int id = impl->context->create_instance(t.id, t.name);
    impl->own_instance[t.id] = id;
    impl->tree_names[id] = t.name;
  }
  int64_t scratch_words = 1;
  for (const rt::KernelPlan& k : impl->data.kernels) scratch_words = std::max(scratch_words, k.scratch_words);
  impl->scratch = impl->context->create_buffer(scratch_words, "scratch");
  // Every kernel is loaded now, so that a device that lacks a feature one
  // needs is reported at load, naming the kernel.
  for (const rt::KernelPlan& k : impl->data.kernels) impl->kernel(k.name);
  return Module(std::move(impl));
}

std::string Module::device_name() const { return impl_->context->device().name(); }
std::string Module::grove_version() const { return impl_->data.grove_version; }

std::vector<std::string> Module::kernels() const {
  std::vector<std::string> out;
  for (const rt::KernelPlan& k : impl_->data.kernels)
    if (k.name.rfind("__", 0) != 0) out.push_back(k.name);
  return out;
}

std::vector<std::string> Module::tree_types() const {
  std::vector<std::string> out;
  for (const rt::aot::ModuleTreeType& t : impl_->data.tree_types) out.push_back(t.name);
  return out;
}

namespace {
const rt::aot::ModuleTreeType& tree_type_named(const ModuleImpl& m, std::string_view type) {
  const rt::aot::ModuleTreeType* t = m.data.tree_type(type);
  if (t == nullptr) {
    std::string names;
    for (const auto& tt : m.data.tree_types) names += (names.empty() ? "" : ", ") + tt.name;
    throw Error(m.source + " has no tree type '" + std::string(type) + "' (it has: " + (names.empty() ? "none" : names) + ")");
  }
  return *t;
}
}  // namespace

Tree Module::instantiate(std::string_view type, std::string_view name) {
  const std::lock_guard lock(impl_->mutex);
  const rt::aot::ModuleTreeType* t = &tree_type_named(*impl_, type);
  if (t->own)
    throw Error("tree type '" + t->name + "' of " + impl_->source + " is the Program's own tree, whose one instance "
                "the module made at load: use Module::tree(\"" + t->name + "\")");
  std::string n = name.empty() ? t->name + "#" + std::to_string(impl_->unnamed++) : std::string(name);
  const int id = impl_->context->create_instance(t->id, n);
  impl_->tree_names[id] = std::move(n);
  return Tree(impl_, id);
}

Tree Module::tree(std::string_view type) {
  const std::lock_guard lock(impl_->mutex);
  const rt::aot::ModuleTreeType& t = tree_type_named(*impl_, type);
  if (!t.own)
    throw Error("tree type '" + t.name + "' of " + impl_->source + " has no instance of its own (it is a tree type "
                "of the Program's, not one of its own trees): make instances with Module::instantiate(\"" + t.name + "\")");
  return Tree(impl_, impl_->own_instance.at(t.id));
}

namespace {

// Grove's own kernels (host writes, deactivate_all) run only as the
// runtime calls them, with the indices it checked.
void refuse_own_kernel(const ModuleImpl& m, std::string_view kernel) {
  if (kernel.rfind("__", 0) == 0)
    throw Error(m.source + ": '" + std::string(kernel) + "' is one of Grove's own kernels, which the runtime runs "
                "itself (Tree::write, Tree::deactivate_all); launch the module's kernels (Module::kernels())");
}

}  // namespace

void Module::launch(std::string_view kernel, std::initializer_list<Arg> args) {
  refuse_own_kernel(*impl_, kernel);
  impl_->launch(kernel, std::span<const Arg>(args.begin(), args.size()));
}
void Module::launch(std::string_view kernel, const std::vector<Arg>& args) {
  refuse_own_kernel(*impl_, kernel);
  impl_->launch(kernel, args);
}
void Module::sync() {
  const std::lock_guard lock(impl_->mutex);
  impl_->context->sync();
}

std::string Module::profile_report() {
  const std::lock_guard lock(impl_->mutex);
  if (!impl_->context->profiling())
    throw Error("Module::profile_report: module '" + impl_->source +
                "' is not profiled; load it with Options::profile (or GROVE_PROFILE=1)");
  impl_->context->sync();
  return impl_->context->profile().report(impl_->context->device().name());
}

void Module::record(void* command_buffer, std::string_view kernel, std::initializer_list<Arg> args) {
  refuse_own_kernel(*impl_, kernel);
  impl_->record(command_buffer, kernel, std::span<const Arg>(args.begin(), args.size()));
}
void Module::record(void* command_buffer, std::string_view kernel, const std::vector<Arg>& args) {
  refuse_own_kernel(*impl_, kernel);
  impl_->record(command_buffer, kernel, args);
}

#ifdef GROVE_RUNTIME_VULKAN
namespace {
vk::Device& vulkan_of(ModuleImpl& m) {
  vk::Device* d = vk::vulkan_device_of(m.context->device());
  if (d == nullptr) throw Error(m.source + " runs on " + m.context->device().name() + ", not on a Vulkan device");
  return *d;
}
}  // namespace

void Module::record_barrier(void* command_buffer, uint32_t dst_stage_mask, uint32_t dst_access_mask) {
  vulkan_of(*impl_).record_barrier(command_buffer, dst_stage_mask, dst_access_mask);
}

VulkanHandles Module::vulkan() const { return vulkan_of(*impl_).handles(); }
#else
void Module::record_barrier(void*, uint32_t, uint32_t) { throw Error("grove_runtime was built without Vulkan"); }
VulkanHandles Module::vulkan() const { throw Error("grove_runtime was built without Vulkan"); }
#endif

// ---- Tree --------------------------------------------------------------------------------

namespace {

ModuleImpl& live(const std::shared_ptr<ModuleImpl>& m) {
  if (!m) throw Error("an empty grove::runtime::Tree handle; make trees with Module::instantiate");
  return *m;
}

// The field `name` of a tree type, and the physical index of `index`.
struct Element {
  const rt::FieldLayout* field;
  std::array<int64_t, rt::kMaxAxes> physical{};
};

// The layout of `name` in the instance's tree type (raises naming the fields it has).
const rt::FieldLayout& field_of(const ModuleImpl& m, int instance, std::string_view name) {
  const rt::aot::ModuleTreeType& t = m.type_of_instance(instance);
  const rt::FieldLayout* f = t.layout.field(name);
  if (f == nullptr) {
    std::string names;
    for (const rt::FieldLayout& fl : t.layout.fields) names += (names.empty() ? "" : ", ") + fl.name;
    throw Error("tree type '" + t.name + "' of " + m.source + " has no field '" + std::string(name) + "' (it has: " + names + ")");
  }
  return *f;
}

Element element(const ModuleImpl& m, int instance, std::string_view name, std::span<const int64_t> index) {
  const rt::aot::ModuleTreeType& t = m.type_of_instance(instance);
  const rt::FieldLayout* f = &field_of(m, instance, name);
  if (index.size() != f->shape.size())
    throw Error("field '" + f->name + "' takes " + std::to_string(f->shape.size()) + " indices, not " + std::to_string(index.size()));
  Element e{f, {}};
  const std::vector<int> axes = t.layout.node(f->place).axes();
  for (size_t d = 0; d < index.size(); ++d) {
    const int64_t lo = f->offset_of(d), hi = lo + f->shape[d];
    if (index[d] < lo || index[d] >= hi)
      throw Error("field '" + f->name + "': index " + std::to_string(index[d]) + " on axis " + std::to_string(d) +
                  " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
    e.physical[static_cast<size_t>(axes[d])] = index[d] - lo;
  }
  return e;
}

bool sparse_path(const rt::TreeLayout& l, int node) {
  for (int n : l.path(node))
    if (l.node(n).is_sparse()) return true;
  return false;
}

}  // namespace

const std::string& Tree::name() const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  return m.tree_names.at(instance_);
}
const std::string& Tree::type() const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  return m.type_of_instance(instance_).name;
}

void Tree::read_raw(std::string_view field, std::span<const int64_t> index, DataType as, void* out) const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  const Element e = element(m, instance_, field, index);
  rt::Context::PageCache cache;
  const rt::WordReader w = m.context->paged(instance_, cache);
  const int64_t a = m.type_of_instance(instance_).layout.find_element(e.field->id, e.physical.data(), w);
  uint64_t bits = 0;
  if (a >= 0) {
    uint32_t words[2] = {w(a), storage_words(e.field->dtype) == 2 ? w(a + 1) : 0u};
    bits = rt::load_element(words, 0, e.field->dtype);
  }
  const uint64_t v = rt::cast_bits(compute_type(e.field->dtype), as, bits);
  __builtin_memcpy(out, &v, static_cast<size_t>(bit_width(as) == 1 ? 1 : bit_width(as) / 8));
}

int64_t Tree::num_elements(std::string_view field) const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  const rt::FieldLayout& f = field_of(m, instance_, field);
  int64_t n = 1;
  for (int64_t e : f.shape) n *= e;
  return n;
}

size_t Tree::host_copy_elements(std::string_view field, size_t element_bytes) const {
  const int64_t elements = num_elements(field);
  const uint64_t limit = rt::host_memory_bytes();
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(elements), element_bytes, &bytes) || bytes > limit)
    throw Error("field '" + std::string(field) + "' has " + std::to_string(elements) + " elements; a host copy of "
                "all of them needs more than the " + std::to_string(limit >> 20) + " MiB of this machine's memory: "
                "read single elements with Tree::read");
  return static_cast<size_t>(elements);
}

void Tree::copy_out(std::string_view field, DataType as, detail::HostDestination out) const {
  const size_t count = host_copy_elements(field, rt::host_value_bytes(as));
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  const rt::FieldLayout& f = field_of(m, instance_, field);
  const std::vector<rt::FieldWalk> walk{rt::FieldWalk(m.type_of_instance(instance_).layout, f.id)};
  std::vector<uint32_t> copy;
  const rt::Context::HostSpan words = m.context->host_span(instance_, walk, copy, false);
  rt::copy_fields_out(walk, f.dtype, words.words, words.from, as, out, count);
}

void Tree::copy_out_to(std::string_view field, DataType as, void* out, size_t count) const {
  const auto expected = static_cast<size_t>(num_elements(field));
  if (count != expected)
    throw Error("Tree::to_span of field '" + std::string(field) + "': the span holds " + std::to_string(count) +
                " values, the field " + std::to_string(expected));
  copy_out(field, as, out);
}

void Tree::copy_out(std::string_view field, DataType as, void* out) const {
  detail::Memory memory{out, rt::host_value_bytes(as)};
  copy_out(field, as, detail::memory_destination(memory));
}

void Tree::copy_in(std::string_view field, DataType as, const void* values, size_t count, bool each,
                   const char* api) const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  const rt::FieldLayout& f = field_of(m, instance_, field);
  const rt::aot::ModuleTreeType& type = m.type_of_instance(instance_);
  const std::string what = std::string("Tree::") + api + " of field '" + f.name + "'";
  size_t elements = 1;
  for (int64_t e : f.shape) elements *= static_cast<size_t>(e);
  if (each && count != elements)
    throw Error(what + ": got " + std::to_string(count) + " values, the field holds " + std::to_string(elements));
  // The values in the field's bits, every one checked before any is stored;
  // values of the field's own type in whole words are its bits already.
  const size_t size = rt::host_value_bytes(as);
  const void* bits_of = values;
  size_t value_bytes = size;
  std::vector<uint64_t> bits;
  if (!rt::host_values_are_words(as, f.dtype)) {
    bits.resize(count);
    std::string problem;
    for (size_t v = 0; v < count; ++v) {
      bits[v] = rt::host_value_bits(as, static_cast<const unsigned char*>(values) + v * size, f.dtype, &problem);
      if (!problem.empty())
        throw Error(what + " (" + std::string(type_name(f.dtype)) + ")" +
                    (each ? ", value " + std::to_string(v) + "," : "") + " was given " + problem);
    }
    bits_of = bits.data();
    value_bytes = 8;
  }
  // Writes to a sparse field activate, which only a kernel may do: the
  // module's filler writes every element (activating every cell) where
  // some are inactive. Checked first, before any value is stored.
  const bool sparse = sparse_path(type.layout, type.layout.node(f.place).parent);
  const std::string filler = "__fill_" + type.name + "." + f.name;
  if (sparse && m.data.kernel(filler) == nullptr)
    throw Error(m.source + " has no filler for sparse field '" + f.name + "', which " + what +
                " needs to activate its cells; save the module again with this Grove");
  const std::vector<rt::FieldWalk> walk{rt::FieldWalk(type.layout, f.id)};
  std::vector<uint32_t> copy;
  m.context->store_fields(instance_, walk, {&f.dtype, 1}, bits_of, value_bytes, each, sparse, copy, [&](size_t) {
    Arg v(uint64_t{0});
    v.type = compute_type(f.dtype);
    if (!each) __builtin_memcpy(&v.bits, bits_of, value_bytes);  // the fill's value (4 bytes: its low word)
    std::vector<Arg> args{v};
    if (!type.own) args.emplace_back(*this);  // a Program's own tree is no argument
    m.launch(filler, args);
  });
}

void Tree::write_raw(std::string_view field, std::span<const int64_t> index, DataType as, const void* value) const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  const Element e = element(m, instance_, field, index);
  const rt::TreeLayout& layout = m.type_of_instance(instance_).layout;
  std::string problem;
  const uint64_t bits = rt::host_value_bits(as, value, e.field->dtype, &problem);
  if (!problem.empty())
    throw Error("field '" + e.field->name + "' (" + std::string(type_name(e.field->dtype)) + ") was given " + problem);
  if (!sparse_path(layout, layout.node(e.field->place).parent)) {
    const int64_t a = layout.find_element(e.field->id, e.physical.data(), [](int64_t) { return 0u; });
    uint32_t words[2] = {0, 0};
    rt::store_element(words, 0, e.field->dtype, bits);
    m.context->write_words(instance_, a, storage_words(e.field->dtype), words);
    return;
  }
  // A write to a sparse field activates, which only a kernel may do; to a
  // cell active already, where the buffer is host memory, it is a store.
  const std::string writer = "__write_" + m.type_of_instance(instance_).name + "." + e.field->name;
  if (m.data.kernel(writer) == nullptr)
    throw Error(m.source + " has no writer for sparse field '" + e.field->name + "'; save the module again with this Grove");
  if (m.context->store_if_active(instance_, layout, e.field->id, e.physical.data(), e.field->dtype, bits)) return;
  std::vector<Arg> args;
  for (int64_t i : index) args.emplace_back(static_cast<int32_t>(i));
  Arg v(uint64_t{0});
  v.type = compute_type(e.field->dtype);
  v.bits = bits;
  args.push_back(v);
  if (!m.type_of_instance(instance_).own) args.emplace_back(*this);  // a Program's own tree is no argument
  m.launch(writer, args);
}

namespace {
// Deactivates every cell of SNode `node` of `tree` (a dense node or the
// root: of the sparse nodes nearest below it), through the module's
// deactivation kernels, as Program's SNode::deactivate_all does.
void deactivate_node(ModuleImpl& m, const Tree& tree, int node) {
  const rt::aot::ModuleTreeType& t = m.type_of_instance(tree.instance());
  const rt::SNodeLayout& s = t.layout.node(node);
  if (!s.is_sparse()) {
    for (int c : s.children) deactivate_node(m, tree, c);
    return;
  }
  const std::string kernel = "__deactivate_all_" + t.name + "." + s.name();
  if (m.data.kernel(kernel) == nullptr)
    throw Error(m.source + " has no kernel that deactivates SNode '" + s.name() + "' of tree type '" + t.name +
                "'; save the module again with this Grove");
  std::vector<Arg> args;
  if (!t.own) args.emplace_back(tree);
  m.launch(kernel, args);
}
}  // namespace

void Tree::deactivate_all() const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  deactivate_node(m, *this, m.type_of_instance(instance_).layout.root);
}

void Tree::deactivate_all(std::string_view snode) const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  const rt::TreeLayout& layout = m.type_of_instance(instance_).layout;
  for (const rt::SNodeLayout& s : layout.nodes) {
    if (s.name() != snode) continue;
    if (s.type == rt::SNodeType::place)
      throw Error("deactivate_all on SNode '" + s.name() + "': it is a place (a field's leaf); deactivate its parent");
    deactivate_node(m, *this, s.id);
    return;
  }
  std::string names;
  for (const rt::SNodeLayout& s : layout.nodes)
    if (s.type != rt::SNodeType::place) names += (names.empty() ? "" : ", ") + s.name();
  throw Error("tree type '" + type() + "' has no SNode '" + std::string(snode) + "' (it has: " + names + ")");
}

void* Tree::vulkan_buffer() const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  m.context->instance(instance_);  // raises if destroyed
#ifdef GROVE_RUNTIME_VULKAN
  return vk::vulkan_buffer_of(m.context->device(), m.context->buffer_of(instance_));
#else
  throw Error("grove_runtime was built without Vulkan");
#endif
}

uint64_t Tree::buffer_bytes() const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  return static_cast<uint64_t>(m.context->instance(instance_).words) * 4;
}

FieldInfo Tree::field(std::string_view name) const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  const rt::FieldLayout& f = field_of(m, instance_, name);
  const rt::TreeLayout& layout = m.type_of_instance(instance_).layout;
  FieldInfo info;
  info.name = f.name;
  info.dtype = f.dtype;
  info.shape = f.shape;
  for (size_t d = 0; d < f.shape.size(); ++d) info.offset.push_back(f.offset_of(d));
  info.sparse = sparse_path(layout, layout.node(f.place).parent);
  if (f.shape.size() <= static_cast<size_t>(rt::kPathMaxIndices)) info.path = layout.field_path(f.id);
  return info;
}

std::vector<SNodeStats> Tree::stats() const {
  ModuleImpl& m = live(module_);
  const std::lock_guard lock(m.mutex);
  std::vector<SNodeStats> out;
  for (const rt::NodeStats& n : m.context->stats(instance_)) {
    SNodeStats s;
    s.name = n.name;
    s.kind = rt::snode_type_name(n.type);
    s.active_cells = n.active_cells;
    s.capacity = n.capacity;
    s.pool_used = n.pool_used;
    s.pool_capacity = n.pool_capacity;
    s.pool_high_water = n.pool_high_water;
    s.list_length = n.list_length;
    s.listgen_runs = n.listgen_runs;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace grove::runtime
