// tests/spirv/module_test.cpp — the SPIR-V module builder: modules built by hand
// must pass the SPIRV-Tools validator (Vulkan 1.1), capabilities appear only
// where used, types and constants are deduplicated, and invalid modules are
// reported with their disassembly.
#include "spirv/module.h"

#include <gtest/gtest.h>

#include <bit>
#include <limits>

#include "ir/assert.h"
#include "spirv/validate.h"

namespace grove::spirv {
namespace {

using spv::Op;

// One decoded instruction of a binary.
struct Inst {
  Op op;
  std::vector<uint32_t> operands;
};

std::vector<Inst> decode(const std::vector<uint32_t>& words) {
  std::vector<Inst> out;
  size_t i = 5;
  while (i < words.size()) {
    const uint32_t count = words[i] >> 16;
    EXPECT_GE(count, 1u);
    if (count == 0 || i + count > words.size()) break;
    out.push_back({static_cast<Op>(words[i] & 0xffff),
                   std::vector<uint32_t>(words.begin() + i + 1, words.begin() + i + count)});
    i += count;
  }
  return out;
}

size_t count_op(const std::vector<uint32_t>& words, Op op) {
  size_t n = 0;
  for (const Inst& inst : decode(words)) n += inst.op == op;
  return n;
}

size_t count_capability(const std::vector<uint32_t>& words, spv::Capability c) {
  size_t n = 0;
  for (const Inst& inst : decode(words)) n += inst.op == Op::OpCapability && inst.operands[0] == word(c);
  return n;
}

std::vector<uint32_t> entry_point_interface(const std::vector<uint32_t>& words) {
  for (const Inst& inst : decode(words)) {
    if (inst.op != Op::OpEntryPoint) continue;
    // Execution model, function, then the name (a nul-terminated string).
    size_t i = 2;
    while ((inst.operands[i] >> 24) != 0) ++i;
    return std::vector<uint32_t>(inst.operands.begin() + i + 1, inst.operands.end());
  }
  return {};
}

// A compute entry point "main" with a 64x1x1 work group, listing every global.
void finish_entry(Module& m, Id fn) {
  m.entry_point(spv::ExecutionModel::GLCompute, fn, "main", m.global_variables());
  m.local_size(fn, 64);
}

std::vector<uint32_t> empty_shader(Module& m) {
  const Id fn = m.begin_function(m.type_void());
  m.ret();
  m.end_function();
  finish_entry(m, fn);
  return m.finish();
}

// buffer: a StorageBuffer { uint data[]; } at set 0, binding 0.
Id u32_buffer(Module& m, uint32_t binding = 0) {
  const Id block = m.type_block({m.type_runtime_array(m.type_uint(32), 4)}, {0});
  m.name(block, "Buffer");
  m.member_name(block, 0, "data");
  const Id buf = m.storage_buffer(block, 0, binding);
  m.name(buf, "buf");
  return buf;
}

// x-component of GlobalInvocationId, and the grid size in invocations
// (NumWorkgroups.x * 64).
std::pair<Id, Id> grid_start_and_stride(Module& m) {
  const Id u32 = m.type_uint(32);
  const Id uvec3 = m.type_vector(u32, 3);
  const Id gid = m.builtin_input(spv::BuiltIn::GlobalInvocationId, uvec3);
  const Id nwg = m.builtin_input(spv::BuiltIn::NumWorkgroups, uvec3);
  m.name(gid, "gl_GlobalInvocationID");
  const Id start = m.composite_extract(u32, m.load(gid), {0});
  const Id groups = m.composite_extract(u32, m.load(nwg), {0});
  return {start, m.binary(Op::OpIMul, groups, m.constant_u32(64))};
}

// for (i = gid.x; i < length(buf); i += grid) buf[i] += 1, with an OpPhi:
//   entry:  ... branch header
//   header: i = phi [start, entry] [next, cont]; c = i < length
//           OpLoopMerge merge cont; branch_conditional c body merge
//   body:   buf[i] += 1; branch cont
//   cont:   next = i + stride; branch header
//   merge:  return
std::vector<uint32_t> grid_stride_add_one(Module& m) {
  const Id u32 = m.type_uint(32);
  const Id buf = u32_buffer(m);
  const Id fn = m.begin_function(m.type_void());
  m.name(fn, "main");
  auto [start, stride] = grid_start_and_stride(m);
  const Id length = m.array_length(buf, 0);
  const Id entry = m.entry_label();
  const Id header = m.new_label(), body = m.new_label(), cont = m.new_label(), merge = m.new_label();
  m.branch(header);

  m.begin_block(header);
  const Id next = m.new_id();  // defined in the continue target, used here first
  const Id index = m.phi(u32, {{start, entry}, {next, cont}});
  const Id in_range = m.compare(Op::OpULessThan, index, length);
  m.loop_merge(merge, cont);
  m.branch_conditional(in_range, body, merge);

  m.begin_block(body);
  const Id ptr = m.access_chain(buf, {m.constant_u32(0), index});
  m.store(ptr, m.binary(Op::OpIAdd, m.load(ptr), m.constant_u32(1)));
  m.branch(cont);

  m.begin_block(cont);
  EXPECT_EQ(m.binary(Op::OpIAdd, index, stride, next), next);
  m.branch(header);

  m.begin_block(merge);
  m.ret();
  m.end_function();
  finish_entry(m, fn);
  return m.finish();
}

TEST(SpirvModule, EmptyComputeShaderValidates) {
  Module m;
  const std::vector<uint32_t> words = empty_shader(m);
  ASSERT_GE(words.size(), 5u);
  EXPECT_EQ(words[0], 0x07230203u);
  EXPECT_EQ(words[1], 0x00010300u);  // SPIR-V 1.3
  EXPECT_EQ(words[2], 0u);           // generator
  EXPECT_EQ(words[3], m.bound());
  EXPECT_EQ(words[4], 0u);
  EXPECT_NO_THROW(validate_spirv(words, "empty shader"));
  EXPECT_EQ(count_capability(words, spv::Capability::Shader), 1u);
  EXPECT_EQ(count_op(words, Op::OpCapability), 1u);
  EXPECT_EQ(count_op(words, Op::OpExtension), 0u);
  EXPECT_EQ(count_op(words, Op::OpExtInstImport), 0u);
}


TEST(SpirvModule, StringsAreNulTerminatedAndPaddedToWords) {
  Module m;
  const Id fn = m.begin_function(m.type_void());
  m.ret();
  m.end_function();
  m.name(fn, "abc");   // 3 bytes + nul: one word
  m.name(fn, "abcd");  // 4 bytes + nul: two words, the second all zero
  m.entry_point(spv::ExecutionModel::GLCompute, fn, "main", {});
  m.local_size(fn, 1);
  const std::vector<uint32_t> words = m.finish();
  std::vector<std::vector<uint32_t>> names;
  for (const Inst& inst : decode(words)) {
    if (inst.op == Op::OpName) names.push_back(inst.operands);
  }
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], (std::vector<uint32_t>{fn, 0x00636261u}));
  EXPECT_EQ(names[1], (std::vector<uint32_t>{fn, 0x64636261u, 0u}));
  EXPECT_NO_THROW(validate_spirv(words, "names"));
  EXPECT_NE(disassemble(words).find("OpEntryPoint GLCompute %abc \"main\""), std::string::npos)
      << disassemble(words);
}

