// src/spirv/module.cpp — the SPIR-V module builder: sections, caches, function writer.
#include "spirv/module.h"

#include <bit>
#include <cmath>
#include <source_location>

#include "ir/assert.h"

namespace grove::spirv {
namespace {

void check(bool cond, std::string_view msg, std::source_location loc = std::source_location::current()) {
  if (!cond) {
    throw InternalError(std::string(loc.file_name()) + ":" + std::to_string(loc.line()) +
                        ": SPIR-V builder: " + std::string(msg));
  }
}

// Appends one instruction: word count and opcode, then the operands.
void put(std::vector<uint32_t>& out, spv::Op op, const std::vector<uint32_t>& operands) {
  const size_t count = operands.size() + 1;
  check(count <= 0xffff, "instruction too long");
  out.push_back((static_cast<uint32_t>(count) << 16) | word(op));
  out.insert(out.end(), operands.begin(), operands.end());
}

// A literal string: UTF-8 bytes, the first in the lowest-order byte of a
// word, nul-terminated and padded with zero bytes to a word boundary.
void append_string(std::vector<uint32_t>& out, std::string_view s) {
  const size_t words = s.size() / 4 + 1;  // always room for the terminating nul
  const size_t start = out.size();
  out.resize(start + words, 0);
  for (size_t i = 0; i < s.size(); ++i) {
    out[start + i / 4] |= static_cast<uint32_t>(static_cast<unsigned char>(s[i])) << (8 * (i % 4));
  }
}

bool is_terminator(spv::Op op) {
  switch (op) {
    case spv::Op::OpBranch:
    case spv::Op::OpBranchConditional:
    case spv::Op::OpSwitch:
    case spv::Op::OpReturn:
    case spv::Op::OpReturnValue:
    case spv::Op::OpUnreachable:
    case spv::Op::OpKill:
    case spv::Op::OpTerminateInvocation:
      return true;
    default:
      return false;
  }
}

}  // namespace

Module::Module(ModuleOptions options) : options_(options) {
  check(options_.version >= version_word(1, 0) && options_.version <= version_word(1, 6) &&
            (options_.version & 0xff0000ffu) == 0,
        "unsupported SPIR-V version word");
  // OpMemoryModel GLSL450 (written by finish) needs Shader.
  require_capability(spv::Capability::Shader);
}

// --- Capabilities, extensions, imports ------------------------------------

void Module::require_capability(spv::Capability capability) {
  if (capability_set_.insert(capability).second) capabilities_.push_back(capability);
}

void Module::require_extension(std::string_view name) {
  if (extension_set_.insert(std::string(name)).second) extensions_.emplace_back(name);
}

Id Module::glsl_std_450() {
  if (glsl_std_450_ == 0) {
    glsl_std_450_ = new_id();
    std::vector<uint32_t> ops{glsl_std_450_};
    append_string(ops, "GLSL.std.450");
    put(ext_inst_imports_, spv::Op::OpExtInstImport, ops);
  }
  return glsl_std_450_;
}

// --- Debug names and annotations ------------------------------------------

void Module::name(Id target, std::string_view name) {
  std::vector<uint32_t> ops{target};
  append_string(ops, name);
  put(debug_names_, spv::Op::OpName, ops);
}

void Module::member_name(Id struct_type, uint32_t member, std::string_view name) {
  std::vector<uint32_t> ops{struct_type, member};
  append_string(ops, name);
  put(debug_names_, spv::Op::OpMemberName, ops);
}

void Module::decorate(Id target, spv::Decoration decoration, std::initializer_list<uint32_t> literals) {
  std::vector<uint32_t> ops{target, word(decoration)};
  ops.insert(ops.end(), literals.begin(), literals.end());
  put(annotations_, spv::Op::OpDecorate, ops);
}

void Module::member_decorate(Id struct_type, uint32_t member, spv::Decoration decoration,
                             std::initializer_list<uint32_t> literals) {
  std::vector<uint32_t> ops{struct_type, member, word(decoration)};
  ops.insert(ops.end(), literals.begin(), literals.end());
  put(annotations_, spv::Op::OpMemberDecorate, ops);
}

// --- Types -----------------------------------------------------------------

Id Module::get_or_add_type(spv::Op op, std::vector<uint32_t> operands, TypeInfo info,
                           const std::vector<uint32_t>& extra_key) {
  std::vector<uint32_t> key{word(op)};
  key.insert(key.end(), operands.begin(), operands.end());
  key.push_back(~0u);  // separates the operands from the decoration key
  key.insert(key.end(), extra_key.begin(), extra_key.end());
  auto it = type_cache_.find(key);
  if (it != type_cache_.end()) return it->second;
  const Id id = new_id();
  operands.insert(operands.begin(), id);
  put(globals_, op, operands);
  info.op = op;
  types_.emplace(id, std::move(info));
  type_cache_.emplace(std::move(key), id);
  return id;
}

Id Module::type_void() { return get_or_add_type(spv::Op::OpTypeVoid, {}, {}); }

Id Module::type_bool() { return get_or_add_type(spv::Op::OpTypeBool, {}, {}); }

Id Module::type_int(uint32_t width, bool is_signed) {
  switch (width) {
    case 8: require_capability(spv::Capability::Int8); break;
    case 16: require_capability(spv::Capability::Int16); break;
    case 32: break;
    case 64: require_capability(spv::Capability::Int64); break;
    default: check(false, "integer width must be 8, 16, 32 or 64");
  }
  TypeInfo info;
  info.width = width;
  info.is_signed = is_signed;
  return get_or_add_type(spv::Op::OpTypeInt, {width, is_signed ? 1u : 0u}, std::move(info));
}

Id Module::type_float(uint32_t width) {
  switch (width) {
    case 16: require_capability(spv::Capability::Float16); break;
    case 32: break;
    case 64: require_capability(spv::Capability::Float64); break;
    default: check(false, "float width must be 16, 32 or 64");
  }
  TypeInfo info;
  info.width = width;
  return get_or_add_type(spv::Op::OpTypeFloat, {width}, std::move(info));
}

bool Module::has_type_float(uint32_t width) const {
  return type_cache_.count({word(spv::Op::OpTypeFloat), width, ~0u}) != 0;
}

Id Module::type_vector(Id component, uint32_t count) {
  const spv::Op c = type_op(component);
  check(c == spv::Op::OpTypeInt || c == spv::Op::OpTypeFloat || c == spv::Op::OpTypeBool,
        "vector component must be a scalar");
  check(count >= 2 && count <= 4, "vector size must be 2, 3 or 4");
  TypeInfo info;
  info.element = component;
  info.count = count;
  return get_or_add_type(spv::Op::OpTypeVector, {component, count}, std::move(info));
}

uint32_t Module::narrow_widths(Id type) const {
  const TypeInfo& i = info(type);
  switch (i.op) {
    case spv::Op::OpTypeInt:
    case spv::Op::OpTypeFloat:
      return i.width == 8 ? 1u : i.width == 16 ? 2u : 0u;
    case spv::Op::OpTypeVector:
    case spv::Op::OpTypeArray:
    case spv::Op::OpTypeRuntimeArray:
      return narrow_widths(i.element);
    case spv::Op::OpTypeStruct: {
      uint32_t bits = 0;
      for (Id m : i.members) bits |= narrow_widths(m);
      return bits;
    }
    default:
      return 0;
  }
}

void Module::require_narrow_storage(spv::StorageClass storage, Id pointee) {
  const uint32_t bits = narrow_widths(pointee);
  if (bits == 0) return;
  using C = spv::Capability;
  std::optional<C> cap8, cap16;
  switch (storage) {
    case spv::StorageClass::StorageBuffer:
      cap8 = C::StorageBuffer8BitAccess;
      cap16 = C::StorageBuffer16BitAccess;
      break;
    case spv::StorageClass::Uniform:
      cap8 = C::UniformAndStorageBuffer8BitAccess;
      cap16 = C::UniformAndStorageBuffer16BitAccess;
      break;
    case spv::StorageClass::PushConstant:
      cap8 = C::StoragePushConstant8;
      cap16 = C::StoragePushConstant16;
      break;
    case spv::StorageClass::Input:
    case spv::StorageClass::Output: cap16 = C::StorageInputOutput16; break;
    default: return;  // Function, Private, Workgroup: the Int8/Int16/Float16 type capability suffices
  }
  if ((bits & 1u) != 0) {
    check(cap8.has_value(), "8-bit values cannot be stored in this storage class");
    require_capability(*cap8);
    if (options_.version < version_word(1, 5)) require_extension("SPV_KHR_8bit_storage");
  }
  if ((bits & 2u) != 0 && cap16) {
    require_capability(*cap16);
    if (options_.version < version_word(1, 3)) require_extension("SPV_KHR_16bit_storage");
  }
}

Id Module::type_pointer(spv::StorageClass storage, Id pointee) {
  info(pointee);  // must be a type made here
  if (storage == spv::StorageClass::StorageBuffer && options_.version < version_word(1, 3)) {
    require_extension("SPV_KHR_storage_buffer_storage_class");
  }
  require_narrow_storage(storage, pointee);
  TypeInfo info;
  info.element = pointee;
  info.storage = storage;
  return get_or_add_type(spv::Op::OpTypePointer, {word(storage), pointee}, std::move(info));
}

Id Module::type_array(Id element, Id length, uint32_t array_stride) {
  info(element);
  check(int_constant_value(length).has_value(), "array length must be an integer constant");
  const size_t before = type_cache_.size();
  TypeInfo info;
  info.element = element;
  const Id id = get_or_add_type(spv::Op::OpTypeArray, {element, length}, std::move(info), {array_stride});
  if (type_cache_.size() != before && array_stride != 0) {
    decorate(id, spv::Decoration::ArrayStride, {array_stride});
  }
  return id;
}

Id Module::type_runtime_array(Id element, uint32_t array_stride) {
  info(element);
  check(array_stride != 0, "a runtime array (in a buffer) needs an ArrayStride");
  const size_t before = type_cache_.size();
  TypeInfo info;
  info.element = element;
  const Id id = get_or_add_type(spv::Op::OpTypeRuntimeArray, {element}, std::move(info), {array_stride});
  if (type_cache_.size() != before) decorate(id, spv::Decoration::ArrayStride, {array_stride});
  return id;
}

Id Module::type_struct(std::vector<Id> members) {
  for (Id m : members) info(m);
  TypeInfo info;
  info.members = members;
  return get_or_add_type(spv::Op::OpTypeStruct, std::move(members), std::move(info));
}

Id Module::type_block(std::vector<Id> members, std::vector<uint32_t> offsets) {
  check(members.size() == offsets.size(), "a Block struct needs one Offset per member");
  for (Id m : members) info(m);
  std::vector<uint32_t> extra{word(spv::Decoration::Block)};
  extra.insert(extra.end(), offsets.begin(), offsets.end());
  const size_t before = type_cache_.size();
  TypeInfo info;
  info.members = members;
  const Id id = get_or_add_type(spv::Op::OpTypeStruct, members, std::move(info), extra);
  if (type_cache_.size() != before) {
    decorate(id, spv::Decoration::Block);
    for (uint32_t i = 0; i < offsets.size(); ++i) {
      member_decorate(id, i, spv::Decoration::Offset, {offsets[i]});
    }
  }
  return id;
}

Id Module::type_function(Id return_type, std::vector<Id> params) {
  info(return_type);
  for (Id p : params) info(p);
  std::vector<uint32_t> operands{return_type};
  operands.insert(operands.end(), params.begin(), params.end());
  TypeInfo info;
  info.element = return_type;
  info.members = std::move(params);
  return get_or_add_type(spv::Op::OpTypeFunction, std::move(operands), std::move(info));
}

// --- Constants ---------------------------------------------------------------

Id Module::get_or_add_constant(spv::Op op, Id type, std::vector<uint32_t> operands) {
  std::vector<uint32_t> key{word(op), type};
  key.insert(key.end(), operands.begin(), operands.end());
  auto it = constant_cache_.find(key);
  if (it != constant_cache_.end()) return it->second;
  const Id id = new_id();
  operands.insert(operands.begin(), {type, id});
  put(globals_, op, operands);
  value_types_.emplace(id, type);
  constant_cache_.emplace(std::move(key), id);
  return id;
}

Id Module::constant_bool(bool value) {
  return get_or_add_constant(value ? spv::Op::OpConstantTrue : spv::Op::OpConstantFalse, type_bool(), {});
}

Id Module::constant_int(Id type, uint64_t bits) {
  check(type_op(type) == spv::Op::OpTypeInt, "constant_int needs an integer type");
  const uint32_t width = type_width(type);
  if (width < 64) bits &= (uint64_t{1} << width) - 1;
  std::vector<uint32_t> words;
  if (width == 64) {
    words = {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)};
  } else {
    uint32_t w = static_cast<uint32_t>(bits);
    // Narrow signed literals are sign-extended to the full word.
    if (width < 32 && type_is_signed(type) && (w >> (width - 1)) != 0) w |= ~((1u << width) - 1);
    words = {w};
  }
  const Id id = get_or_add_constant(spv::Op::OpConstant, type, std::move(words));
  int_constants_[id] = bits;
  return id;
}

