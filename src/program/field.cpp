// src/program/field.cpp — Field handles: metadata and host reads and writes.
#include <algorithm>
#include <cstring>

#include "grove/program.h"
#include "ir/eval.h"
#include "ir/interpreter.h"
#include "program/program_impl.h"
#include "runtime/core/field_walk.h"
#include "runtime/core/scalar.h"

namespace grove {

namespace {

// Host value (type `as`, at `src`) -> bits of the compute type of `field`'s
// type `to`. A value `to` cannot hold (300 for a u8, NaN or 2.5 for an i32)
// is refused, naming the field, by the rule kernel arguments follow
// (rt::argument_problem).
uint64_t host_to_bits(DataType as, const void* src, DataType to, const std::string& field) {
  std::string problem;
  const uint64_t bits = rt::host_value_bits(as, src, to, &problem);
  if (!problem.empty())
    throw Error("field '" + field + "' (" + std::string(type_name(to)) + ") was given " + problem +
                "; convert it on the host first");
  return bits;
}

void bits_to_host(DataType from, uint64_t bits, DataType as, void* dst) {
  uint64_t v = ir::eval_cast(from, as, bits);
  if (as == DataType::u1) {
    *static_cast<bool*>(dst) = v != 0;
    return;
  }
  __builtin_memcpy(dst, &v, static_cast<size_t>(bit_width(as) / 8));
}


}  // namespace

detail::ProgramImpl* Field::program() const { return hold().get(); }

std::shared_ptr<detail::ProgramImpl> Field::hold() const {
  if (ids_.empty()) throw Error("this Field is empty; get one from Program::field(...)");
  std::shared_ptr<detail::ProgramImpl> p = program_.lock();
  if (!p)
    throw Error("this Field belongs to a Program that was destroyed; a Field can be used only "
                "while its Program exists");
  return p;
}

std::string Field::name() const {
  const auto held = hold();
  const auto lock = held->lock();
  const std::string& first = held->field_decl(ids_[0]).name;
  // A vector or matrix field's components are named "<name>.<component>".
  return ids_.size() > 1 ? first.substr(0, first.rfind('.')) : first;
}

DataType Field::dtype() const {
  const auto held = hold();
  const auto lock = held->lock();
  return held->field_decl(ids_[0]).dtype;
}

Shape Field::shape() const {
  const auto held = hold();
  const auto lock = held->lock();
  return held->field_decl(ids_[0]).shape;
}

int Field::ndim() const { return static_cast<int>(shape().size()); }

bool Field::placed() const {
  const auto held = hold();
  const auto lock = held->lock();
  return held->forest().place_of(ids_[0]) >= 0;
}

int64_t Field::num_elements() const {
  int64_t n = 1;
  for (int64_t e : shape()) n *= e;  // at most 2^40 (SNodeForest::add_child)
  return n;
}

size_t Field::host_copy_bytes(size_t element_bytes) const {
  const int64_t elements = num_elements();
  const auto comps = static_cast<uint64_t>(components());
  // The host's memory bounds any copy (a field of a sparse tree may span far
  // more cells than are active).
  const uint64_t limit = detail::host_memory_bytes();
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(elements), comps * element_bytes, &bytes) || bytes > limit)
    throw Error("field '" + name() + "' has " + std::to_string(elements) + " elements; a host copy of all of "
                "them needs more than the " + std::to_string(limit >> 20) + " MiB of this machine's memory: "
                "read single elements with read(), or visit the active cells in a kernel with for_each");
  return static_cast<size_t>(bytes);
}

Field Field::operator[](int c) const {
  program();
  if (c < 0 || c >= components())
    throw Error("field '" + name() + "' has " + std::to_string(components()) +
                " components; component " + std::to_string(c) + " does not exist");
  return Field(program_, {ids_[static_cast<size_t>(c)]}, 1, 1, instance_, tree_param_);
}

static void require_scalar(const Field& f, const char* what) {
  if (f.components() != 1)
    throw Error(std::string(what) + " of field '" + f.name() + "' needs a scalar field; this one has " +
                std::to_string(f.components()) + " components: use f[c] for component c");
}

