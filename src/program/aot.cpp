// src/program/aot.cpp — grove::aot::Module (grove/aot.h): a Program's tree
// types and compiled kernel plans gathered into runtime/aot's module format.
// A module for the Program's own arch holds the plans the Program runs; one
// for another arch holds plans of that backend's code generator alone
// (BackendEntry::make_compiler in src/program/registry.h: CUDA's needs no
// GPU, Vulkan's no device given Config::vulkan_target).
#include "grove/aot.h"

#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>

#include "grove/version.h"
#include "program/program_impl.h"
#include "program/registry.h"
#include "runtime/aot/module.h"

namespace grove::aot {

struct Module::Impl {
  std::weak_ptr<detail::ProgramImpl> program;
  rt::aot::ModuleData data;
  // Kernels by name in the module, and the Program's records behind them
  // (Grove's own kernels are added at bytes()).
  std::vector<std::pair<std::string, detail::KernelRecord*>> kernels;
  // The module's arch is not the Program's: its code generator, and the
  // plans it made (each kernel is compiled once).
  std::unique_ptr<detail::Backend> compiler;
  std::map<const detail::KernelRecord*, rt::KernelPlan> generated;

  detail::ProgramImpl& live() const {
    auto p = program.lock();
    if (!p) throw Error("aot::Module used after its Program was destroyed");
    return *p;
  }

  bool has_type(int id) const { return data.tree_type(id) != nullptr; }

  void add_type(std::string name, int id) {
    detail::ProgramImpl& p = live();
    if (const rt::aot::ModuleTreeType* t = data.tree_type(name); t != nullptr && t->id != id)
      throw Error("aot::Module: the name '" + name + "' is taken by another tree type");
    if (has_type(id)) {
      if (data.tree_type(id)->name != name)
        throw Error("aot::Module: tree type '" + p.trees.type(id).name + "' was added as '" +
                    data.tree_type(id)->name + "' already");
      return;
    }
    // Fields by the names the type gave them ("x", not the Program's "world.x").
    rt::TreeLayout layout = p.context->type(id);
    const std::string prefix = p.trees.type(id).name + ".";
    for (rt::FieldLayout& f : layout.fields)
      if (f.name.rfind(prefix, 0) == 0) f.name = f.name.substr(prefix.size());
    data.tree_types.push_back({id, std::move(name), std::move(layout), false});
  }

  // A Program's own tree (prog.field, prog.root()), as tree type "root"
  // for the first of them, "root1", "root2"... for later ones.
  void add_own(int tree) {
    detail::ProgramImpl& p = live();
    int k = 0;
    for (int t = 0; t < tree; ++t)
      if (p.trees.own_instance(t) >= 0) ++k;
    const std::string name = k == 0 ? "root" : "root" + std::to_string(k);
    if (data.tree_type(name) != nullptr)
      throw Error("aot::Module: the Program's own tree is saved as tree type '" + name + "', a name taken by a tree "
                  "type added under it; add that one under another name");
    data.tree_types.push_back({tree, name, p.context->type(tree), true});
  }

  // The plan of `rec`, compiled, named `name` in the module.
  rt::KernelPlan plan_of(detail::KernelRecord& rec, const std::string& name) {
    detail::ProgramImpl& p = live();
    rt::KernelPlan plan;
    if (compiler) {
      auto it = generated.find(&rec);
      if (it == generated.end()) it = generated.emplace(&rec, p.plan_for(rec, *compiler)).first;
      plan = it->second;
    } else {
      p.tier_up(rec);  // a module ships the full tier's code
      plan = rec.compiled->plan;
    }
    for (const rt::TreeSlotPlan& s : plan.slots) {
      if (s.kind != rt::TreeSlotPlan::Kind::tree) continue;
      if (has_type(s.tree_type)) continue;
      if (s.param < 0) add_own(s.tree_type);
      else add_type(p.trees.type(s.tree_type).name, s.tree_type);
    }
    plan.name = name;
    if (auto* ptx = std::get_if<rt::PtxCode>(&plan.code)) {
      ptx->binary.clear();  // the driver's binary holds for one GPU and driver: the module ships the PTX
      ptx->binary_target.clear();
    }
    return plan;
  }
};

namespace {

// "Arch::Vulkan", as the enumerator is spelled.
std::string enumerator(Arch a) {
  std::string n(arch_name(a));
  if (!n.empty()) n[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(n[0])));
  return "Arch::" + n;
}

}  // namespace

std::vector<Target> targets() {
  std::vector<Target> out;
  for (const detail::BackendEntry* e : detail::backends())
    if (!e->module_code.empty()) out.push_back({e->arch, e->module_code});
  return out;
}