Id Module::constant_f32(float value) {
  const Id id = get_or_add_constant(spv::Op::OpConstant, type_float(32), {std::bit_cast<uint32_t>(value)});
  if (value == 0.0f) float_zero_constants_[id] = std::signbit(value) ? -1 : 1;
  return id;
}

Id Module::constant_f64(double value) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const Id id = get_or_add_constant(spv::Op::OpConstant, type_float(64),
                                    {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)});
  if (value == 0.0) float_zero_constants_[id] = std::signbit(value) ? -1 : 1;
  return id;
}

int Module::float_zero_sign(Id constant) const {
  auto it = float_zero_constants_.find(constant);
  return it == float_zero_constants_.end() ? 0 : it->second;
}

Id Module::constant_float(Id type, double value) {
  check(type_op(type) == spv::Op::OpTypeFloat, "constant_float needs a float type");
  switch (type_width(type)) {
    case 32: return constant_f32(static_cast<float>(value));
    case 64: return constant_f64(value);
    default: check(false, "constant_float supports 32- and 64-bit floats only"); return 0;
  }
}

Id Module::constant_null(Id type) {
  info(type);
  return get_or_add_constant(spv::Op::OpConstantNull, type, {});
}

Id Module::constant_composite(Id type, std::vector<Id> constituents) {
  info(type);
  return get_or_add_constant(spv::Op::OpConstantComposite, type, std::move(constituents));
}