void Field::read_raw(std::initializer_list<int64_t> index, DataType as, void* out) const {
  const std::shared_ptr<detail::ProgramImpl> held = hold();
  const auto lock = held->lock();
  detail::ProgramImpl* p = held.get();
  p->host_access("Field::read", name());
  require_scalar(*this, "read");
  std::vector<int64_t> idx = p->check_index(ids_[0], index);
  const int instance = p->host_instance(*this);
  detail::TraceScope trace(*p, detail::HostOp::Kind::read);
  int64_t a = p->forest().find_element(ids_[0], p->physical_index(ids_[0], idx.data()).data(),
                                     [&](int64_t w) { return p->context->read_word(instance, w); });
  p->check_pools();
  DataType dt = dtype();
  uint64_t bits = 0;
  if (a >= 0) {
    uint32_t words[2] = {0, 0};
    p->context->read_words(instance, a, storage_words(dt), words);
    bits = ir::load_element(std::vector<uint32_t>(words, words + 2), 0, dt);
  }
  bits_to_host(compute_type(dt), bits, as, out);
  if (detail::HostOp* op = trace.op()) {
    op->fields = {ids_[0]};
    op->instance = instance_;
    op->index = idx;
    op->as = as;
    const auto* b = static_cast<const uint8_t*>(out);
    op->bytes.assign(b, b + rt::host_value_bytes(as));
  }
}

void Field::write_raw(std::initializer_list<int64_t> index, DataType as, const void* value) const {
  const std::shared_ptr<detail::ProgramImpl> held = hold();
  const auto lock = held->lock();
  detail::ProgramImpl* p = held.get();
  p->host_access("Field::write", name());
  require_scalar(*this, "write");
  std::vector<int64_t> idx = p->check_index(ids_[0], index);
  p->host_write(ids_[0], p->host_instance(*this), idx.data(), host_to_bits(as, value, dtype(), name()));
}

// Visits every element row-major: f(component number, element number, the
// user's index of the element, offset included).
template <typename F>
static void for_all_elements(detail::ProgramImpl* p, const std::vector<int>& ids, F&& f) {
  const ir::FieldDecl& d0 = p->field_decl(ids[0]);
  int64_t total = 1;
  for (int64_t e : d0.shape) total *= e;
  std::vector<int64_t> idx(ir::kMaxAxes, 0);
  for (size_t a = 0; a < d0.shape.size(); ++a) idx[a] = d0.offset_of(static_cast<int>(a));
  for (int64_t n = 0; n < total; ++n) {
    for (size_t c = 0; c < ids.size(); ++c) f(c, n, idx.data());
    for (size_t a = d0.shape.size(); a-- > 0;) {
      const int64_t first = d0.offset_of(static_cast<int>(a));
      if (++idx[a] < first + d0.shape[a]) break;
      idx[a] = first;
    }
  }
}

namespace detail {

const void* ProgramImpl::copy_field_out(const std::vector<int>& ids, int instance, DataType as,
                                        HostDestination out, size_t count) {
  const rt::TreeLayout& layout = forest_.layout(tree_of_field(ids[0]));
  std::vector<rt::FieldWalk> walks;
  for (int id : ids) walks.emplace_back(layout, id);
  HostWords::Lease lease = host_words.lease();
  const rt::Context::HostSpan words = context->host_span(instance, walks, lease.words(), false);
  check_pools();
  // (The components share their type.)
  return rt::copy_fields_out(walks, fields_.get(ids[0]).dtype, words.words, words.from, as, out, count);
}

void ProgramImpl::copy_field_in(const std::vector<int>& ids, int instance, const void* values, size_t value_bytes,
                                bool each) {
  const int tree = tree_of_field(ids[0]);
  // Value v (each: element n's component c is v = n * components + c).
  auto value = [&](size_t v) {
    uint64_t x = 0;
    std::memcpy(&x, static_cast<const unsigned char*>(values) + (each ? v : 0) * value_bytes, value_bytes);
    return x;
  };
  if (trace.recording()) {
    // The AOT round trip replays these as writes of single elements, which
    // is what grove_runtime has.
    for_all_elements(this, ids, [&](size_t c, int64_t n, const int64_t* idx) {
      TraceScope t(*this, HostOp::Kind::write);
      if (HostOp* op = t.op()) {
        op->fields = {ids[c]};
        op->instance = is_tree_type(tree) ? instance : -1;
        op->index.assign(idx, idx + field_decl(ids[c]).ndim());
        op->bits = {value(static_cast<size_t>(n) * ids.size() + c)};
      }
    });
  }
  const rt::TreeLayout& layout = forest_.layout(tree);
  std::vector<rt::FieldWalk> walks;
  std::vector<DataType> dtypes;
  for (int id : ids) {
    walks.emplace_back(layout, id);
    dtypes.push_back(field_decl(id).dtype);
  }
  HostWords::Lease lease = host_words.lease();
  std::optional<Tree> handle;  // (an ArgValue refers to it: it outlives the launches)
  context->store_fields(instance, walks, dtypes, values, value_bytes, each,
                        forest_.is_sparse_path(forest_.snode(forest_.place_of(ids[0])).parent), lease.words(),
                        [&](size_t c) {  // Grove's own kernel writes every element
                          ArgValue v(uint64_t{0});
                          v.type = compute_type(dtypes[c]);
                          v.bits = each ? 0 : value(0);
                          std::vector<ArgValue> args{v};
                          if (is_tree_type(tree)) {
                            if (!handle) handle.emplace(tree_handle(tree, instance));
                            args.emplace_back(*handle);
                          }
                          launch(filler_kernel(ids[c]), args);
                        });
}

}  // namespace detail

