// runtime/aot/c_api.cpp: the C API of grove_runtime (grove/grove_runtime.h)
// over grove::runtime. Every entry point catches everything: errors become
// a grove_result and the thread's last-error message.
#include "grove/grove_runtime.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "grove/runtime.h"
#include "runtime/aot/module.h"
#include "runtime/core/assert.h"
#include "runtime/core/scalar.h"

struct grove_module {
  grove::runtime::Module module;
  std::vector<std::string> kernels, tree_types;
  std::string profile_report;  // grove_module_profile_report's last answer
};

struct grove_tree {
  grove::runtime::Tree tree;
};

namespace {

thread_local std::string last_error;

grove_result fail(grove_result code, const std::string& message) {
  last_error = message;
  return code;
}

// Runs `body`; a grove::Error that escapes it becomes `code` (KernelError
// always GROVE_ERROR_KERNEL, a module's FormatError GROVE_ERROR_FORMAT),
// anything else GROVE_ERROR_INTERNAL.
template <typename F>
grove_result guard(grove_result code, F&& body) {
  try {
    body();
    last_error.clear();
    return GROVE_OK;
  } catch (const grove::KernelError& e) {
    return fail(GROVE_ERROR_KERNEL, e.what());
  } catch (const grove::rt::aot::FormatError& e) {
    return fail(GROVE_ERROR_FORMAT, e.what());
  } catch (const grove::Error& e) {
    return fail(code, e.what());
  } catch (const grove::InternalError& e) {
    return fail(GROVE_ERROR_INTERNAL, std::string("internal error in Grove: ") + e.what());
  } catch (const std::bad_alloc&) {
    return fail(GROVE_ERROR_INTERNAL, "out of host memory");
  } catch (const std::exception& e) {
    return fail(GROVE_ERROR_INTERNAL, std::string("internal error in Grove: ") + e.what());
  } catch (...) {
    return fail(GROVE_ERROR_INTERNAL, "internal error in Grove: an unknown exception");
  }
}

bool null(const void* p, const char* what, const char* function, grove_result& result) {
  if (p != nullptr) return false;
  result = fail(GROVE_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + what + " is NULL");
  return true;
}

// The handles made and not yet released, so that a released (or made-up)
// handle is refused by every call instead of being used: a set lookup per
// call, under one lock shared by every thread. A handle is never read
// before it is found here.
std::mutex handles_mutex;
std::unordered_set<const void*>& live_handles() {
  static auto* set = new std::unordered_set<const void*>();  // outlives every static destructor
  return *set;
}
template <typename H>
H* enroll(H* h) {
  std::lock_guard lock(handles_mutex);
  live_handles().insert(h);
  return h;
}
bool retire(const void* h) {
  std::lock_guard lock(handles_mutex);
  return live_handles().erase(h) == 1;
}
bool live(const void* h) {
  std::lock_guard lock(handles_mutex);
  return live_handles().count(h) == 1;
}

constexpr const char* kReleased = "was released already (or was never made by this API)";

// NULL, released and made-up handles, each told by name.
bool bad(const void* handle, const char* what, const char* function, grove_result& result) {
  if (null(handle, what, function, result)) return true;
  if (live(handle)) return false;
  result = fail(GROVE_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + what + " " + kReleased);
  return true;
}

// grove_module_release and grove_tree_release: a second release sets the
// message and frees nothing.
template <typename H>
void release(H* handle, const char* what, const char* function) {
  if (handle == nullptr) return;
  if (!retire(handle)) {
    fail(GROVE_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + what + " " + kReleased);
    return;
  }
  delete handle;
}

bool host_type(int t, grove::DataType& out) {
  using grove::DataType;
  switch (t) {
    case GROVE_I8: out = DataType::i8; return true;
    case GROVE_I16: out = DataType::i16; return true;
    case GROVE_I32: out = DataType::i32; return true;
    case GROVE_I64: out = DataType::i64; return true;
    case GROVE_U8: out = DataType::u8; return true;
    case GROVE_U16: out = DataType::u16; return true;
    case GROVE_U32: out = DataType::u32; return true;
    case GROVE_U64: out = DataType::u64; return true;
    case GROVE_F32: out = DataType::f32; return true;
    case GROVE_F64: out = DataType::f64; return true;
    default: return false;
  }
}

grove::runtime::Options options_of(const grove_options* o) {
  grove::runtime::Options r;
  if (o == nullptr) return r;
  if (o->vulkan_device != nullptr) r.vulkan_device = o->vulkan_device;
  if (o->cuda_device != nullptr) r.cuda_device = o->cuda_device;
  r.validation = o->validation != 0;
  r.debug = o->debug != 0;
  r.profile = o->profile != 0;
  if (o->instance != nullptr || o->physical_device != nullptr || o->device != nullptr || o->queue != nullptr) {
    grove::runtime::VulkanHandles h;
    h.instance = o->instance;
    h.physical_device = o->physical_device;
    h.device = o->device;
    h.queue = o->queue;
    h.queue_family = o->queue_family;
    h.get_instance_proc_addr = o->get_instance_proc_addr;
    h.api_version = o->api_version;
    h.shader_int64 = o->shader_int64 != 0;
    h.shader_float64 = o->shader_float64 != 0;
    h.shader_int16 = o->shader_int16 != 0;
    h.storage_buffer_16bit = o->storage_buffer_16bit != 0;
    h.atomic_int64 = o->atomic_int64 != 0;
    r.external = h;
  }
  return r;
}

// A bad file (FormatError, raised before any device is opened) is told
// from a device that cannot run a good one.
grove_result load(std::span<const uint8_t> bytes, const std::string& source, const grove_options* options,
                  grove_module** out) {
  return guard(GROVE_ERROR_DEVICE, [&] {
    grove::runtime::Module m = grove::runtime::Module::load(bytes, source, options_of(options));
    auto* h = new grove_module{std::move(m), {}, {}};
    h->kernels = h->module.kernels();
    h->tree_types = h->module.tree_types();
    *out = enroll(h);
  });
}

bool has(const std::vector<std::string>& names, const char* name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

// The field's name checked first, so that a missing one is told apart.
grove_result check_field(const grove_tree* tree, const char* field, const char* function) {
  grove_result r = GROVE_OK;
  if (bad(tree, "the tree", function, r) || null(field, "the field name", function, r)) return r;
  return guard(GROVE_ERROR_NOT_FOUND, [&] { tree->tree.num_elements(field); });
}

}  // namespace

extern "C" {

const char* grove_last_error(void) { return last_error.c_str(); }

const char* grove_result_name(grove_result result) {
  switch (result) {
    case GROVE_OK: return "GROVE_OK";
    case GROVE_ERROR_INVALID_ARGUMENT: return "GROVE_ERROR_INVALID_ARGUMENT";
    case GROVE_ERROR_NOT_FOUND: return "GROVE_ERROR_NOT_FOUND";
    case GROVE_ERROR_IO: return "GROVE_ERROR_IO";
    case GROVE_ERROR_FORMAT: return "GROVE_ERROR_FORMAT";
    case GROVE_ERROR_DEVICE: return "GROVE_ERROR_DEVICE";
    case GROVE_ERROR_KERNEL: return "GROVE_ERROR_KERNEL";
    case GROVE_ERROR_INTERNAL: return "GROVE_ERROR_INTERNAL";
  }
  return "GROVE_ERROR_UNKNOWN";
}

grove_result grove_module_load(const char* path, const grove_options* options, grove_module** out) {
  grove_result r = GROVE_OK;
  if (null(path, "the path", "grove_module_load", r) || null(out, "out", "grove_module_load", r)) return r;
  *out = nullptr;
  std::vector<uint8_t> bytes;
  r = guard(GROVE_ERROR_IO, [&] { bytes = grove::rt::aot::read_file(path); });
  if (r != GROVE_OK) return r;
  return load(bytes, "module '" + std::string(path) + "'", options, out);
}

grove_result grove_module_load_bytes(const void* bytes, size_t size, const char* source, const grove_options* options,
                                     grove_module** out) {
  grove_result r = GROVE_OK;
  if (null(bytes, "the bytes", "grove_module_load_bytes", r) || null(out, "out", "grove_module_load_bytes", r))
    return r;
  *out = nullptr;
  const auto* b = static_cast<const uint8_t*>(bytes);
  return load({b, size}, source != nullptr ? source : "module bytes", options, out);
}

void grove_module_release(grove_module* module) { release(module, "the module", "grove_module_release"); }

grove_result grove_module_kernel_count(const grove_module* module, size_t* count) {
  grove_result r = GROVE_OK;
  if (bad(module, "the module", "grove_module_kernel_count", r) || null(count, "count", "grove_module_kernel_count", r))
    return r;
  *count = module->kernels.size();
  return GROVE_OK;
}

grove_result grove_module_kernel_name(const grove_module* module, size_t i, const char** name) {
  grove_result r = GROVE_OK;
  if (bad(module, "the module", "grove_module_kernel_name", r) || null(name, "name", "grove_module_kernel_name", r))
    return r;
  if (i >= module->kernels.size())
    return fail(GROVE_ERROR_INVALID_ARGUMENT, "grove_module_kernel_name: kernel " + std::to_string(i) +
                                                  " of a module with " + std::to_string(module->kernels.size()));
  *name = module->kernels[i].c_str();
  return GROVE_OK;
}

grove_result grove_module_tree_type_count(const grove_module* module, size_t* count) {
  grove_result r = GROVE_OK;
  if (bad(module, "the module", "grove_module_tree_type_count", r) ||
      null(count, "count", "grove_module_tree_type_count", r))
    return r;
  *count = module->tree_types.size();
  return GROVE_OK;
}

grove_result grove_module_tree_type_name(const grove_module* module, size_t i, const char** name) {
  grove_result r = GROVE_OK;
  if (bad(module, "the module", "grove_module_tree_type_name", r) ||
      null(name, "name", "grove_module_tree_type_name", r))
    return r;
  if (i >= module->tree_types.size())
    return fail(GROVE_ERROR_INVALID_ARGUMENT, "grove_module_tree_type_name: tree type " + std::to_string(i) +
                                                  " of a module with " + std::to_string(module->tree_types.size()));
  *name = module->tree_types[i].c_str();
  return GROVE_OK;
}

grove_result grove_module_instantiate(grove_module* module, const char* type, const char* name, grove_tree** out) {
  grove_result r = GROVE_OK;
  if (bad(module, "the module", "grove_module_instantiate", r) ||
      null(type, "the tree type", "grove_module_instantiate", r) || null(out, "out", "grove_module_instantiate", r))
    return r;
  *out = nullptr;
  if (!has(module->tree_types, type))
    return fail(GROVE_ERROR_NOT_FOUND, "the module has no tree type '" + std::string(type) + "' (it has: " +
                                           list(module->tree_types) + ")");
  return guard(GROVE_ERROR_DEVICE, [&] {
    grove::runtime::Tree t = module->module.instantiate(type, name != nullptr ? name : "");
    *out = enroll(new grove_tree{std::move(t)});
  });
}

grove_result grove_module_tree(grove_module* module, const char* type, grove_tree** out) {
  grove_result r = GROVE_OK;
  if (bad(module, "the module", "grove_module_tree", r) || null(type, "the tree type", "grove_module_tree", r) ||
      null(out, "out", "grove_module_tree", r))
    return r;
  *out = nullptr;
  if (!has(module->tree_types, type))
    return fail(GROVE_ERROR_NOT_FOUND, "the module has no tree type '" + std::string(type) + "' (it has: " +
                                           list(module->tree_types) + ")");
  return guard(GROVE_ERROR_INVALID_ARGUMENT, [&] { *out = enroll(new grove_tree{module->module.tree(type)}); });
}

void grove_tree_release(grove_tree* tree) { release(tree, "the tree", "grove_tree_release"); }

grove_arg grove_arg_i32(int32_t v) {
  grove_arg a{GROVE_I32, {}};
  a.value.i = v;
  return a;
}
grove_arg grove_arg_i64(int64_t v) {
  grove_arg a{GROVE_I64, {}};
  a.value.i = v;
  return a;
}
grove_arg grove_arg_u32(uint32_t v) {
  grove_arg a{GROVE_U32, {}};
  a.value.u = v;
  return a;
}
grove_arg grove_arg_u64(uint64_t v) {
  grove_arg a{GROVE_U64, {}};
  a.value.u = v;
  return a;
}
grove_arg grove_arg_f32(float v) {
  grove_arg a{GROVE_F32, {}};
  a.value.f = v;
  return a;
}
grove_arg grove_arg_f64(double v) {
  grove_arg a{GROVE_F64, {}};
  a.value.f = v;
  return a;
}
grove_arg grove_arg_tree(const grove_tree* tree) {
  grove_arg a{0, {}};
  a.value.tree = tree;
  return a;
}

grove_result grove_module_launch(grove_module* module, const char* kernel, const grove_arg* args, size_t count) {
  grove_result r = GROVE_OK;
  if (bad(module, "the module", "grove_module_launch", r) || null(kernel, "the kernel name", "grove_module_launch", r) ||
      (count > 0 && null(args, "args", "grove_module_launch", r)))
    return r;
  if (!has(module->kernels, kernel))
    return fail(GROVE_ERROR_NOT_FOUND,
                "the module has no kernel '" + std::string(kernel) + "' (it has: " + list(module->kernels) + ")");
  std::vector<grove::runtime::Arg> a;
  for (size_t i = 0; i < count; ++i) {
    const grove_arg& g = args[i];
    const std::string which = "grove_module_launch('" + std::string(kernel) + "'): argument " + std::to_string(i);
    if (g.type == 0) {
      if (g.value.tree == nullptr) return fail(GROVE_ERROR_INVALID_ARGUMENT, which + " is a NULL tree");
      if (!live(g.value.tree)) return fail(GROVE_ERROR_INVALID_ARGUMENT, which + " is a tree that " + kReleased);
      a.emplace_back(g.value.tree->tree);
      continue;
    }
    grove::DataType t{};
    if (!host_type(g.type, t))
      return fail(GROVE_ERROR_INVALID_ARGUMENT, which + " has type code " + std::to_string(g.type) +
                                                    ", which is no grove_type (use grove_arg_i32(...) and the like)");
    // The union member a type reads (i, u or f) must hold a value of that
    // type, by the rule every host value follows: a grove_arg made by hand
    // with .type = GROVE_I8 and .value.i = 300 is refused, not wrapped to 44.
    // The runtime then converts the member's value to the kernel's type.
    const bool is_f = grove::is_float(t), is_i = !is_f && grove::is_signed(t);
    const grove::runtime::Arg held = is_f ? grove::runtime::Arg(g.value.f)
                                     : is_i ? grove::runtime::Arg(g.value.i)
                                            : grove::runtime::Arg(g.value.u);
    if (const std::string problem = grove::rt::argument_problem(held.type, held.bits, t); !problem.empty())
      return fail(GROVE_ERROR_INVALID_ARGUMENT,
                  which + " is of type " + std::string(grove::type_name(t)) + " but holds " + problem +
                      ": make grove_args with grove_arg_i32(...) and the like, or pass a wider type");
    a.push_back(held);
  }
  return guard(GROVE_ERROR_INVALID_ARGUMENT, [&] { module->module.launch(kernel, a); });
}

grove_result grove_module_sync(grove_module* module) {
  grove_result r = GROVE_OK;
  if (bad(module, "the module", "grove_module_sync", r)) return r;
  return guard(GROVE_ERROR_DEVICE, [&] { module->module.sync(); });
}

grove_result grove_module_profile_report(grove_module* module, const char** report) {
  grove_result r = GROVE_OK;
  if (bad(module, "the module", "grove_module_profile_report", r) ||
      null(report, "report", "grove_module_profile_report", r))
    return r;
  return guard(GROVE_ERROR_INVALID_ARGUMENT, [&] {
    module->profile_report = module->module.profile_report();
    *report = module->profile_report.c_str();
  });
}

grove_result grove_tree_read(const grove_tree* tree, const char* field, const int64_t* index, size_t count,
                             grove_type as, void* out) {
  grove_result r = check_field(tree, field, "grove_tree_read");
  if (r != GROVE_OK) return r;
  grove::DataType t{};
  if (null(out, "out", "grove_tree_read", r) || (count > 0 && null(index, "the index", "grove_tree_read", r))) return r;
  if (!host_type(as, t)) return fail(GROVE_ERROR_INVALID_ARGUMENT, "grove_tree_read: 'as' is no grove_type");
  return guard(GROVE_ERROR_INVALID_ARGUMENT, [&] { tree->tree.read_raw(field, {index, count}, t, out); });
}

grove_result grove_tree_write(const grove_tree* tree, const char* field, const int64_t* index, size_t count,
                              grove_type as, const void* value) {
  grove_result r = check_field(tree, field, "grove_tree_write");
  if (r != GROVE_OK) return r;
  grove::DataType t{};
  if (null(value, "value", "grove_tree_write", r) || (count > 0 && null(index, "the index", "grove_tree_write", r)))
    return r;
  if (!host_type(as, t)) return fail(GROVE_ERROR_INVALID_ARGUMENT, "grove_tree_write: 'as' is no grove_type");
  return guard(GROVE_ERROR_INVALID_ARGUMENT, [&] { tree->tree.write_raw(field, {index, count}, t, value); });
}

grove_result grove_tree_num_elements(const grove_tree* tree, const char* field, int64_t* count) {
  grove_result r = check_field(tree, field, "grove_tree_num_elements");
  if (r != GROVE_OK || null(count, "count", "grove_tree_num_elements", r)) return r;
  return guard(GROVE_ERROR_INVALID_ARGUMENT, [&] { *count = tree->tree.num_elements(field); });
}

grove_result grove_tree_copy_out(const grove_tree* tree, const char* field, grove_type as, void* out,
                                 int64_t capacity) {
  grove_result r = check_field(tree, field, "grove_tree_copy_out");
  if (r != GROVE_OK || null(out, "out", "grove_tree_copy_out", r)) return r;
  grove::DataType t{};
  if (!host_type(as, t)) return fail(GROVE_ERROR_INVALID_ARGUMENT, "grove_tree_copy_out: 'as' is no grove_type");
  return guard(GROVE_ERROR_INVALID_ARGUMENT, [&] {
    const int64_t n = tree->tree.num_elements(field);
    if (capacity < n)
      throw grove::Error("grove_tree_copy_out: field '" + std::string(field) + "' has " + std::to_string(n) +
                         " elements; 'out' has room for " + std::to_string(capacity));
    tree->tree.copy_out(field, t, out);
  });
}

grove_result grove_tree_copy_in(const grove_tree* tree, const char* field, grove_type as, const void* values,
                                int64_t count) {
  grove_result r = check_field(tree, field, "grove_tree_copy_in");
  if (r != GROVE_OK || null(values, "values", "grove_tree_copy_in", r)) return r;
  grove::DataType t{};
  if (!host_type(as, t)) return fail(GROVE_ERROR_INVALID_ARGUMENT, "grove_tree_copy_in: 'as' is no grove_type");
  if (count < 0) return fail(GROVE_ERROR_INVALID_ARGUMENT, "grove_tree_copy_in: 'count' is negative");
  return guard(GROVE_ERROR_INVALID_ARGUMENT,
               [&] { tree->tree.copy_in(field, t, values, static_cast<size_t>(count), true, "from_vector"); });
}

grove_result grove_tree_fill(const grove_tree* tree, const char* field, grove_type as, const void* value) {
  grove_result r = check_field(tree, field, "grove_tree_fill");
  if (r != GROVE_OK || null(value, "value", "grove_tree_fill", r)) return r;
  grove::DataType t{};
  if (!host_type(as, t)) return fail(GROVE_ERROR_INVALID_ARGUMENT, "grove_tree_fill: 'as' is no grove_type");
  return guard(GROVE_ERROR_INVALID_ARGUMENT, [&] { tree->tree.copy_in(field, t, value, 1, false, "fill"); });
}

grove_result grove_tree_deactivate_all(const grove_tree* tree) {
  grove_result r = GROVE_OK;
  if (bad(tree, "the tree", "grove_tree_deactivate_all", r)) return r;
  return guard(GROVE_ERROR_DEVICE, [&] { tree->tree.deactivate_all(); });
}

}  // extern "C"
