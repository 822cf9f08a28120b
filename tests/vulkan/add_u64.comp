// add_u64.comp (test shader) — values[i] += 1 on 64-bit integers, so it
// needs the Int64 capability (shader_int64). Binding 0: the values.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x = 64) in;

layout(set = 0, binding = 0, std430) buffer Values {
  uint64_t values[];
};

layout(push_constant, std430) uniform Params {
  uint count;
} params;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < params.count; i += stride) {
    values[i] += 1ul;
  }
}