std::optional<uint64_t> Module::int_constant_value(Id constant) const {
  auto it = int_constants_.find(constant);
  if (it == int_constants_.end()) return std::nullopt;
  return it->second;
}

// --- Global variables ----------------------------------------------------

Id Module::global_variable(Id pointee, spv::StorageClass storage, Id initializer) {
  check(storage != spv::StorageClass::Function, "Function variables are made by local_variable()");
  const Id pointer = type_pointer(storage, pointee);
  const Id id = new_id();
  std::vector<uint32_t> ops{pointer, id, word(storage)};
  if (initializer != 0) ops.push_back(initializer);
  put(globals_, spv::Op::OpVariable, ops);
  value_types_.emplace(id, pointer);
  variable_storage_.emplace(id, storage);
  global_vars_.push_back(id);
  return id;
}

Id Module::builtin_input(spv::BuiltIn builtin, Id pointee) {
  auto it = builtins_.find(builtin);
  if (it != builtins_.end()) {
    check(pointee_type(type_of(it->second)) == pointee, "builtin declared twice with different types");
    return it->second;
  }
  const Id id = global_variable(pointee, spv::StorageClass::Input);
  decorate(id, spv::Decoration::BuiltIn, {word(builtin)});
  builtins_.emplace(builtin, id);
  return id;
}