TEST(SpirvModule, GridStrideLoopWithPhiValidates) {
  Module m;
  const std::vector<uint32_t> words = grid_stride_add_one(m);
  EXPECT_NO_THROW(validate_spirv(words, "grid-stride add one"));
  EXPECT_EQ(count_op(words, Op::OpLoopMerge), 1u);
  EXPECT_EQ(count_op(words, Op::OpPhi), 1u);
  // SPIR-V 1.3: the interface lists the two Input builtins, not the buffer.
  EXPECT_EQ(entry_point_interface(words).size(), 2u);
  EXPECT_EQ(m.global_variables().size(), 3u);
}

// The same loop with Function variables instead of an OpPhi, and a header
// block that only branches to the condition block. local_variable() called
// in a later block still lands in the entry block, as the spec requires.
TEST(SpirvModule, GridStrideLoopWithFunctionVariableValidates) {
  Module m;
  const Id u32 = m.type_uint(32);
  const Id buf = u32_buffer(m);
  const Id fn = m.begin_function(m.type_void());
  auto [start, stride] = grid_start_and_stride(m);
  const Id i = m.local_variable(u32);
  m.store(i, start);
  const Id header = m.new_label(), check = m.new_label(), body = m.new_label(), cont = m.new_label(),
           merge = m.new_label();
  m.branch(header);

  m.begin_block(header);
  m.loop_merge(merge, cont, spv::LoopControlMask::DontUnroll);
  m.branch(check);

  m.begin_block(check);
  const Id index = m.load(i);
  m.branch_conditional(m.compare(Op::OpULessThan, index, m.array_length(buf, 0)), body, merge);

  m.begin_block(body);
  const Id scratch = m.local_variable(u32, m.constant_u32(1));  // made here, emitted in the entry block
  const Id ptr = m.access_chain(buf, {m.constant_u32(0), index});
  m.store(ptr, m.binary(Op::OpIAdd, m.load(ptr), m.load(scratch)));
  m.branch(cont);

  m.begin_block(cont);
  m.store(i, m.binary(Op::OpIAdd, m.load(i), stride));
  m.branch(header);

  m.begin_block(merge);
  m.ret();
  m.end_function();
  finish_entry(m, fn);
  const std::vector<uint32_t> words = m.finish();
  EXPECT_NO_THROW(validate_spirv(words, "grid-stride with a variable"));
  // Both OpVariables directly follow the entry block's OpLabel.
  const std::vector<Inst> insts = decode(words);
  for (size_t k = 0; k < insts.size(); ++k) {
    if (insts[k].op == Op::OpFunction) {
      ASSERT_EQ(insts[k + 1].op, Op::OpLabel);
      EXPECT_EQ(insts[k + 2].op, Op::OpVariable);
      EXPECT_EQ(insts[k + 2].operands[1], i);
      EXPECT_EQ(insts[k + 3].op, Op::OpVariable);
      EXPECT_EQ(insts[k + 3].operands[1], scratch);
    }
  }
}

