// src/spirv/module.h — a SPIR-V module builder, independent of Grove's IR: one
// word list per section of the spec's logical layout, ids from one counter,
// types and constants deduplicated, and a block-by-block function writer.
//
// This header includes the Khronos enum header (spirv.hpp11, namespace `spv`)
// on purpose: only code generators include it, and re-wrapping every opcode,
// capability and decoration would be a second list to keep in sync. Other
// libraries must not include it; they see SPIR-V only as std::vector<uint32_t>
// (validate.h includes no SPIR-V or SPIRV-Tools header).
//
// Capabilities are added by the code that needs them: type_int(8/16/64) adds
// Int8/Int16/Int64, type_float(16/64) adds Float16/Float64, a pointer to 8- or
// 16-bit data in StorageBuffer/Uniform/PushConstant/Input/Output adds the
// matching *8BitAccess/*16BitAccess capability (and its extension below the
// SPIR-V version that made it core), a 64-bit integer atomic adds Int64Atomics,
// OpAtomicFAddEXT adds AtomicFloat{32,64}AddEXT and its extension. Shader is
// always present. Whether the device supports them is the caller's question.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <spirv/unified1/GLSL.std.450.h>
#include <spirv/unified1/spirv.hpp11>

namespace grove::spirv {

using Id = uint32_t;

// The version word of a SPIR-V header: (major << 16) | (minor << 8).
constexpr uint32_t version_word(uint32_t major, uint32_t minor) { return (major << 16) | (minor << 8); }

struct ModuleOptions {
  // SPIR-V 1.3 is what Vulkan 1.1 accepts. From 1.4 on, an entry point's
  // interface lists every global variable it uses, not only Input/Output.
  uint32_t version = version_word(1, 3);
};

// One (value, predecessor block label) pair of an OpPhi.
struct PhiIncoming {
  Id value;
  Id parent;
};

class Module {
 public:
  explicit Module(ModuleOptions options = {});

  Id new_id() { return next_id_++; }
  // The header's bound: every id used is below it.
  uint32_t bound() const { return next_id_; }
  uint32_t version() const { return options_.version; }

  // --- Capabilities, extensions, imports (each added at most once) ---------
  void require_capability(spv::Capability capability);
  void require_extension(std::string_view name);
  bool has_capability(spv::Capability capability) const { return capability_set_.count(capability) != 0; }
  bool has_extension(std::string_view name) const { return extension_set_.count(std::string(name)) != 0; }
  // The id of the GLSL.std.450 import (imported on first use).
  Id glsl_std_450();

  // --- Debug names and annotations ----------------------------------------
  void name(Id target, std::string_view name);
  void member_name(Id struct_type, uint32_t member, std::string_view name);
  void decorate(Id target, spv::Decoration decoration, std::initializer_list<uint32_t> literals = {});
  void member_decorate(Id struct_type, uint32_t member, spv::Decoration decoration,
                       std::initializer_list<uint32_t> literals = {});

  // --- Types (get-or-add: the same arguments give the same id) -------------
  Id type_void();
  Id type_bool();
  Id type_int(uint32_t width, bool is_signed);  // width 8/16 add Int8/Int16, 64 adds Int64
  Id type_uint(uint32_t width) { return type_int(width, false); }
  Id type_sint(uint32_t width) { return type_int(width, true); }
  Id type_float(uint32_t width);                // width 16 adds Float16, 64 adds Float64
  bool has_type_float(uint32_t width) const;     // whether type_float(width) was made
  Id type_vector(Id component, uint32_t count);
  Id type_pointer(spv::StorageClass storage, Id pointee);
  // `length` is the id of an integer constant. array_stride 0: no ArrayStride
  // decoration (Function, Private and Workgroup arrays must have none).
  Id type_array(Id element, Id length, uint32_t array_stride = 0);
  Id type_runtime_array(Id element, uint32_t array_stride);
  // A plain struct, no layout decorations.
  Id type_struct(std::vector<Id> members);
  // A Block-decorated struct (storage buffer, uniform or push constant), one
  // Offset per member (in bytes).
  Id type_block(std::vector<Id> members, std::vector<uint32_t> offsets);
  Id type_function(Id return_type, std::vector<Id> params = {});

  // --- Constants (get-or-add, keyed by type and bit pattern) ---------------
  Id constant_bool(bool value);
  // `type` is an int type of any width; `bits` is truncated to that width
  // (and sign-extended to 32 bits for narrow signed types, as the spec asks).
  Id constant_int(Id type, uint64_t bits);
  Id constant_u32(uint32_t value) { return constant_int(type_uint(32), value); }
  Id constant_i32(int32_t value) { return constant_int(type_sint(32), static_cast<uint32_t>(value)); }
  Id constant_u64(uint64_t value) { return constant_int(type_uint(64), value); }
  Id constant_i64(int64_t value) { return constant_int(type_sint(64), static_cast<uint64_t>(value)); }
  // By bit pattern: -0.0 and 0.0 differ, as do NaNs with different payloads.
  Id constant_f32(float value);
  Id constant_f64(double value);
  // `type` is a 32- or 64-bit float type; the value is rounded to it.
  Id constant_float(Id type, double value);
  Id constant_null(Id type);
  Id constant_composite(Id type, std::vector<Id> constituents);
  // The value of an integer constant made here (nullopt for anything else).
  std::optional<uint64_t> int_constant_value(Id constant) const;
  // Whether `constant` is a float constant +0.0 (1) or -0.0 (-1); 0 otherwise.
  int float_zero_sign(Id constant) const;