Id Module::storage_buffer(Id block, uint32_t set, uint32_t binding) {
  check(type_op(block) == spv::Op::OpTypeStruct, "a storage buffer's type must be a Block struct");
  const Id id = global_variable(block, spv::StorageClass::StorageBuffer);
  decorate(id, spv::Decoration::DescriptorSet, {set});
  decorate(id, spv::Decoration::Binding, {binding});
  return id;
}

// --- Type queries ------------------------------------------------------------

const Module::TypeInfo& Module::info(Id type) const {
  auto it = types_.find(type);
  check(it != types_.end(), "id " + std::to_string(type) + " is not a type made by this module");
  return it->second;
}

Id Module::type_of(Id value) const {
  auto it = value_types_.find(value);
  return it == value_types_.end() ? 0 : it->second;
}

spv::Op Module::type_op(Id type) const { return info(type).op; }

uint32_t Module::type_width(Id scalar_type) const { return info(scalar_type).width; }

bool Module::type_is_signed(Id int_type) const { return info(int_type).is_signed; }

Id Module::pointee_type(Id pointer_type) const {
  const TypeInfo& i = info(pointer_type);
  check(i.op == spv::Op::OpTypePointer, "not a pointer type");
  return i.element;
}

spv::StorageClass Module::pointer_storage(Id pointer_type) const {
  const TypeInfo& i = info(pointer_type);
  check(i.op == spv::Op::OpTypePointer, "not a pointer type");
  return i.storage;
}