TEST(SpirvModule, AtomicsOnAStorageBufferElementValidate) {
  Module m;
  const Id u32 = m.type_uint(32);
  const Id i32 = m.type_sint(32);
  const Id buf = u32_buffer(m);
  const Id ibuf = m.storage_buffer(m.type_block({m.type_runtime_array(i32, 4)}, {0}), 0, 1);
  const Id fn = m.begin_function(m.type_void());
  const Id p = m.access_chain(buf, {m.constant_u32(0), m.constant_u32(3)});
  const Id q = m.access_chain(ibuf, {m.constant_u32(0), m.constant_u32(1)});
  const auto relaxed = spv::MemorySemanticsMask::MaskNone;
  const auto acq_rel = spv::MemorySemanticsMask::AcquireRelease | spv::MemorySemanticsMask::UniformMemory;
  const auto acquire = spv::MemorySemanticsMask::Acquire | spv::MemorySemanticsMask::UniformMemory;
  const Id old = m.atomic(Op::OpAtomicIAdd, p, spv::Scope::Device, relaxed, m.constant_u32(1));
  EXPECT_EQ(m.type_of(old), u32);
  const Id seen = m.atomic_compare_exchange(p, spv::Scope::Device, acq_rel, acquire, m.constant_u32(7), old);
  EXPECT_EQ(m.type_of(seen), u32);
  for (Op op : {Op::OpAtomicISub, Op::OpAtomicUMin, Op::OpAtomicUMax, Op::OpAtomicAnd, Op::OpAtomicOr,
                Op::OpAtomicXor, Op::OpAtomicExchange}) {
    m.atomic(op, p, spv::Scope::Device, relaxed, seen);
  }
  for (Op op : {Op::OpAtomicSMin, Op::OpAtomicSMax}) {
    m.atomic(op, q, spv::Scope::Device, relaxed, m.constant_i32(-5));
  }
  EXPECT_EQ(m.type_of(m.atomic_load(q, spv::Scope::Device, acquire)), i32);
  const auto release = spv::MemorySemanticsMask::Release | spv::MemorySemanticsMask::UniformMemory;
  m.atomic_store(p, spv::Scope::Device, release, old);
  m.memory_barrier(spv::Scope::Device, acq_rel);
  m.ret();
  m.end_function();
  finish_entry(m, fn);
  const std::vector<uint32_t> words = m.finish();
  EXPECT_NO_THROW(validate_spirv(words, "atomics"));
  EXPECT_EQ(count_op(words, Op::OpAtomicCompareExchange), 1u);
  EXPECT_EQ(count_capability(words, spv::Capability::Int64Atomics), 0u);
  EXPECT_EQ(count_capability(words, spv::Capability::Int64), 0u);
}