  // --- Global variables ------------------------------------------------------
  // A new module-scope variable of type pointer(storage, pointee); never
  // deduplicated. Returns the variable's id.
  Id global_variable(Id pointee, spv::StorageClass storage, Id initializer = 0);
  // An Input variable decorated BuiltIn `builtin` (get-or-add by builtin).
  Id builtin_input(spv::BuiltIn builtin, Id pointee);
  // A StorageBuffer variable of Block type `block`, decorated with
  // DescriptorSet `set` and Binding `binding`.
  Id storage_buffer(Id block, uint32_t set, uint32_t binding);
  // Every global variable made so far, in order.
  const std::vector<Id>& global_variables() const { return global_vars_; }

  // --- Type queries (for types and values made through this module) ---------
  // The type id of a value (constant, variable, instruction result), 0 if unknown.
  Id type_of(Id value) const;
  spv::Op type_op(Id type) const;               // OpTypeInt, OpTypePointer, ...
  uint32_t type_width(Id scalar_type) const;    // int or float width, 0 otherwise
  bool type_is_signed(Id int_type) const;
  Id pointee_type(Id pointer_type) const;
  spv::StorageClass pointer_storage(Id pointer_type) const;
  Id element_type(Id type) const;               // vector/array/runtime array element
  uint32_t vector_size(Id type) const;          // 0 for a non-vector

  // --- Entry points and execution modes -------------------------------------
  // `interface` lists every global variable the entry point uses; below
  // SPIR-V 1.4 only its Input/Output variables are kept (the spec's rule).
  void entry_point(spv::ExecutionModel model, Id function, std::string_view name,
                   std::span<const Id> interface);
  void execution_mode(Id entry, spv::ExecutionMode mode, std::initializer_list<uint32_t> literals = {});
  void local_size(Id entry, uint32_t x, uint32_t y = 1, uint32_t z = 1);

  // --- Functions -----------------------------------------------------------
  // Starts a function and its entry block (current until a terminator).
  Id begin_function(Id return_type, std::vector<Id> param_types = {},
                    spv::FunctionControlMask control = spv::FunctionControlMask::MaskNone);
  const std::vector<Id>& function_params() const;
  Id entry_label() const;
  void end_function();
  bool in_function() const { return function_.has_value(); }

  // Labels: new_label() makes an id; begin_block() opens it once the previous
  // block has been terminated (branch, return, unreachable).
  Id new_label() { return new_id(); }
  void begin_block(Id label);
  bool in_block() const { return function_ && function_->open_block != 0; }
  Id current_block() const { return function_ ? function_->open_block : 0; }

  // A Function-storage variable, placed in the entry block as the spec
  // requires, whichever block is current. Returns the variable (a pointer).
  Id local_variable(Id pointee, Id initializer = 0);

  // Generic emission into the current block. Operands are raw words (ids and
  // literals alike); use word() for enum operands. `result_id` (here and in
  // binary/unary) is 0 for a fresh id, or an id reserved earlier with new_id()
  // for a value used before it is defined (an OpPhi's back-edge value).
  Id emit(spv::Op op, Id result_type, const std::vector<uint32_t>& operands, Id result_id = 0);
  void emit_no_result(spv::Op op, const std::vector<uint32_t>& operands);

  // Memory.
  Id load(Id pointer);
  void store(Id pointer, Id value);
  // The result pointer type is derived from `base` (struct indices must be
  // integer constants made by this module).
  Id access_chain(Id base, std::vector<Id> indices);
  Id array_length(Id struct_pointer, uint32_t member);  // result u32

  // Arithmetic. binary/unary: result type of `a`; compare: bool or bool vector.
  Id binary(spv::Op op, Id a, Id b, Id result_id = 0);
  Id unary(spv::Op op, Id a, Id result_id = 0);
  Id compare(spv::Op op, Id a, Id b);
  Id convert(spv::Op op, Id result_type, Id value);  // Convert*, UConvert, Bitcast ...
  Id select(Id condition, Id if_true, Id if_false);
  Id composite_extract(Id result_type, Id composite, std::initializer_list<uint32_t> indices);
  Id phi(Id type, std::vector<PhiIncoming> incoming);
  // OpExtInst from GLSL.std.450, by instruction number (GLSLstd450...).
  Id ext_inst(Id result_type, GLSLstd450 instruction, std::vector<Id> operands);

