// bench_saxpy.comp — y[i] = a * x[i] + y[i]: the hand-written reference the
// dense saxpy benchmark races Grove's generated SPIR-V against.
//   binding 0: x (f32[n]), binding 1: y (f32[n])
//   push constants: a (f32), n (u32)
// One invocation per element: dispatch ceil(n / 256) groups.
#version 450

layout(local_size_x = 256) in;

layout(set = 0, binding = 0, std430) readonly buffer X {
  float x[];
};
layout(set = 0, binding = 1, std430) buffer Y {
  float y[];
};

layout(push_constant, std430) uniform Params {
  float a;
  uint n;
} params;

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < params.n) y[i] = params.a * x[i] + y[i];
}
