// bench_reduce_sum.comp — total += sum of x[0 .. n): each invocation sums its
// elements (a grid-stride loop), the workgroup adds the partial sums in
// shared memory, and one invocation per workgroup adds the result to the
// total with a float atomic (VK_EXT_shader_atomic_float,
// shaderBufferFloat32AtomicAdd).
//   binding 0: x (f32[n]), binding 1: total (f32[1])
//   push constants: n (u32)
// Any group count works; the benchmark dispatches ceil(n / (256 * 16)).
#version 450
#extension GL_EXT_shader_atomic_float : require

layout(local_size_x = 256) in;

layout(set = 0, binding = 0, std430) readonly buffer X {
  float x[];
};
layout(set = 0, binding = 1, std430) buffer Total {
  float total;
};

layout(push_constant, std430) uniform Params {
  uint n;
} params;

shared float partial[256];

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  float sum = 0.0;
  for (uint i = gl_GlobalInvocationID.x; i < params.n; i += stride) sum += x[i];
  partial[lane] = sum;
  memoryBarrierShared();
  barrier();
  for (uint width = gl_WorkGroupSize.x / 2u; width > 0u; width /= 2u) {
    if (lane < width) partial[lane] += partial[lane + width];
    memoryBarrierShared();
    barrier();
  }
  if (lane == 0u) atomicAdd(total, partial[0]);
}