  // Atomics. Scope and semantics become u32 constants (Shader modules
  // require constants there). atomic(): IAdd, ISub, SMin, UMin, SMax, UMax,
  // And, Or, Xor, Exchange, FAddEXT; the result type is the pointee type.
  Id atomic(spv::Op op, Id pointer, spv::Scope scope, spv::MemorySemanticsMask semantics, Id value);
  Id atomic_compare_exchange(Id pointer, spv::Scope scope, spv::MemorySemanticsMask equal,
                             spv::MemorySemanticsMask unequal, Id value, Id comparator);
  Id atomic_load(Id pointer, spv::Scope scope, spv::MemorySemanticsMask semantics);
  void atomic_store(Id pointer, spv::Scope scope, spv::MemorySemanticsMask semantics, Id value);
  void control_barrier(spv::Scope execution, spv::Scope memory, spv::MemorySemanticsMask semantics);
  void memory_barrier(spv::Scope memory, spv::MemorySemanticsMask semantics);

  // Structured control flow. A merge instruction goes right before its
  // block's branch: loop_merge() then branch()/branch_conditional().
  void selection_merge(Id merge, spv::SelectionControlMask control = spv::SelectionControlMask::MaskNone);
  void loop_merge(Id merge, Id continue_target,
                  spv::LoopControlMask control = spv::LoopControlMask::MaskNone);
  // Terminators: each closes the current block.
  void branch(Id target);
  void branch_conditional(Id condition, Id if_true, Id if_false);
  void ret();
  void ret_value(Id value);
  void unreachable();

  // The module's words: header (magic, version, generator 0, bound, 0) and
  // the sections in the spec's order. No function may be open.
  std::vector<uint32_t> finish() const;

 private:
  struct TypeInfo {
    spv::Op op = spv::Op::OpNop;
    uint32_t width = 0;         // int/float
    bool is_signed = false;     // int
    Id element = 0;             // vector/array/runtime array component, pointer pointee
    uint32_t count = 0;         // vector size
    spv::StorageClass storage = spv::StorageClass::Max;  // pointer
    std::vector<Id> members;    // struct
  };
  struct Function {
    Id id = 0;
    std::vector<Id> params;
    Id entry_label = 0;
    Id open_block = 0;              // 0 when the last block was terminated
    std::vector<uint32_t> header;   // OpFunction, OpFunctionParameter...
    std::vector<uint32_t> variables;  // entry block's OpVariables
    std::vector<uint32_t> body;     // entry label's instructions onward
  };

  // Adds a type instruction (`operands` after the result id) unless the same
  // key was seen; `extra_key` distinguishes types that differ only by their
  // decorations.
  Id get_or_add_type(spv::Op op, std::vector<uint32_t> operands, TypeInfo info,
                     const std::vector<uint32_t>& extra_key = {});
  Id get_or_add_constant(spv::Op op, Id type, std::vector<uint32_t> operands);
  std::vector<uint32_t>& block_words();  // the current block's words (checks one is open)
  void terminate();
  Id semantics_constant(spv::MemorySemanticsMask semantics);
  void require_atomic_capabilities(spv::Op op, Id value_type);
  // Bit 0: `type` holds an 8-bit scalar; bit 1: a 16-bit one.
  uint32_t narrow_widths(Id type) const;
  // The 8/16-bit storage capability (and extension) for pointers to such data.
  void require_narrow_storage(spv::StorageClass storage, Id pointee);
  const TypeInfo& info(Id type) const;

  ModuleOptions options_;
  Id next_id_ = 1;

  std::vector<spv::Capability> capabilities_;
  std::set<spv::Capability> capability_set_;
  std::vector<std::string> extensions_;
  std::set<std::string> extension_set_;
  Id glsl_std_450_ = 0;

  // Sections, in the spec's order (capabilities and extensions above).
  std::vector<uint32_t> ext_inst_imports_;
  std::vector<uint32_t> entry_points_;
  std::vector<uint32_t> execution_modes_;
  std::vector<uint32_t> debug_names_;
  std::vector<uint32_t> annotations_;
  std::vector<uint32_t> globals_;  // types, constants, global variables
  std::vector<uint32_t> functions_;

  std::map<std::vector<uint32_t>, Id> type_cache_;
  std::map<std::vector<uint32_t>, Id> constant_cache_;
  std::unordered_map<Id, TypeInfo> types_;
  std::unordered_map<Id, Id> value_types_;
  std::unordered_map<Id, uint64_t> int_constants_;
  std::unordered_map<Id, int> float_zero_constants_;  // +1 for +0.0, -1 for -0.0
  std::unordered_map<Id, spv::StorageClass> variable_storage_;
  std::map<spv::BuiltIn, Id> builtins_;
  std::vector<Id> global_vars_;
  std::optional<Function> function_;
};

// An enum operand as a word.
template <typename E>
constexpr uint32_t word(E e) {
  return static_cast<uint32_t>(e);
}

}  // namespace grove::spirv