TEST(SpirvModule, Int64CapabilitiesOnlyWhereUsed) {
  Module m;
  const Id u64 = m.type_uint(64);
  const Id buf = m.storage_buffer(m.type_block({m.type_runtime_array(u64, 8)}, {0}), 0, 0);
  const Id fn = m.begin_function(m.type_void());
  const Id p = m.access_chain(buf, {m.constant_u32(0), m.constant_u32(0)});
  const Id big = m.constant_u64(0x123456789abcdef0ull);
  m.store(p, m.binary(Op::OpIMul, m.load(p), big));
  m.atomic(Op::OpAtomicIAdd, p, spv::Scope::Device, spv::MemorySemanticsMask::MaskNone, m.constant_u64(1));
  m.ret();
  m.end_function();
  finish_entry(m, fn);
  const std::vector<uint32_t> words = m.finish();
  EXPECT_NO_THROW(validate_spirv(words, "int64"));
  EXPECT_EQ(count_capability(words, spv::Capability::Int64), 1u);
  EXPECT_EQ(count_capability(words, spv::Capability::Int64Atomics), 1u);
  EXPECT_EQ(count_capability(words, spv::Capability::Float64), 0u);
  // A 64-bit literal is two words, low-order first.
  bool found = false;
  for (const Inst& inst : decode(words)) {
    if (inst.op == Op::OpConstant && inst.operands[1] == big) {
      EXPECT_EQ(inst.operands, (std::vector<uint32_t>{u64, big, 0x9abcdef0u, 0x12345678u}));
      found = true;
    }
  }
  EXPECT_TRUE(found);

  Module plain;
  const std::vector<uint32_t> empty = empty_shader(plain);
  EXPECT_EQ(count_capability(empty, spv::Capability::Int64), 0u);
  EXPECT_EQ(count_capability(empty, spv::Capability::Float64), 0u);
}

TEST(SpirvModule, Float64AndGlslExtInstValidate) {
  Module m;
  const Id f64 = m.type_float(64);
  const Id buf = m.storage_buffer(m.type_block({m.type_runtime_array(f64, 8)}, {0}), 0, 0);
  const Id fn = m.begin_function(m.type_void());
  const Id p = m.access_chain(buf, {m.constant_u32(0), m.constant_u32(2)});
  const Id x = m.binary(Op::OpFMul, m.load(p), m.constant_f64(2.5));
  const Id root = m.ext_inst(f64, GLSLstd450Sqrt, {m.ext_inst(f64, GLSLstd450FAbs, {x})});
  m.store(p, m.ext_inst(f64, GLSLstd450FMax, {root, m.constant_f64(-0.0)}));
  m.ret();
  m.end_function();
  finish_entry(m, fn);
  const std::vector<uint32_t> words = m.finish();
  EXPECT_NO_THROW(validate_spirv(words, "float64"));
  EXPECT_EQ(count_capability(words, spv::Capability::Float64), 1u);
  EXPECT_EQ(count_capability(words, spv::Capability::Int64), 0u);
  EXPECT_EQ(count_op(words, Op::OpExtInstImport), 1u);  // imported once, used three times
}

TEST(SpirvModule, FloatAtomicAddAddsItsCapabilityAndExtension) {
  Module m;
  const Id f32 = m.type_float(32);
  const Id buf = m.storage_buffer(m.type_block({m.type_runtime_array(f32, 4)}, {0}), 0, 0);
  const Id fn = m.begin_function(m.type_void());
  const Id p = m.access_chain(buf, {m.constant_u32(0), m.constant_u32(0)});
  const auto relaxed = spv::MemorySemanticsMask::MaskNone;
  m.atomic(Op::OpAtomicFAddEXT, p, spv::Scope::Device, relaxed, m.constant_f32(1.5f));
  m.atomic(Op::OpAtomicFAddEXT, p, spv::Scope::Device, relaxed, m.constant_f32(2.5f));
  m.ret();
  m.end_function();
  finish_entry(m, fn);
  const std::vector<uint32_t> words = m.finish();
  EXPECT_NO_THROW(validate_spirv(words, "float atomic add"));
  EXPECT_EQ(count_capability(words, spv::Capability::AtomicFloat32AddEXT), 1u);
  EXPECT_EQ(count_op(words, Op::OpExtension), 1u);
  EXPECT_NE(disassemble(words).find("OpExtension \"SPV_EXT_shader_atomic_float_add\""), std::string::npos);
}