Module::Module(Program& program, Arch arch) : impl_(std::make_unique<Impl>()) {
  detail::ProgramImpl* p = program.impl();
  const detail::BackendEntry* b = detail::find_backend(arch);
  if (b == nullptr || b->module_code.empty()) {
    std::string made;
    for (const Target& t : targets())
      made += (made.empty() ? "" : " and ") + enumerator(t.arch) + " (" + std::string(t.code) + ")";
    const std::string why = b == nullptr && arch != Arch::Auto ? ", which is not built into this Grove" : "";
    throw Error("aot::Module: modules are made for " + (made.empty() ? std::string("no backend built in") : made) +
                ", not Arch::" + std::string(arch_name(arch)) + why);
  }
  if (p->arch != arch) {
    if (b->make_compiler == nullptr)
      throw Error("aot::Module for " + enumerator(arch) + " needs a Program running on it (Config::arch = " +
                  enumerator(arch) + "), whose device decides the " + std::string(b->module_code) +
                  "; this one runs on Arch::" + std::string(arch_name(p->arch)));
    impl_->compiler = b->make_compiler(p->backend_options);  // code that needs no device
  }
  impl_->program = p->weak_from_this();
  impl_->data.grove_version = kVersion;
  impl_->data.backend = std::string(arch_name(arch));
}

Module::~Module() = default;
Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;

void Module::add_tree_type(std::string_view name, const TreeType& type) {
  detail::ProgramImpl& p = impl_->live();
  if (name.empty()) throw Error("aot::Module::add_tree_type: a tree type needs a name");
  if (!p.is_tree_type(type.id()) || type.program_.lock().get() != &p)
    throw Error("aot::Module::add_tree_type('" + std::string(name) + "'): not a tree type of this module's Program");
  impl_->add_type(std::string(name), type.id());
}

void Module::add_kernel(std::string_view name, const Kernel& kernel) {
  detail::ProgramImpl& p = impl_->live();
  if (name.empty()) throw Error("aot::Module::add_kernel: a kernel needs a name");
  if (name.substr(0, 2) == "__") throw Error("aot::Module::add_kernel: names starting with '__' are Grove's own; choose another for '" + std::string(name) + "'");
  if (kernel.program_.lock().get() != &p || kernel.id_ < 0)
    throw Error("aot::Module::add_kernel('" + std::string(name) + "'): not a kernel of this module's Program");
  for (const auto& [n, rec] : impl_->kernels)
    if (n == name) throw Error("aot::Module: a kernel named '" + std::string(name) + "' was added already");
  detail::KernelRecord& rec = p.kernels.at(kernel.id_);
  impl_->plan_of(rec, std::string(name));  // compiles it now, so that errors name this call
  impl_->kernels.emplace_back(std::string(name), &rec);
}

std::vector<uint8_t> Module::bytes() const {
  detail::ProgramImpl& p = impl_->live();
  rt::aot::ModuleData data = impl_->data;
  data.kernels.clear();
  for (const auto& [name, rec] : impl_->kernels) data.kernels.push_back(impl_->plan_of(*rec, name));
  // Grove's own kernels for each tree type: writers and fillers (a whole
  // field's copy in, or fill) of its sparse fields and
  // the deactivation of each of its sparse SNodes, named "<type>.<name>",
  // which the runtime looks up. Names with dots can make two alike (a field
  // 'a.b' of type 'root', a field 'b' of type 'root.a'): refused here, or
  // the runtime would refuse the module.
  std::map<std::string, std::string> made;  // kernel name -> what it serves
  auto own = [&](std::string kernel, const std::string& serves, detail::KernelRecord& rec) {
    auto [it, fresh] = made.emplace(kernel, serves);
    if (!fresh)
      throw Error("aot::Module: " + it->second + " and " + serves + " would both need Grove's kernel '" + kernel +
                  "'; rename one of them (a '.' in a tree type's or a field's name makes such pairs)");
    data.kernels.push_back(impl_->plan_of(rec, kernel));
  };
  for (const rt::aot::ModuleTreeType& t : impl_->data.tree_types) {
    for (const rt::FieldLayout& f : t.layout.fields) {
      if (!p.forest().is_sparse_path(p.forest().snode(f.place).parent)) continue;
      own("__write_" + t.name + "." + f.name, "field '" + f.name + "' of tree type '" + t.name + "'",
          p.writer_kernel(f.id));
      // (A field of more elements than a loop counts, 2^31 - 1, has no
      // filler: no host copy of all of them fits in memory anyway.)
      int64_t elements = 1;
      for (int64_t e : f.shape) elements = e > 0 && elements > INT32_MAX / e ? int64_t{INT32_MAX} + 1 : elements * e;
      if (elements <= INT32_MAX)
        own("__fill_" + t.name + "." + f.name, "field '" + f.name + "' of tree type '" + t.name + "'",
            p.filler_kernel(f.id));
    }
    for (const rt::SNodeLayout& n : t.layout.nodes)
      if (n.is_sparse())
        own("__deactivate_all_" + t.name + "." + n.name(), "SNode '" + n.name() + "' of tree type '" + t.name + "'",
            p.clear_kernel(n.id));
  }
  data.features = rt::aot::features_of(data.kernels);
  return rt::aot::write_module(data);
}

void Module::save(const std::string& path) const {
  const std::vector<uint8_t> b = bytes();
  const std::string temp = path + ".partial";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("aot::Module::save: cannot open '" + temp + "' for writing");
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    if (!out) throw Error("aot::Module::save: cannot write '" + temp + "'");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw Error("aot::Module::save: cannot move '" + temp + "' to '" + path + "'");
  }
}

}  // namespace grove::aot
