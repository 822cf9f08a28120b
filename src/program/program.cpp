// src/program/program.cpp — Program, SNode and the choice of backend.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <limits>

#include "grove/program.h"
#include "program/program_impl.h"
#include "program/registry.h"
#include "runtime/core/assert.h"

namespace grove {

std::string_view snode_kind_name(SNodeKind k) { return rt::snode_type_name(static_cast<rt::SNodeType>(k)); }

Axes axes(std::initializer_list<int> list) {
  Axes a;
  if (list.size() == 0 || list.size() > 8)
    throw Error("axes(...) takes 1 to 8 axis numbers, got " + std::to_string(list.size()));
  for (int x : list) {
    if (x < 0 || x > 7)
      throw Error("axes(...): axis " + std::to_string(x) + " does not exist; Grove has axes 0..7");
    a.axis[a.count++] = static_cast<uint8_t>(x);
  }
  return a;
}

std::optional<SNodeStats> Stats::find(std::string_view snode_name) const {
  for (const SNodeStats& s : snodes)
    if (s.name == snode_name) return s;
  return std::nullopt;
}

SNodeStats Stats::at(std::string_view snode_name) const {
  if (std::optional<SNodeStats> s = find(snode_name)) return *s;
  std::string known;
  for (const SNodeStats& s : snodes) known += (known.empty() ? "" : ", ") + s.name;
  throw Error("Stats has no SNode named '" + std::string(snode_name) + "' (it has: " + known +
              "); use SNode::name() of an SNode of this Program");
}

namespace detail {

namespace {
std::atomic<int> g_programs{0};
// The most Config::device_memory may say: more than any device has, and
// little enough that the pools' shares of it stay far from overflow.
constexpr int64_t kMaxDeviceMemory = int64_t{1} << 48;
}  // namespace

long HostTrace::begin(HostOp::Kind kind) {
  if (!recording()) return -1;
  ops_->emplace_back().kind = kind;
  return static_cast<long>(ops_->size()) - 1;
}

void HostTrace::raised(long index) {
  at(index).raised = true;
  ended_ = true;
}

TraceScope::TraceScope(ProgramImpl& p, HostOp::Kind kind)
    : p_(p), index_(p.trace.begin(kind)), exceptions_(std::uncaught_exceptions()) {}

TraceScope::~TraceScope() {
  if (index_ >= 0 && std::uncaught_exceptions() > exceptions_) p_.trace.raised(index_);
}

HostOp* TraceScope::op() { return index_ < 0 ? nullptr : &p_.trace.at(index_); }

SNode& SNodeHandles::at(int id) {
  while (static_cast<int>(handles_.size()) <= id) handles_.emplace_back(program_, static_cast<int>(handles_.size()));
  return handles_[static_cast<size_t>(id)];
}

int ImplicitTree::open(ir::SNodeForest& forest) {
  if (!is_open(forest)) tree_ = forest.add_tree();
  return tree_;
}

void ImplicitTree::make_room(const ir::SNodeForest& forest, int64_t bytes, int64_t limit) {
  if (is_open(forest) && dense_bytes_ + bytes > limit) tree_ = -1;
}

void ImplicitTree::add(const ir::SNodeForest& forest, int64_t bytes) {
  if (!is_open(forest)) dense_bytes_ = 0;
  dense_bytes_ += bytes;
}

TreeTypeRecord& TreeTable::add_type(int tree, std::string name) {
  TreeTypeRecord& rec = types_[tree];
  rec = TreeTypeRecord{};
  rec.name = std::move(name);
  return rec;
}

bool TreeTable::has_type_named(std::string_view name) const {
  for (const auto& [id, t] : types_)
    if (t.name == name) return true;
  return false;
}

const TreeTypeRecord* TreeTable::ready_type(int tree) const {
  auto it = types_.find(tree);
  return it == types_.end() || !it->second.ready ? nullptr : &it->second;
}

int TreeTable::declared_in(int field) const {
  return static_cast<size_t>(field) < declared_in_.size() ? declared_in_[static_cast<size_t>(field)] : -1;
}

void TreeTable::set_declared_in(int field, int type) {
  if (declared_in_.size() <= static_cast<size_t>(field)) declared_in_.resize(static_cast<size_t>(field) + 1, -1);
  declared_in_[static_cast<size_t>(field)] = type;
}

int TreeTable::own_instance(int tree) const {
  return tree >= 0 && static_cast<size_t>(tree) < own_instance_.size() ? own_instance_[static_cast<size_t>(tree)] : -1;
}

void TreeTable::set_own_instance(int tree, int instance) {
  if (own_instance_.size() <= static_cast<size_t>(tree)) own_instance_.resize(static_cast<size_t>(tree) + 1, -1);
  own_instance_[static_cast<size_t>(tree)] = instance;
}

ProgramImpl::ProgramImpl(Config c) : serial(++g_programs), config(c) {
  if (program_end_observed()) trace.start();
  if (config.default_fp != DataType::f32 && config.default_fp != DataType::f64)
    throw Error("Config::default_fp must be f32 or f64, not " +
                std::string(type_name(config.default_fp)));
  if (config.device_memory < (int64_t{1} << 20) || config.device_memory > kMaxDeviceMemory)
    throw Error("Config::device_memory is " + std::to_string(config.device_memory) +
                " bytes; give Grove 1 MiB to 2^48 bytes (256 TiB)");
  StartedBackend started = start_backend(config, [this](std::string_view text) {
    if (print_sink) print_sink(text);
    else std::cout << text << std::flush;
  });
  backend_options = std::move(started.options);
  backend = std::move(started.made.backend);
  context = std::make_unique<rt::Context>(std::move(started.made.device));
  arch = backend->arch();
  scratch = std::make_unique<ScratchBuffer>(forest_, *context);
  if (const char* env = std::getenv("GROVE_PROFILE"); env && *env && std::string_view(env) != "0")
    config.profile = true;
  if (config.profile) context->set_profiling(true);
}

void ProgramImpl::host_access(std::string_view what, std::string_view name) const {
  if (const KernelContext* ctx = current_or_null())
    throw Error(std::string(what) + " of '" + std::string(name) + "' inside the body of kernel '" +
                ctx->record->name + "': the body only records the kernel, and host reads and writes run "
                "between launches; access fields inside kernels as x(i, j)");
}

void ProgramImpl::check_same_program(const ProgramImpl* owner, std::string_view kind,
                                     const std::function<std::string()>& name, std::string_view user) const {
  if (owner == this) return;
  std::string handle = "a " + std::string(kind);
  if (owner != nullptr) {
    const std::unique_lock other(owner->mutex, std::try_to_lock);
    if (other.owns_lock()) handle = std::string(kind) + " '" + name() + "'";
  }
  throw Error(std::string(user) + " uses " + handle + ", which belongs to " +
              (owner ? owner->label() : std::string("no Program")) + "; this is " + label() +
              ": fields, SNodes and kernels work only with the Program that made them");
}

ScratchBuffer::ScratchBuffer(ir::SNodeForest& forest, rt::Context& context)
    : forest_(forest),
      context_(context),
      tree_(forest.add_scratch_tree(kInitialScratchWords)),
      instance_(context.create_buffer(kInitialScratchWords, "scratch")) {}

void ScratchBuffer::ensure(int64_t words) {
  const int64_t have = forest_.tree(tree_).total_words;
  if (words <= have) return;
  const int64_t grown = std::max(words, 2 * have);
  context_.resize_buffer(instance_, grown);
  forest_.resize_scratch_tree(tree_, grown);
}

Field ProgramImpl::make_field(DataType type, std::string_view name, int n, int m) {
  type = resolve(type);
  if (type == DataType::unknown) throw Error("a field needs a data type (f32, i32, ...)");
  if (n < 1 || m < 1 || n * m > kMaxComponents)
    throw Error("field '" + std::string(name) + "': a vector or matrix field has 1 to " +
                std::to_string(kMaxComponents) + " components (scalarised, one field each), got " +
                std::to_string(n) + "x" + std::to_string(m) + "; store larger ones in a field with one more axis");
  std::string base = name.empty() ? "field" + std::to_string(user_fields_) : std::string(name);
  FieldRecord rec;
  rec.n = n;
  rec.m = m;
  auto taken = [&](const std::string& s) { return fields_.find(s) != nullptr; };
  if (taken(base)) throw Error("a field named '" + base + "' already exists; give each field its own name");
  // Components: "v.3" for vectors, "m.12" for matrices up to 10 x 10, and
  // "m.12_3" beyond (row 12, column 3), so that no two names collide.
  std::vector<std::string> names;
  if (n * m == 1) {
    names.push_back(base);
  } else {
    const bool wide = n > 10 || m > 10;
    for (int c = 0; c < n * m; ++c) {
      const std::string r = std::to_string(c / m), col = std::to_string(c % m);
      names.push_back(base + "." + (m == 1 ? std::to_string(c) : wide ? r + "_" + col : r + col));
      if (taken(names.back())) throw Error("a field named '" + names.back() + "' already exists");
    }
  }
  for (const std::string& cname : names) rec.ids.push_back(fields_.add(cname, type, {}).id);
  ++user_fields_;
  return Field(weak_from_this(), rec.ids, n, m);
}

Field ProgramImpl::make_dense_field(DataType type, std::string_view name, int n, int m, const Shape& shape,
                                    const Shape& offset) {
  // The shape is checked before the field exists, so that a bad shape leaves
  // no field behind (its name stays free).
  const std::string shown = name.empty() ? std::string("field") : "field '" + std::string(name) + "'";
  if (shape.size() > static_cast<size_t>(ir::kMaxAxes))
    throw Error(shown + ": at most " + std::to_string(ir::kMaxAxes) + " axes, got " + std::to_string(shape.size()));
  for (size_t a = 0; a < shape.size(); ++a)
    if (shape[a] < 1 || shape[a] > std::numeric_limits<int32_t>::max())
      throw Error(shown + ": extent " + std::to_string(shape[a]) + " on axis " + std::to_string(a) +
                  " must be between 1 and 2^31-1");
  for (size_t a = 0; a < offset.size(); ++a)
    if (offset[a] < std::numeric_limits<int32_t>::min() ||
        offset[a] + shape[a] - 1 > std::numeric_limits<int32_t>::max())
      throw Error(shown + ": with offset " + std::to_string(offset[a]) + ", axis " + std::to_string(a) +
                  " would run past the i32 indices");
  // The field alone must fit in one buffer of the device (the layout of a
  // tree holding only it, with the same rules), or it is refused here,
  // before it exists. Fields that fit alone share the open implicit tree
  // while their sum (with a stagger's margin each) fits; a field that would
  // overflow it starts a new one. The Program goes on as if a refused field
  // had not been declared.
  const int64_t limit = std::min(context->device().max_buffer_bytes(), ir::kMaxTreeWords * 4);
  int64_t alone = 0;
  {
    ir::SNodeForest single;
    const int tree = single.add_tree();
    int parent = single.tree(tree).root;
    if (!shape.empty()) {
      std::vector<int> axes(shape.size());
      for (size_t d = 0; d < shape.size(); ++d) axes[d] = static_cast<int>(d);
      parent = single.add_child(parent, ir::SNodeType::dense, axes, std::vector<int64_t>(shape.begin(), shape.end()));
    }
    for (int c = 0; c < n * m; ++c) single.add_place(parent, c, type, name.empty() ? "field" : std::string(name));
    try {
      single.lay_out(tree, 0);
    } catch (const Error& e) {
      throw Error(shown + " cannot be stored: " + e.what());
    }
    alone = single.tree(tree).total_words * 4;
  }
  if (alone > limit)
    throw Error(shown + " needs " + std::to_string(alone) + " bytes, more than the " + std::to_string(limit) +
                " bytes one buffer may have on " + context->device().name() +
                ": make it smaller, split it over several fields, or store it sparsely (pointer or bitmasked blocks)");
  // What a field may add beside others: a cache line of alignment, and the
  // stagger after a big container (ir/snode.cpp), which its header more than covers.
  const int64_t margin = alone >= (int64_t{64} << 10) ? 4096 + 64 : 64;
  implicit_tree_.make_room(forest_, alone + margin, limit);
  Field f = make_field(type, name, n, m);
  implicit_tree_.add(forest_, alone + margin);
  if (shape.empty()) {
    root().place(f);
  } else {
    Axes a;
    for (size_t d = 0; d < shape.size(); ++d) a.axis[a.count++] = static_cast<uint8_t>(d);
    place(root().dense(a, shape).id(), f, offset);
  }
  return f;
}

SNode& ProgramImpl::root() { return snodes.at(forest_.tree(implicit_tree_.open(forest_)).root); }

// SNodeKind and rt::SNodeType are numbered by the same list (grove/snode_kinds.def).
static ir::SNodeType to_ir(SNodeKind k) { return static_cast<ir::SNodeType>(k); }
SNode& ProgramImpl::add_child(int parent, SNodeKind kind, Axes ax, std::vector<int64_t> extents,
                              int64_t chunk) {
  std::vector<int> axis_list(ax.axis, ax.axis + ax.count);
  if (extents.size() == 1 && axis_list.size() > 1) extents.assign(axis_list.size(), extents[0]);
  return snodes.at(forest_.add_child(parent, to_ir(kind), axis_list, extents, chunk));
}

void ProgramImpl::place(int parent, const Field& f, const Shape& offset) {
  check_same_program(f.program(), "field", [&] { return f.name(); }, "place under SNode '" + forest_.snode(parent).name() + "'");
  const ir::SNodeDecl& p = forest_.snode(parent);
  // A tree type's fields live in its tree, and only there.
  {
    const int id = f.component_ids().at(0);
    const int declared_in = trees.declared_in(id);
    if (declared_in != p.tree) {
      if (declared_in >= 0 && !is_tree_type(declared_in))
        throw Error("field '" + f.name() + "' was declared by a tree type whose declaration failed; it cannot be placed");
      if (declared_in >= 0)
        throw Error("field '" + f.name() + "' belongs to tree type '" + trees.type(declared_in).name +
                    "' and can be placed only under that type's root()");
      if (is_tree_type(p.tree))
        throw Error("field '" + f.name() + "' is placed under SNode '" + p.name() + "' of tree type '" +
                    trees.type(p.tree).name + "'; declare the type's fields with its TreeTypeBuilder's field(...)");
    }
  }
  // The field's indices are the axes the path splits (Taichi's rule), so an
  // offset gives one value per axis of `parent`; checked before placing.
  if (!offset.empty()) {
    const auto n = static_cast<size_t>(p.num_indices());
    if (offset.size() != n)
      throw Error("field '" + f.name() + "': an offset needs one value per index; SNode '" + p.name() +
                  "' gives the field " + std::to_string(n) + " index(es), the offset has " +
                  std::to_string(offset.size()));
    const std::vector<int> axes = p.axes();
    for (size_t d = 0; d < n; ++d) {
      const int64_t last = offset[d] + p.shape[static_cast<size_t>(axes[d])] - 1;
      if (offset[d] < std::numeric_limits<int32_t>::min() || last > std::numeric_limits<int32_t>::max())
        throw Error("field '" + f.name() + "': with offset " + std::to_string(offset[d]) + " index " +
                    std::to_string(d) + " would run to " + std::to_string(last) + "; indices are i32");
    }
  }
  for (int id : f.component_ids()) {
    const ir::FieldDecl& d = fields_.get(id);
    int leaf = forest_.add_place(parent, id, d.dtype, d.name, offset);
    const ir::SNodeDecl& s = forest_.snode(leaf);
    std::vector<int64_t> shape;
    for (int a : s.axes()) shape.push_back(s.shape[static_cast<size_t>(a)]);
    ir::FieldDecl& decl = fields_.get_mutable(id);
    decl.shape = shape;
    decl.offset = offset;
    snodes.at(leaf);
  }
}

ir::SNodeForest ProgramImpl::lay_out(int tree, int64_t budget_bytes, int64_t* pool_bytes) const {
  // Everything happens on a copy of the forest, committed by the caller once
  // the buffer exists: a layout that fails leaves the program as it was.
  //
  // The whole tree (pools, lists, dense cells) must fit in one buffer of the
  // device: the pools' budget shrinks until it does (trial layouts; the
  // layout only grows with the budget). Capacities set explicitly do not
  // change, so a tree may not fit however small the budget.
  const int64_t limit = std::min(context->device().max_buffer_bytes(), ir::kMaxTreeWords * 4);
  const int64_t budget = std::clamp<int64_t>(budget_bytes, int64_t{1} << 20, limit);
  std::string why;
  auto attempt = [&](int64_t b, ir::SNodeForest* out) {
    ir::SNodeForest trial = forest_;
    try {
      trial.lay_out(tree, b);
    } catch (const Error& e) {
      why = e.what();
      return false;
    }
    const int64_t bytes = trial.tree(tree).total_words * 4;
    if (bytes > limit) {
      std::string fields_in;
      int named = 0;
      for (int n : trial.tree(tree).nodes) {
        const ir::SNodeDecl& s = trial.snode(n);
        if (s.type != ir::SNodeType::place || named == 3) continue;
        fields_in += (named++ ? ", '" : "'") + fields_.get(s.field).name + "'";
      }
      why = "the SNode tree holding field(s) " + fields_in + " needs " + std::to_string(bytes) +
            " bytes, more than the " + std::to_string(limit) + " bytes one buffer may have on " +
            context->device().name() + ": give its pointer and dynamic SNodes a smaller "
            "SNode::capacity(...), lower Config::device_memory, or split the fields over several trees";
      return false;
    }
    *out = std::move(trial);
    return true;
  };
  ir::SNodeForest laid_out;
  if (!attempt(budget, &laid_out)) {
    if (!attempt(0, &laid_out)) throw Error(why);
    int64_t lo = 0, hi = budget;  // attempt(lo) succeeds, attempt(hi) fails
    while (hi - lo > 4096) {
      int64_t mid = lo + (hi - lo) / 2;
      ir::SNodeForest trial;
      if (attempt(mid, &trial)) {
        lo = mid;
        laid_out = std::move(trial);
      } else {
        hi = mid;
      }
    }
  }
  *pool_bytes = 0;
  for (int p : laid_out.tree(tree).pools) {
    const ir::SNodeDecl& s = laid_out.snode(p);
    *pool_bytes += s.capacity * (s.pool_entry_words + s.pool_bookkeeping_words()) * 4;  // < the tree's bytes
  }
  return laid_out;
}

void ProgramImpl::materialize_tree(int tree) {
  if (forest_.tree(tree).laid_out) return;
  GROVE_ASSERT(!is_tree_type(tree), "tree types are laid out when they are made");
  int64_t pool_bytes = 0;
  ir::SNodeForest laid_out;
  try {
    laid_out = lay_out(tree, config.device_memory - budget_used_, &pool_bytes);
  } catch (const Error&) {
    // The tree keeps its fields and SNodes (a capacity set now may still
    // make it fit), but fields declared from now on go into a new one.
    implicit_tree_.close(tree);
    throw;
  }
  // Its own instance: a zeroed buffer with the header written.
  context->add_type(tree, laid_out.layout(tree));
  const int instance = context->create_instance(tree, std::to_string(tree));
  forest_ = std::move(laid_out);
  budget_used_ += pool_bytes;
  trees.set_own_instance(tree, instance);
}

int ProgramImpl::make_tree_type(std::string_view name, const std::function<void(TreeTypeBuilder&)>& declare) {
  host_access("Program::tree_type", name);
  if (name.empty()) throw Error("a tree type needs a name");
  if (trees.has_type_named(name)) throw Error("a tree type named '" + std::string(name) + "' already exists; give each its own name");
  if (!declare) throw Error("tree type '" + std::string(name) + "' has no declaration");
  const int tree = forest_.add_tree();
  snodes.at(forest_.tree(tree).root);
  TreeTypeRecord& rec = trees.add_type(tree, std::string(name));
  try {
    TreeTypeBuilder builder(this, tree);
    declare(builder);
    for (const auto& [field_name, f] : rec.fields)
      for (int id : f.ids)
        if (forest_.place_of(id) < 0)
          throw Error("tree type '" + rec.name + "': field '" + fields_.get(id).name + "' is declared but not "
                      "placed; place it under the type's root(), or leave it out");
    if (rec.fields.empty())
      throw Error("tree type '" + rec.name + "' has no fields; declare them with field(...) and place them under root()");
    // Capacities come from the type alone: explicit ones, else shares of
    // Config::device_memory for each instance, whatever else the program holds.
    int64_t pool_bytes = 0;
    ir::SNodeForest laid_out = lay_out(tree, config.device_memory, &pool_bytes);
    context->add_type(tree, laid_out.layout(tree));
    forest_ = std::move(laid_out);
  } catch (...) {
    // The type's tree stays in the forest, unreachable; the type's name and
    // its fields' names are free again.
    for (const auto& [field_name, f] : rec.fields)
      for (int id : f.ids) fields_.rename(id, "__abandoned" + std::to_string(id) + "_" + fields_.get(id).name);
    trees.drop_type(tree);
    throw;
  }
  rec.ready = true;
  return tree;
}

const TreeTypeRecord& ProgramImpl::tree_type(int type) const {
  const TreeTypeRecord* t = trees.ready_type(type);
  if (t == nullptr)
    throw Error("tree type #" + std::to_string(type) + " does not exist in " + label() +
                "; get one from Program::tree_type");
  return *t;
}

int ProgramImpl::instantiate(int type, std::string_view name) {
  const TreeTypeRecord& rec = tree_type(type);
  host_access("Program::instantiate", rec.name);
  const std::string shown =
      name.empty() ? rec.name + "#" + std::to_string(context->instances_made(type)) : std::string(name);
  TraceScope trace(*this, HostOp::Kind::instantiate);
  const int instance = context->create_instance(type, shown);
  if (HostOp* op = trace.op()) {
    op->type = type;
    op->instance = instance;
    op->name = shown;
  }
  return instance;
}

void copy_stats(const rt::NodeStats& n, SNodeStats& ss) {
  ss.active_cells = n.active_cells;
  ss.capacity = n.capacity;
  ss.pool_used = n.pool_used;
  ss.pool_capacity = n.pool_capacity;
  ss.pool_high_water = n.pool_high_water;
  ss.list_length = n.list_length;
  ss.listgen_runs = n.listgen_runs;
}

void ProgramImpl::add_program_counts(Stats& st) const {
  for (const auto& k : kernels)
    if (!k->internal) {
      st.kernels_compiled += k->compile_count;
      st.kernels_on_quick_code += k->quick() ? 1 : 0;
    }
  st.kernel_launches = launches.launches();
  st.allocation_failures = context->allocation_failures();
}

Stats ProgramImpl::instance_stats(int tree, int instance) {
  Stats st;
  for (const rt::NodeStats& n : context->stats(instance)) {
    SNodeStats ss;
    ss.id = n.id;
    ss.name = n.name;
    ss.kind = snodes.at(n.id).kind();
    copy_stats(n, ss);
    st.snodes.push_back(ss);
  }
  st.tree_words = forest_.tree(tree).total_words;
  add_program_counts(st);
  return st;
}

int ProgramImpl::host_instance(const Field& f) {
  const int id = f.component_ids().at(0);
  if (f.instance() >= 0) {
    if (!context->alive(f.instance()))
      throw Error("field '" + fields_.get(id).name + "' belongs to a tree that was destroyed; use a field "
                  "of a live tree (Tree::field)");
    return f.instance();
  }
  const int place = forest_.place_of(id);
  if (place >= 0 && is_tree_type(forest_.snode(place).tree)) {
    const TreeTypeRecord& t = trees.type(forest_.snode(place).tree);
    throw Error("field '" + fields_.get(id).name + "' is a field of tree type '" + t.name + "', which holds no "
                "data itself; read and write it through an instance: prog.instantiate(type).field(\"" +
                fields_.get(id).name.substr(t.name.size() + 1) + "\")");
  }
  return own_instance_of_field(id);
}

int ProgramImpl::own_instance_of_field(int field) {
  materialize_field(field, "the host");
  return trees.own_instance(tree_of_field(field));
}

void ProgramImpl::materialize_field(int field, std::string_view user) {
  int place = forest_.place_of(field);
  if (place < 0)
    throw Error(std::string(user) + " uses field '" + fields_.get(field).name +
                "', which is not placed in any SNode yet; place it first, e.g. "
                "prog.root().dense(i, 16).place(" + fields_.get(field).name + ")");
  materialize_tree(forest_.snode(place).tree);
}

std::vector<int64_t> ProgramImpl::check_index(int field, std::initializer_list<int64_t> index) {
  materialize_field(field, "the host");
  const ir::FieldDecl& d = fields_.get(field);
  auto fail = [&](const std::string& why) {
    std::string s = "field '" + d.name + "' has shape (";
    for (size_t a = 0; a < d.shape.size(); ++a) s += (a ? ", " : "") + std::to_string(d.shape[a]);
    s += ")";
    if (d.has_offset()) {
      s += " and offset (";
      for (size_t a = 0; a < d.offset.size(); ++a) s += (a ? ", " : "") + std::to_string(d.offset[a]);
      s += ")";
    }
    s += "; index (";
    size_t n = 0;
    for (int64_t v : index) s += (n++ ? ", " : "") + std::to_string(v);
    throw Error(s + ") " + why);
  };
  if (static_cast<int>(index.size()) != d.ndim())
    fail("has " + std::to_string(index.size()) + " indices; give exactly " + std::to_string(d.ndim()));
  std::vector<int64_t> idx(index);
  for (int a = 0; a < d.ndim(); ++a) {
    const int64_t v = idx[static_cast<size_t>(a)] - d.offset_of(a);
    if (v < 0 || v >= d.shape[static_cast<size_t>(a)]) fail("is out of bounds on axis " + std::to_string(a));
  }
  return idx;
}

std::array<int64_t, ir::kMaxAxes> ProgramImpl::physical_index(int field, const int64_t* index) const {
  const ir::FieldDecl& d = fields_.get(field);
  const std::vector<int> axes = forest_.snode(forest_.place_of(field)).axes();
  std::array<int64_t, ir::kMaxAxes> out{};
  for (size_t a = 0; a < axes.size(); ++a)
    out[static_cast<size_t>(axes[a])] = index[a] - d.offset_of(static_cast<int>(a));
  return out;
}

}  // namespace detail

// ---- SNode -----------------------------------------------------------------

SNode& SNode::child(SNodeKind kind, Axes axes, std::vector<int64_t> extents, int64_t chunk) {
  const auto lock = program_->lock();
  return program_->add_child(id_, kind, axes, std::move(extents), chunk);
}
SNode& SNode::dense(Axes a, std::vector<int64_t> e) { return child(SNodeKind::dense, a, std::move(e), 0); }
SNode& SNode::dense(Axes a, int64_t e) { return child(SNodeKind::dense, a, {e}, 0); }
SNode& SNode::bitmasked(Axes a, std::vector<int64_t> e) { return child(SNodeKind::bitmasked, a, std::move(e), 0); }
SNode& SNode::bitmasked(Axes a, int64_t e) { return child(SNodeKind::bitmasked, a, {e}, 0); }
SNode& SNode::pointer(Axes a, std::vector<int64_t> e) { return child(SNodeKind::pointer, a, std::move(e), 0); }
SNode& SNode::pointer(Axes a, int64_t e) { return child(SNodeKind::pointer, a, {e}, 0); }
SNode& SNode::dynamic(Axes a, int64_t n, int64_t chunk) {
  if (chunk == 0) chunk = std::clamp<int64_t>(n, 1, 32);
  return child(SNodeKind::dynamic, a, {n}, chunk);
}

SNode& SNode::place(std::initializer_list<Field> fs) {
  const auto lock = program_->lock();
  for (const Field& f : fs) program_->place(id_, f);
  return *this;
}

SNode& SNode::place(std::initializer_list<Field> fs, const std::vector<int64_t>& offset) {
  const auto lock = program_->lock();
  for (const Field& f : fs) program_->place(id_, f, offset);
  return *this;
}

SNode& SNode::capacity(int64_t cells) {
  const auto lock = program_->lock();
  program_->set_capacity(id_, cells);
  return *this;
}

void SNode::deactivate_all() {
  const auto lock = program_->lock();
  program_->host_access("SNode::deactivate_all", name());
  detail::TraceScope trace(*program_, detail::HostOp::Kind::deactivate);
  if (detail::HostOp* op = trace.op()) op->snode = id_;
  program_->deactivate_all(id_);
}

int SNode::ndim() const {
  const auto lock = program_->lock();
  return program_->forest().snode(id_).num_indices();
}

SNodeKind SNode::kind() const {
  const auto lock = program_->lock();
  return static_cast<SNodeKind>(program_->forest().snode(id_).type);
}
std::string SNode::name() const {
  const auto lock = program_->lock();
  return program_->forest().snode(id_).name();
}

SNode* SNode::parent() const {
  const auto lock = program_->lock();
  int p = program_->forest().snode(id_).parent;
  return p < 0 ? nullptr : &program_->snodes.at(p);
}

Shape SNode::shape() const {
  const auto lock = program_->lock();
  const ir::SNodeDecl& s = program_->forest().snode(id_);
  Shape out;
  for (int a : s.axes()) out.push_back(s.shape[static_cast<size_t>(a)]);
  return out;
}

// ---- Program ---------------------------------------------------------------

Program::Program(Config config) : impl_(std::make_shared<detail::ProgramImpl>(config)) {}
Program::~Program() {
  if (impl_ && impl_->trace.started()) detail::end_traced_program(*this);
  if (impl_ && impl_->config.profile && impl_->launches.unreported() > 0) {
    try {
      std::cout << profile_report() << std::flush;
    } catch (const std::exception& e) {
      std::cerr << "grove: the profile of " << impl_->label() << " could not be reported: " << e.what() << "\n";
    }
  }
}

Field Program::field(DataType type, std::string_view name) {
  const auto lock = impl_->lock();
  return impl_->make_field(type, name, 1, 1);
}

Field Program::field(DataType type, Shape shape) { return field(type, "", std::move(shape)); }

Field Program::field(DataType type, std::string_view name, Shape shape) {
  const auto lock = impl_->lock();
  return impl_->make_dense_field(type, name, 1, 1, shape);
}

Field Program::field(DataType type, std::string_view name, Shape shape, Shape offset) {
  const auto lock = impl_->lock();
  if (offset.size() != shape.size())
    throw Error("field '" + std::string(name) + "': the offset has " + std::to_string(offset.size()) +
                " value(s) but the shape " + std::to_string(shape.size()) + "; give one per axis");
  return impl_->make_dense_field(type, name, 1, 1, shape, offset);
}

Field Program::vector_field(int n, DataType type, std::string_view name) {
  const auto lock = impl_->lock();
  return impl_->make_field(type, name, n, 1);
}

Field Program::vector_field(int n, DataType type, std::string_view name, Shape shape) {
  const auto lock = impl_->lock();
  return impl_->make_dense_field(type, name, n, 1, shape);
}

Field Program::matrix_field(int n, int m, DataType type, std::string_view name, Shape shape) {
  const auto lock = impl_->lock();
  return impl_->make_dense_field(type, name, n, m, shape);
}

SNode& Program::root() {
  const auto lock = impl_->lock();
  return impl_->root();
}

void Program::deactivate_all() {
  const std::shared_ptr<detail::ProgramImpl> held = impl_;  // the print sink may destroy this Program
  const auto lock = held->lock();
  held->host_access("Program::deactivate_all", held->label());
  // Every tree's own instance; instances of tree types are deactivated
  // through their Tree handles.
  for (int t = 0; t < held->forest().num_trees(); ++t) {
    const int root = held->forest().tree(t).root;
    if (root < 0 || !held->forest().tree(t).laid_out || held->is_tree_type(t)) continue;
    detail::TraceScope trace(*held, detail::HostOp::Kind::deactivate);
    if (detail::HostOp* op = trace.op()) op->snode = root;
    held->deactivate_all(root);
  }
}

void Program::sync() {
  const std::shared_ptr<detail::ProgramImpl> held = impl_;  // the print sink may destroy this Program
  const auto lock = held->lock();
  held->host_access("Program::sync", held->label());
  detail::TraceScope trace(*held, detail::HostOp::Kind::sync);
  held->context->sync();
}

Arch Program::arch() const { return impl_->arch; }
std::string Program::device_name() const { return impl_->context->device().name(); }
const Config& Program::config() const { return impl_->config; }
void Program::set_print_sink(std::function<void(std::string_view)> sink) {
  const auto lock = impl_->lock();
  impl_->print_sink = std::move(sink);
}

namespace {

// The profiler's tally, every launch finished (Program::profile...).
const rt::Profile& finished_profile(detail::ProgramImpl& p, const char* what) {
  p.host_access(what, p.label());
  if (!p.config.profile)
    throw Error(std::string(what) + ": " + p.label() + " is not profiled; set Config::profile (or GROVE_PROFILE=1)");
  p.context->sync();
  p.launches.reported();
  return p.context->profile();
}

}  // namespace

std::vector<TaskProfile> Program::profile() {
  const std::shared_ptr<detail::ProgramImpl> held = impl_;
  const auto lock = held->lock();
  std::vector<TaskProfile> out;
  for (const rt::TaskTally& t : finished_profile(*held, "Program::profile").tallies())
    out.push_back({t.kernel, t.task, t.label, t.count, t.total, t.min, t.max});
  return out;
}

std::string Program::profile_report() {
  const std::shared_ptr<detail::ProgramImpl> held = impl_;
  const auto lock = held->lock();
  return finished_profile(*held, "Program::profile_report").report(held->context->device().name());
}

void Program::clear_profile() {
  const std::shared_ptr<detail::ProgramImpl> held = impl_;
  const auto lock = held->lock();
  finished_profile(*held, "Program::clear_profile");
  held->context->clear_profile();
}

Stats Program::stats() const {
  const std::shared_ptr<detail::ProgramImpl> held = impl_;  // the print sink may destroy this Program
  const auto lock = held->lock();
  held->host_access("Program::stats", held->label());
  detail::TraceScope trace(*held, detail::HostOp::Kind::sync);
  held->context->sync();
  Stats st;
  const auto& forest = held->forest();
  // Every SNode of every tree but the tree types (Tree::stats): those of
  // trees laid out from their instance, the others (not in use yet) empty.
  std::unordered_map<int, rt::NodeStats> measured;
  for (int t = 0; t < forest.num_trees(); ++t) {
    const int instance = held->trees.own_instance(t);
    if (instance < 0) continue;
    for (rt::NodeStats& n : held->context->stats(instance)) measured[n.id] = n;
    st.tree_words += forest.tree(t).total_words;
  }
  for (int id = 0; id < forest.num_snodes(); ++id) {
    const ir::SNodeDecl& s = forest.snode(id);
    if (s.type == ir::SNodeType::place || held->is_tree_type(s.tree)) continue;
    SNodeStats ss;
    ss.id = id;
    ss.name = s.name();
    ss.kind = held->snodes.at(id).kind();
    if (auto it = measured.find(id); it != measured.end()) detail::copy_stats(it->second, ss);
    st.snodes.push_back(ss);
  }
  held->add_program_counts(st);
  return st;
}

// ---- tree types and trees ----------------------------------------------------

namespace {
std::shared_ptr<detail::ProgramImpl> lock_program(const std::weak_ptr<detail::ProgramImpl>& handle, int id,
                                                  const char* what) {
  if (id < 0) throw Error(std::string("this ") + what + " is empty; get one from Program::" +
                          (std::string_view(what) == "TreeType" ? "tree_type" : "instantiate"));
  std::shared_ptr<detail::ProgramImpl> p = handle.lock();
  if (!p)
    throw Error(std::string("this ") + what + " belongs to a Program that was destroyed; a " + what +
                " can be used only while its Program exists");
  return p;
}

Field field_of(const std::weak_ptr<detail::ProgramImpl>& program, const detail::TreeTypeRecord& t,
               std::string_view name, int instance, int tree_param) {
  auto it = t.fields.find(name);
  if (it == t.fields.end()) {
    std::string known;
    for (const auto& [n, f] : t.fields) known += (known.empty() ? "'" : ", '") + n + "'";
    throw Error("tree type '" + t.name + "' has no field named '" + std::string(name) + "' (it has " + known + ")");
  }
  return Field(program, it->second.ids, it->second.n, it->second.m, instance, tree_param);
}
}  // namespace

Field TreeTypeBuilder::field(DataType type, std::string_view name) { return vector_field(1, type, name); }
Field TreeTypeBuilder::vector_field(int n, DataType type, std::string_view name) { return matrix_field(n, 1, type, name); }
Field TreeTypeBuilder::matrix_field(int n, int m, DataType type, std::string_view name) {
  detail::TreeTypeRecord& t = program_->trees.type(type_);
  if (t.ready) throw Error("tree type '" + t.name + "' is complete; declare its fields inside Program::tree_type");
  if (name.empty()) throw Error("tree type '" + t.name + "': a field of a tree type needs a name");
  if (t.fields.count(name) != 0)
    throw Error("tree type '" + t.name + "' already has a field named '" + std::string(name) + "'");
  Field f = program_->make_field(type, t.name + "." + std::string(name), n, m);
  for (int id : f.component_ids()) program_->trees.set_declared_in(id, type_);
  t.fields[std::string(name)] = {f.component_ids(), n, m};
  return f;
}

SNode& TreeTypeBuilder::root() {
  return program_->snodes.at(program_->forest().tree(type_).root);
}

const std::string& TreeType::name() const {
  return lock_program(program_, id_, "TreeType")->tree_type(id_).name;
}

Field TreeType::field(std::string_view name) const {
  auto p = lock_program(program_, id_, "TreeType");
  const auto lock = p->lock();
  return field_of(program_, p->tree_type(id_), name, -1, -1);
}

detail::ProgramImpl* Tree::program() const {
  auto p = lock_program(program_, instance_, "Tree");
  if (!p->context->alive(instance_))
    throw Error("tree '" + name_ + "' was destroyed; a Tree can be used only "
                "until Tree::destroy");
  return p.get();
}

const std::string& Tree::name() const {
  program();  // raises for an empty, destroyed or dead handle
  return name_;
}

TreeType Tree::type() const {
  program();
  return TreeType(program_, type_);
}

Field Tree::field(std::string_view name) const {
  const auto held = lock_program(program_, instance_, "Tree");  // held and locked for the whole call
  const auto lock = held->lock();
  detail::ProgramImpl* p = program();
  return field_of(program_, p->tree_type(type_), name, instance_, -1);
}

void Tree::deactivate_all() const {
  const auto held = lock_program(program_, instance_, "Tree");  // held and locked for the whole call
  const auto lock = held->lock();
  detail::ProgramImpl* p = program();
  p->host_access("Tree::deactivate_all", name());
  detail::TraceScope trace(*p, detail::HostOp::Kind::deactivate);
  if (detail::HostOp* op = trace.op()) {
    op->snode = p->forest().tree(type_).root;
    op->instance = instance_;
  }
  p->deactivate_all(p->forest().tree(type_).root, instance_);
}

Stats Tree::stats() const {
  const auto held = lock_program(program_, instance_, "Tree");  // held and locked for the whole call
  const auto lock = held->lock();
  detail::ProgramImpl* p = program();
  p->host_access("Tree::stats", name());
  detail::TraceScope trace(*p, detail::HostOp::Kind::sync);
  p->context->sync();
  return p->instance_stats(type_, instance_);
}

void Tree::destroy() const {
  const auto held = lock_program(program_, instance_, "Tree");  // held and locked for the whole call
  const auto lock = held->lock();
  detail::ProgramImpl* p = program();
  p->host_access("Tree::destroy", name());
  p->context->sync();
  p->context->destroy_instance(instance_);
}

TreeType Program::tree_type(std::string_view name, const std::function<void(TreeTypeBuilder&)>& declare) {
  const auto lock = impl_->lock();
  return TreeType(impl_, impl_->make_tree_type(name, declare));
}

Tree Program::instantiate(const TreeType& type, std::string_view name) {
  const auto lock = impl_->lock();
  std::shared_ptr<detail::ProgramImpl> owner = lock_program(type.program_, type.id(), "TreeType");
  impl_->check_same_program(owner.get(), "tree type", [&] { return type.name(); }, "Program::instantiate");
  const int instance = impl_->instantiate(type.id(), name);
  return Tree(impl_, type.id(), instance, impl_->context->name_of(instance));
}

ArgSpec arg(const TreeType& type, std::string name) {
  type.name();  // raises for an empty handle or a destroyed Program
  return ArgSpec{DataType::unknown, std::move(name), type.id(), type.program_};
}

}  // namespace grove