TEST(SpirvModule, PushConstantBlockValidates) {
  Module m;
  const Id u32 = m.type_uint(32);
  const Id f32 = m.type_float(32);
  const Id params = m.type_block({u32, f32, u32}, {0, 4, 8});
  m.name(params, "Params");
  const Id pc = m.global_variable(params, spv::StorageClass::PushConstant);
  const Id buf = u32_buffer(m);
  const Id fn = m.begin_function(m.type_void());
  const Id n = m.load(m.access_chain(pc, {m.constant_u32(2)}));
  const Id scale = m.load(m.access_chain(pc, {m.constant_u32(1)}));
  EXPECT_EQ(m.type_of(n), u32);
  EXPECT_EQ(m.type_of(scale), f32);
  const Id product = m.binary(Op::OpFMul, scale, m.convert(Op::OpConvertUToF, f32, n));
  const Id scaled = m.convert(Op::OpConvertFToU, u32, product);
  m.store(m.access_chain(buf, {m.constant_u32(0), m.constant_u32(0)}), scaled);
  m.ret();
  m.end_function();
  finish_entry(m, fn);
  const std::vector<uint32_t> words = m.finish();
  EXPECT_NO_THROW(validate_spirv(words, "push constants"));
  EXPECT_NE(disassemble(words).find("PushConstant"), std::string::npos);
}

TEST(SpirvModule, IfElseWithPhiAndWorkgroupBarrierValidate) {
  Module m;
  const Id u32 = m.type_uint(32);
  const Id shared = m.global_variable(m.type_array(u32, m.constant_u32(64)), spv::StorageClass::Workgroup);
  const Id buf = u32_buffer(m);
  const Id fn = m.begin_function(m.type_void());
  const Id lid = m.composite_extract(
      u32, m.load(m.builtin_input(spv::BuiltIn::LocalInvocationId, m.type_vector(u32, 3))), {0});
  m.store(m.access_chain(shared, {lid}), lid);
  m.control_barrier(spv::Scope::Workgroup, spv::Scope::Workgroup,
                    spv::MemorySemanticsMask::AcquireRelease | spv::MemorySemanticsMask::WorkgroupMemory);
  const Id low_bit = m.binary(Op::OpBitwiseAnd, lid, m.constant_u32(1));
  const Id is_even = m.compare(Op::OpIEqual, low_bit, m.constant_u32(0));
  const Id then_b = m.new_label(), else_b = m.new_label(), merge = m.new_label();
  m.selection_merge(merge);
  m.branch_conditional(is_even, then_b, else_b);
  m.begin_block(then_b);
  const Id a = m.load(m.access_chain(shared, {m.binary(Op::OpBitwiseXor, lid, m.constant_u32(1))}));
  m.branch(merge);
  m.begin_block(else_b);
  const Id b = m.unary(Op::OpNot, lid);
  m.branch(merge);
  m.begin_block(merge);
  const Id v = m.phi(u32, {{a, then_b}, {b, else_b}});
  m.store(m.access_chain(buf, {m.constant_u32(0), lid}), m.select(is_even, v, lid));
  m.ret();
  m.end_function();
  finish_entry(m, fn);
  const std::vector<uint32_t> words = m.finish();
  EXPECT_NO_THROW(validate_spirv(words, "if/else"));
  EXPECT_EQ(count_op(words, Op::OpSelectionMerge), 1u);
  EXPECT_EQ(count_op(words, Op::OpControlBarrier), 1u);
}