Id Module::element_type(Id type) const {
  const TypeInfo& i = info(type);
  check(i.op == spv::Op::OpTypeVector || i.op == spv::Op::OpTypeArray || i.op == spv::Op::OpTypeRuntimeArray,
        "not a vector or array type");
  return i.element;
}

uint32_t Module::vector_size(Id type) const {
  const TypeInfo& i = info(type);
  return i.op == spv::Op::OpTypeVector ? i.count : 0;
}

// --- Entry points and execution modes ----------------------------------------

void Module::entry_point(spv::ExecutionModel model, Id function, std::string_view name,
                         std::span<const Id> interface) {
  std::vector<uint32_t> ops{word(model), function};
  append_string(ops, name);
  const bool all_globals = options_.version >= version_word(1, 4);
  std::set<Id> seen;
  for (Id var : interface) {
    if (!seen.insert(var).second) continue;
    auto it = variable_storage_.find(var);
    check(it != variable_storage_.end(), "entry point interface lists a non-variable");
    const bool io = it->second == spv::StorageClass::Input || it->second == spv::StorageClass::Output;
    if (io || all_globals) ops.push_back(var);
  }
  put(entry_points_, spv::Op::OpEntryPoint, ops);
}

void Module::execution_mode(Id entry, spv::ExecutionMode mode, std::initializer_list<uint32_t> literals) {
  std::vector<uint32_t> ops{entry, word(mode)};
  ops.insert(ops.end(), literals.begin(), literals.end());
  put(execution_modes_, spv::Op::OpExecutionMode, ops);
}

void Module::local_size(Id entry, uint32_t x, uint32_t y, uint32_t z) {
  execution_mode(entry, spv::ExecutionMode::LocalSize, {x, y, z});
}

// --- Functions -----------------------------------------------------------------

Id Module::begin_function(Id return_type, std::vector<Id> param_types, spv::FunctionControlMask control) {
  check(!function_, "begin_function inside another function");
  const Id fn_type = type_function(return_type, param_types);
  Function f;
  f.id = new_id();
  put(f.header, spv::Op::OpFunction, {return_type, f.id, word(control), fn_type});
  value_types_.emplace(f.id, fn_type);
  for (Id t : param_types) {
    const Id p = new_id();
    put(f.header, spv::Op::OpFunctionParameter, {t, p});
    value_types_.emplace(p, t);
    f.params.push_back(p);
  }
  f.entry_label = new_id();
  f.open_block = f.entry_label;
  function_ = std::move(f);
  return function_->id;
}

const std::vector<Id>& Module::function_params() const {
  check(function_.has_value(), "no function is open");
  return function_->params;
}

Id Module::entry_label() const {
  check(function_.has_value(), "no function is open");
  return function_->entry_label;
}

