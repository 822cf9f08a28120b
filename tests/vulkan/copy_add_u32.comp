// copy_add_u32.comp (test shader) — dst[i] = src[i] + addend for i < count.
// Binding 0: src, binding 1: dst. Push constants: count, addend.
#version 450

layout(local_size_x = 32) in;

layout(set = 0, binding = 0, std430) readonly buffer Src {
  uint src[];
};
layout(set = 0, binding = 1, std430) writeonly buffer Dst {
  uint dst[];
};

layout(push_constant, std430) uniform Params {
  uint count;
  uint addend;
} params;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < params.count; i += stride) {
    dst[i] = src[i] + params.addend;
  }
}