TEST(SpirvModule, TypesAndConstantsAreDeduplicated) {
  Module m;
  EXPECT_EQ(m.type_uint(32), m.type_int(32, false));
  EXPECT_NE(m.type_uint(32), m.type_sint(32));
  EXPECT_EQ(m.type_vector(m.type_float(32), 4), m.type_vector(m.type_float(32), 4));
  EXPECT_EQ(m.type_pointer(spv::StorageClass::StorageBuffer, m.type_uint(32)),
            m.type_pointer(spv::StorageClass::StorageBuffer, m.type_uint(32)));
  EXPECT_NE(m.type_pointer(spv::StorageClass::StorageBuffer, m.type_uint(32)),
            m.type_pointer(spv::StorageClass::Function, m.type_uint(32)));
  EXPECT_EQ(m.type_runtime_array(m.type_uint(32), 4), m.type_runtime_array(m.type_uint(32), 4));
  EXPECT_NE(m.type_runtime_array(m.type_uint(32), 4), m.type_runtime_array(m.type_uint(32), 8));
  EXPECT_EQ(m.type_block({m.type_uint(32)}, {0}), m.type_block({m.type_uint(32)}, {0}));
  EXPECT_NE(m.type_block({m.type_uint(32)}, {0}), m.type_struct({m.type_uint(32)}));
  EXPECT_EQ(m.type_function(m.type_void()), m.type_function(m.type_void()));

  EXPECT_EQ(m.constant_u32(5), m.constant_u32(5));
  EXPECT_NE(m.constant_u32(5), m.constant_i32(5));
  EXPECT_EQ(m.constant_u64(1ull << 40), m.constant_u64(1ull << 40));
  EXPECT_EQ(m.constant_int(m.type_uint(32), 0x1'0000'0005ull), m.constant_u32(5));  // truncated to the width
  EXPECT_EQ(m.constant_bool(true), m.constant_bool(true));
  EXPECT_NE(m.constant_bool(true), m.constant_bool(false));
  EXPECT_EQ(m.constant_f32(1.0f), m.constant_float(m.type_float(32), 1.0));
  EXPECT_NE(m.constant_f32(0.0f), m.constant_f32(-0.0f));
  EXPECT_NE(m.constant_f64(0.0), m.constant_f64(-0.0));
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const float other_nan = std::bit_cast<float>(std::bit_cast<uint32_t>(qnan) | 1u);
  EXPECT_EQ(m.constant_f32(qnan), m.constant_f32(qnan));
  EXPECT_NE(m.constant_f32(qnan), m.constant_f32(other_nan));
  EXPECT_EQ(m.constant_null(m.type_uint(32)), m.constant_null(m.type_uint(32)));
  EXPECT_NE(m.constant_null(m.type_uint(32)), m.constant_u32(0));
  const Id v2 = m.type_vector(m.type_uint(32), 2);
  EXPECT_EQ(m.constant_composite(v2, {m.constant_u32(1), m.constant_u32(2)}),
            m.constant_composite(v2, {m.constant_u32(1), m.constant_u32(2)}));
  EXPECT_EQ(m.int_constant_value(m.constant_i32(-1)), std::optional<uint64_t>(0xffffffffu));

  const std::vector<uint32_t> words = empty_shader(m);
  EXPECT_NO_THROW(validate_spirv(words, "dedup"));
  size_t uint32_types = 0;
  for (const Inst& inst : decode(words)) {
    uint32_types += inst.op == Op::OpTypeInt && inst.operands[1] == 32 && inst.operands[2] == 0;
  }
  EXPECT_EQ(uint32_types, 1u);
  EXPECT_EQ(count_op(words, Op::OpConstantTrue), 1u);
  // One ArrayStride per distinct runtime array type.
  size_t strides = 0;
  for (const Inst& inst : decode(words)) {
    strides += inst.op == Op::OpDecorate && inst.operands[1] == word(spv::Decoration::ArrayStride);
  }
  EXPECT_EQ(strides, 2u);
}

TEST(SpirvModule, CapabilitiesAndExtensionsAreListedOnce) {
  Module m;
  m.require_capability(spv::Capability::Int64);
  m.type_uint(64);
  m.type_sint(64);
  m.require_capability(spv::Capability::Int64);
  m.require_capability(spv::Capability::Shader);
  m.require_extension("SPV_KHR_storage_buffer_storage_class");
  m.require_extension("SPV_KHR_storage_buffer_storage_class");
  EXPECT_TRUE(m.has_capability(spv::Capability::Int64));
  EXPECT_TRUE(m.has_extension("SPV_KHR_storage_buffer_storage_class"));
  const std::vector<uint32_t> words = empty_shader(m);
  EXPECT_EQ(count_capability(words, spv::Capability::Int64), 1u);
  EXPECT_EQ(count_capability(words, spv::Capability::Shader), 1u);
  EXPECT_EQ(count_op(words, Op::OpExtension), 1u);
  EXPECT_NO_THROW(validate_spirv(words, "capabilities once"));
}