void Module::end_function() {
  check(function_.has_value(), "end_function without begin_function");
  check(function_->open_block == 0, "end_function: the last block has no terminator");
  Function& f = *function_;
  functions_.insert(functions_.end(), f.header.begin(), f.header.end());
  put(functions_, spv::Op::OpLabel, {f.entry_label});
  functions_.insert(functions_.end(), f.variables.begin(), f.variables.end());
  functions_.insert(functions_.end(), f.body.begin(), f.body.end());
  put(functions_, spv::Op::OpFunctionEnd, {});
  function_.reset();
}

void Module::begin_block(Id label) {
  check(function_.has_value(), "begin_block outside a function");
  check(function_->open_block == 0, "begin_block: the previous block has no terminator");
  check(label != function_->entry_label, "the entry block is opened by begin_function");
  put(function_->body, spv::Op::OpLabel, {label});
  function_->open_block = label;
}

std::vector<uint32_t>& Module::block_words() {
  check(in_block(), "instruction emitted outside a block (none open, or the last one was terminated)");
  return function_->body;
}

void Module::terminate() { function_->open_block = 0; }

Id Module::local_variable(Id pointee, Id initializer) {
  check(function_.has_value(), "local_variable outside a function");
  const Id pointer = type_pointer(spv::StorageClass::Function, pointee);
  const Id id = new_id();
  std::vector<uint32_t> ops{pointer, id, word(spv::StorageClass::Function)};
  if (initializer != 0) ops.push_back(initializer);
  put(function_->variables, spv::Op::OpVariable, ops);
  value_types_.emplace(id, pointer);
  return id;
}

Id Module::emit(spv::Op op, Id result_type, const std::vector<uint32_t>& operands, Id result_id) {
  std::vector<uint32_t>& words = block_words();
  check(result_id < next_id_ && value_types_.count(result_id) == 0,
        "result id " + std::to_string(result_id) + " was not reserved with new_id() or is already defined");
  const Id id = result_id != 0 ? result_id : new_id();
  std::vector<uint32_t> ops{result_type, id};
  ops.insert(ops.end(), operands.begin(), operands.end());
  put(words, op, ops);
  value_types_.emplace(id, result_type);
  return id;
}

void Module::emit_no_result(spv::Op op, const std::vector<uint32_t>& operands) {
  put(block_words(), op, operands);
  if (is_terminator(op)) terminate();
}

// Memory.

Id Module::load(Id pointer) {
  const Id ptr_type = type_of(pointer);
  check(ptr_type != 0, "load from a value of unknown type");
  return emit(spv::Op::OpLoad, pointee_type(ptr_type), {pointer});
}

void Module::store(Id pointer, Id value) { emit_no_result(spv::Op::OpStore, {pointer, value}); }

Id Module::access_chain(Id base, std::vector<Id> indices) {
  const Id base_type = type_of(base);
  check(base_type != 0, "access chain on a value of unknown type");
  Id t = pointee_type(base_type);
  for (Id index : indices) {
    const TypeInfo& i = info(t);
    if (i.op == spv::Op::OpTypeStruct) {
      std::optional<uint64_t> member = int_constant_value(index);
      check(member.has_value() && *member < i.members.size(),
            "struct index must be an integer constant naming a member");
      t = i.members[*member];
    } else {
      check(i.op == spv::Op::OpTypeArray || i.op == spv::Op::OpTypeRuntimeArray ||
                i.op == spv::Op::OpTypeVector,
            "access chain indexes into a non-composite");
      t = i.element;
    }
  }
  std::vector<uint32_t> ops{base};
  ops.insert(ops.end(), indices.begin(), indices.end());
  return emit(spv::Op::OpAccessChain, type_pointer(pointer_storage(base_type), t), ops);
}

Id Module::array_length(Id struct_pointer, uint32_t member) {
  return emit(spv::Op::OpArrayLength, type_uint(32), {struct_pointer, member});
}

// Arithmetic.

Id Module::binary(spv::Op op, Id a, Id b, Id result_id) {
  const Id t = type_of(a);
  check(t != 0, "binary operand of unknown type");
  return emit(op, t, {a, b}, result_id);
}

