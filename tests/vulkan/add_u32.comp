// add_u32.comp (test shader) — words[i] += addend for i < count.
// Binding 0: the words. Push constants: count, addend. Grid-stride loop.
#version 450

layout(local_size_x = 64) in;

layout(set = 0, binding = 0, std430) buffer Words {
  uint words[];
};

layout(push_constant, std430) uniform Params {
  uint count;
  uint addend;
} params;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < params.count; i += stride) {
    words[i] += params.addend;
  }
}