void Field::copy_out(DataType as, detail::HostDestination out) const {
  const size_t count = host_copy_bytes(rt::host_value_bytes(as)) / rt::host_value_bytes(as);
  const std::shared_ptr<detail::ProgramImpl> held = hold();
  const auto lock = held->lock();
  detail::ProgramImpl* p = held.get();
  p->host_access("Field::to_vector", name());
  for (int id : ids_) p->materialize_field(id, "the host");
  const int instance = p->host_instance(*this);  // components share one SNode, so one tree
  detail::TraceScope trace(*p, detail::HostOp::Kind::copy_out);
  const void* values = p->copy_field_out(ids_, instance, as, out, count);
  if (detail::HostOp* op = trace.op()) {
    const auto* bytes = static_cast<const unsigned char*>(values);
    op->fields = ids_;
    op->instance = instance_;
    op->as = as;
    op->bytes.assign(bytes, bytes + static_cast<size_t>(num_elements()) * ids_.size() * rt::host_value_bytes(as));
  }
}

void Field::copy_out_to(DataType as, void* out, size_t count) const {
  const size_t expected = static_cast<size_t>(num_elements()) * ids_.size();
  if (count != expected)
    throw Error("to_span on field '" + name() + "': the span holds " + std::to_string(count) +
                " values, the field " + std::to_string(expected) + " (num_elements() * components())");
  detail::Memory memory{out, rt::host_value_bytes(as)};
  copy_out(as, detail::memory_destination(memory));
}

void Field::copy_in(DataType as, const void* values, size_t count, const char* api) const {
  const std::shared_ptr<detail::ProgramImpl> held = hold();
  const auto lock = held->lock();
  detail::ProgramImpl* p = held.get();
  p->host_access(std::string("Field::") + api, name());
  size_t expected = static_cast<size_t>(num_elements()) * ids_.size();
  if (count != expected)
    throw Error(std::string(api) + " on field '" + name() + "': got " + std::to_string(count) +
                " values, the field holds " + std::to_string(expected));
  DataType dt = dtype();
  const auto* bytes = static_cast<const unsigned char*>(values);
  size_t sz = rt::host_value_bytes(as);
  for (int id : ids_) p->materialize_field(id, "the host");
  const int instance = p->host_instance(*this);
  // Values of the field's own type, in whole words, are its bits as they
  // are. Others are each checked, all before the first is stored.
  if (rt::host_values_are_words(as, dt)) {
    p->copy_field_in(ids_, instance, values, sz, true);
    return;
  }
  std::vector<uint64_t> bits(count);
  const std::string field = name();
  for (size_t v = 0; v < count; ++v) bits[v] = host_to_bits(as, bytes + v * sz, dt, field);
  p->copy_field_in(ids_, instance, bits.data(), 8, true);
}

void Field::fill_raw(DataType as, const void* value) const {
  const std::shared_ptr<detail::ProgramImpl> held = hold();
  const auto lock = held->lock();
  detail::ProgramImpl* p = held.get();
  p->host_access("Field::fill", name());
  const uint64_t bits = host_to_bits(as, value, dtype(), name());
  for (int id : ids_) p->materialize_field(id, "the host");
  p->copy_field_in(ids_, p->host_instance(*this), &bits, 8, false);
}

}  // namespace grove