TEST(SpirvModule, NarrowSignedLiteralsAreSignExtended) {
  Module m;
  const Id i16 = m.type_sint(16);
  const Id u16 = m.type_uint(16);
  const Id minus_one = m.constant_int(i16, static_cast<uint64_t>(-1));
  const Id max_u16 = m.constant_int(u16, 0xffff);
  const std::vector<uint32_t> words = empty_shader(m);
  EXPECT_EQ(count_capability(words, spv::Capability::Int16), 1u);
  for (const Inst& inst : decode(words)) {
    if (inst.op != Op::OpConstant) continue;
    if (inst.operands[1] == minus_one) {
      EXPECT_EQ(inst.operands[2], 0xffffffffu);
    }
    if (inst.operands[1] == max_u16) {
      EXPECT_EQ(inst.operands[2], 0x0000ffffu);
    }
  }
  EXPECT_NO_THROW(validate_spirv(words, "int16 constants"));
}

TEST(SpirvModule, NarrowBufferDataAddsStorageCapabilities) {
  Module m;
  const Id u8 = m.type_uint(8);
  const Id u16 = m.type_uint(16);
  const Id bytes = m.storage_buffer(m.type_block({m.type_runtime_array(u8, 1)}, {0}), 0, 0);
  const Id halves = m.storage_buffer(m.type_block({m.type_runtime_array(u16, 2)}, {0}), 0, 1);
  const Id scratch = m.global_variable(m.type_array(u16, m.constant_u32(4)), spv::StorageClass::Workgroup);
  const Id fn = m.begin_function(m.type_void());
  const Id b = m.load(m.access_chain(bytes, {m.constant_u32(0), m.constant_u32(3)}));
  const Id h = m.convert(Op::OpUConvert, u16, b);
  m.store(m.access_chain(scratch, {m.constant_u32(0)}), h);
  m.store(m.access_chain(halves, {m.constant_u32(0), m.constant_u32(1)}), h);
  m.ret();
  m.end_function();
  finish_entry(m, fn);
  const std::vector<uint32_t> words = m.finish();
  EXPECT_NO_THROW(validate_spirv(words, "8/16-bit storage"));
  EXPECT_EQ(count_capability(words, spv::Capability::Int8), 1u);
  EXPECT_EQ(count_capability(words, spv::Capability::Int16), 1u);
  EXPECT_EQ(count_capability(words, spv::Capability::StorageBuffer8BitAccess), 1u);
  EXPECT_EQ(count_capability(words, spv::Capability::StorageBuffer16BitAccess), 1u);
  EXPECT_EQ(count_capability(words, spv::Capability::StoragePushConstant16), 0u);
  // SPV_KHR_16bit_storage is core in SPIR-V 1.3; SPV_KHR_8bit_storage only in 1.5.
  const std::string text = disassemble(words);
  EXPECT_NE(text.find("OpExtension \"SPV_KHR_8bit_storage\""), std::string::npos) << text;
  EXPECT_EQ(text.find("SPV_KHR_16bit_storage"), std::string::npos) << text;
}