Id Module::unary(spv::Op op, Id a, Id result_id) {
  const Id t = type_of(a);
  check(t != 0, "unary operand of unknown type");
  return emit(op, t, {a}, result_id);
}

Id Module::compare(spv::Op op, Id a, Id b) {
  const Id t = type_of(a);
  check(t != 0, "comparison operand of unknown type");
  const uint32_t n = vector_size(t);
  return emit(op, n ? type_vector(type_bool(), n) : type_bool(), {a, b});
}

Id Module::convert(spv::Op op, Id result_type, Id value) { return emit(op, result_type, {value}); }

Id Module::select(Id condition, Id if_true, Id if_false) {
  const Id t = type_of(if_true);
  check(t != 0, "select operand of unknown type");
  return emit(spv::Op::OpSelect, t, {condition, if_true, if_false});
}

Id Module::composite_extract(Id result_type, Id composite, std::initializer_list<uint32_t> indices) {
  std::vector<uint32_t> ops{composite};
  ops.insert(ops.end(), indices.begin(), indices.end());
  return emit(spv::Op::OpCompositeExtract, result_type, ops);
}

Id Module::phi(Id type, std::vector<PhiIncoming> incoming) {
  check(!incoming.empty(), "OpPhi needs at least one incoming value");
  std::vector<uint32_t> ops;
  for (const PhiIncoming& in : incoming) {
    ops.push_back(in.value);
    ops.push_back(in.parent);
  }
  return emit(spv::Op::OpPhi, type, ops);
}

Id Module::ext_inst(Id result_type, GLSLstd450 instruction, std::vector<Id> operands) {
  std::vector<uint32_t> ops{glsl_std_450(), static_cast<uint32_t>(instruction)};
  ops.insert(ops.end(), operands.begin(), operands.end());
  return emit(spv::Op::OpExtInst, result_type, ops);
}

// Atomics and barriers.

Id Module::semantics_constant(spv::MemorySemanticsMask semantics) { return constant_u32(word(semantics)); }

void Module::require_atomic_capabilities(spv::Op op, Id value_type) {
  const TypeInfo& t = info(value_type);
  if (op == spv::Op::OpAtomicFAddEXT) {
    check(t.op == spv::Op::OpTypeFloat && (t.width == 32 || t.width == 64),
          "OpAtomicFAddEXT needs a 32- or 64-bit float");
    require_extension("SPV_EXT_shader_atomic_float_add");
    require_capability(t.width == 32 ? spv::Capability::AtomicFloat32AddEXT
                                     : spv::Capability::AtomicFloat64AddEXT);
    return;
  }
  if (t.op == spv::Op::OpTypeInt && t.width == 64) require_capability(spv::Capability::Int64Atomics);
}

Id Module::atomic(spv::Op op, Id pointer, spv::Scope scope, spv::MemorySemanticsMask semantics, Id value) {
  switch (op) {
    case spv::Op::OpAtomicIAdd:
    case spv::Op::OpAtomicISub:
    case spv::Op::OpAtomicSMin:
    case spv::Op::OpAtomicUMin:
    case spv::Op::OpAtomicSMax:
    case spv::Op::OpAtomicUMax:
    case spv::Op::OpAtomicAnd:
    case spv::Op::OpAtomicOr:
    case spv::Op::OpAtomicXor:
    case spv::Op::OpAtomicExchange:
    case spv::Op::OpAtomicFAddEXT:
      break;
    default:
      check(false, "atomic(): not a read-modify-write atomic opcode");
  }
  const Id ptr_type = type_of(pointer);
  check(ptr_type != 0, "atomic on a pointer of unknown type");
  const Id t = pointee_type(ptr_type);
  require_atomic_capabilities(op, t);
  return emit(op, t, {pointer, constant_u32(word(scope)), semantics_constant(semantics), value});
}