TEST(SpirvModule, StoreToAnInputVariableFailsWithDisassembly) {
  Module m;
  const Id u32 = m.type_uint(32);
  const Id gid = m.builtin_input(spv::BuiltIn::GlobalInvocationId, m.type_vector(u32, 3));
  const Id fn = m.begin_function(m.type_void());
  m.store(gid, m.constant_null(m.type_vector(u32, 3)));
  m.ret();
  m.end_function();
  finish_entry(m, fn);
  const std::vector<uint32_t> words = m.finish();
  try {
    validate_spirv(words, "kernel 'bad_store'");
    FAIL() << "validate_spirv accepted a store to an Input variable";
  } catch (const InternalError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("kernel 'bad_store'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("error"), std::string::npos) << msg;
    EXPECT_NE(msg.find("OpStore"), std::string::npos) << msg;
    EXPECT_NE(msg.find("OpEntryPoint GLCompute"), std::string::npos) << msg;  // the disassembly
    EXPECT_NE(msg.find("OpFunctionEnd"), std::string::npos) << msg;
  }
}

TEST(SpirvModule, MissingFunctionEndFailsWithDisassembly) {
  Module m;
  std::vector<uint32_t> words = empty_shader(m);
  ASSERT_EQ(words.back(), (1u << 16) | word(Op::OpFunctionEnd));
  words.pop_back();
  try {
    validate_spirv(words, "truncated module");
    FAIL() << "validate_spirv accepted a module without OpFunctionEnd";
  } catch (const InternalError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("truncated module"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Missing OpFunctionEnd"), std::string::npos) << msg;
    EXPECT_TRUE(msg.ends_with("OpReturn\n")) << msg;  // the disassembly, up to the cut
  }
}

TEST(SpirvModule, BuilderMisuseIsAnInternalError) {
  Module m;
  const Id u32 = m.type_uint(32);
  EXPECT_THROW(m.ret(), InternalError);  // no function
  m.begin_function(m.type_void());
  EXPECT_THROW(m.begin_function(m.type_void()), InternalError);  // nested
  EXPECT_THROW(m.begin_block(m.new_label()), InternalError);     // entry block still open
  m.ret();
  // After a terminator:
  EXPECT_THROW(m.binary(Op::OpIAdd, m.constant_u32(1), m.constant_u32(2)), InternalError);
  const Id dangling = m.new_label();
  m.begin_block(dangling);
  const Id one = m.constant_u32(1);
  // A result id that is already defined, or was never reserved:
  EXPECT_THROW(m.emit(Op::OpIAdd, u32, {one, one}, one), InternalError);
  EXPECT_THROW(m.emit(Op::OpIAdd, u32, {one, one}, m.bound() + 5), InternalError);
  EXPECT_THROW(m.end_function(), InternalError);  // unterminated block
  m.unreachable();
  m.end_function();
  EXPECT_THROW(m.type_block({u32}, {}), InternalError);  // missing offset
  EXPECT_THROW(m.type_int(12, false), InternalError);
  EXPECT_THROW(m.type_pointer(spv::StorageClass::Function, 12345), InternalError);  // not a type
  EXPECT_NO_THROW(m.finish());
}

TEST(SpirvModule, Spirv14InterfaceListsEveryGlobal) {
  Module m({.version = version_word(1, 4)});
  const std::vector<uint32_t> words = grid_stride_add_one(m);
  EXPECT_EQ(words[1], 0x00010400u);
  EXPECT_EQ(entry_point_interface(words).size(), 3u);  // two builtins and the buffer
  EXPECT_NO_THROW(validate_spirv(words, "SPIR-V 1.4"));
}

TEST(SpirvModule, OptimizedModuleValidatesAndDisassemblyRoundTrips) {
  Module m;
  const std::vector<uint32_t> words = grid_stride_add_one(m);
  const std::string text = disassemble(words);
  EXPECT_NE(text.find("OpLoopMerge"), std::string::npos) << text;
  EXPECT_NE(text.find("%gl_GlobalInvocationID"), std::string::npos) << text;  // friendly names
  EXPECT_NE(text.find("OpDecorate %buf DescriptorSet 0"), std::string::npos) << text;

  const std::vector<uint32_t> optimized = optimize_spirv(words);
  EXPECT_NO_THROW(validate_spirv(optimized, "optimised grid-stride"));
  EXPECT_EQ(optimized[1], words[1]);  // same SPIR-V version
  const std::string opt_text = disassemble(optimized);
  EXPECT_NE(opt_text.find("OpEntryPoint GLCompute"), std::string::npos) << opt_text;
  EXPECT_NO_THROW(validate_spirv(optimize_spirv(optimized), "optimised twice"));

  // An invalid module makes the optimiser throw too, not return garbage.
  std::vector<uint32_t> broken = words;
  broken.pop_back();
  EXPECT_THROW(optimize_spirv(broken), InternalError);
  // A binary that does not parse still gets a readable report.
  const std::vector<uint32_t> garbage{0x07230203u, 0x00010300u, 0, 10, 0, 0xffffffffu};
  EXPECT_NE(disassemble(garbage).find("could not be disassembled"), std::string::npos);
  EXPECT_THROW(validate_spirv(garbage, "garbage"), InternalError);
}

}  // namespace
}  // namespace grove::spirv