Id Module::atomic_compare_exchange(Id pointer, spv::Scope scope, spv::MemorySemanticsMask equal,
                                   spv::MemorySemanticsMask unequal, Id value, Id comparator) {
  const Id ptr_type = type_of(pointer);
  check(ptr_type != 0, "atomic on a pointer of unknown type");
  const Id t = pointee_type(ptr_type);
  check(type_op(t) == spv::Op::OpTypeInt, "OpAtomicCompareExchange needs an integer");
  require_atomic_capabilities(spv::Op::OpAtomicCompareExchange, t);
  return emit(spv::Op::OpAtomicCompareExchange, t,
              {pointer, constant_u32(word(scope)), semantics_constant(equal), semantics_constant(unequal),
               value, comparator});
}

Id Module::atomic_load(Id pointer, spv::Scope scope, spv::MemorySemanticsMask semantics) {
  const Id ptr_type = type_of(pointer);
  check(ptr_type != 0, "atomic on a pointer of unknown type");
  const Id t = pointee_type(ptr_type);
  require_atomic_capabilities(spv::Op::OpAtomicLoad, t);
  return emit(spv::Op::OpAtomicLoad, t, {pointer, constant_u32(word(scope)), semantics_constant(semantics)});
}

void Module::atomic_store(Id pointer, spv::Scope scope, spv::MemorySemanticsMask semantics, Id value) {
  const Id ptr_type = type_of(pointer);
  check(ptr_type != 0, "atomic on a pointer of unknown type");
  require_atomic_capabilities(spv::Op::OpAtomicStore, pointee_type(ptr_type));
  emit_no_result(spv::Op::OpAtomicStore,
                 {pointer, constant_u32(word(scope)), semantics_constant(semantics), value});
}

void Module::control_barrier(spv::Scope execution, spv::Scope memory, spv::MemorySemanticsMask semantics) {
  emit_no_result(spv::Op::OpControlBarrier,
                 {constant_u32(word(execution)), constant_u32(word(memory)), semantics_constant(semantics)});
}

void Module::memory_barrier(spv::Scope memory, spv::MemorySemanticsMask semantics) {
  emit_no_result(spv::Op::OpMemoryBarrier, {constant_u32(word(memory)), semantics_constant(semantics)});
}

// Structured control flow and terminators.

void Module::selection_merge(Id merge, spv::SelectionControlMask control) {
  emit_no_result(spv::Op::OpSelectionMerge, {merge, word(control)});
}

void Module::loop_merge(Id merge, Id continue_target, spv::LoopControlMask control) {
  emit_no_result(spv::Op::OpLoopMerge, {merge, continue_target, word(control)});
}

void Module::branch(Id target) { emit_no_result(spv::Op::OpBranch, {target}); }

void Module::branch_conditional(Id condition, Id if_true, Id if_false) {
  emit_no_result(spv::Op::OpBranchConditional, {condition, if_true, if_false});
}

void Module::ret() { emit_no_result(spv::Op::OpReturn, {}); }

void Module::ret_value(Id value) { emit_no_result(spv::Op::OpReturnValue, {value}); }

void Module::unreachable() { emit_no_result(spv::Op::OpUnreachable, {}); }

// --- Output ---------------------------------------------------------------

std::vector<uint32_t> Module::finish() const {
  check(!function_.has_value(), "finish() with a function still open");
  std::vector<uint32_t> out{spv::MagicNumber, options_.version, 0 /* generator */, next_id_, 0 /* schema */};
  for (spv::Capability c : capabilities_) put(out, spv::Op::OpCapability, {word(c)});
  for (const std::string& e : extensions_) {
    std::vector<uint32_t> ops;
    append_string(ops, e);
    put(out, spv::Op::OpExtension, ops);
  }
  out.insert(out.end(), ext_inst_imports_.begin(), ext_inst_imports_.end());
  put(out, spv::Op::OpMemoryModel, {word(spv::AddressingModel::Logical), word(spv::MemoryModel::GLSL450)});
  for (const auto* section : {&entry_points_, &execution_modes_, &debug_names_, &annotations_, &globals_,
                              &functions_}) {
    out.insert(out.end(), section->begin(), section->end());
  }
  return out;
}

}  // namespace grove::spirv
