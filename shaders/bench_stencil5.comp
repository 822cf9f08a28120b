// bench_stencil5.comp — one Jacobi step of the 2-D 5-point stencil on an
// n x n row-major grid: b[i][j] = 0.25 * (a[i-1][j] + a[i+1][j] + a[i][j-1]
// + a[i][j+1]) for interior cells; the border of b is left alone.
//   binding 0: a (f32[n * n]), binding 1: b (f32[n * n])
//   push constants: n (u32)
// One invocation per cell: dispatch ceil(n * n / 256) groups.
#version 450

layout(local_size_x = 256) in;

layout(set = 0, binding = 0, std430) readonly buffer A {
  float a[];
};
layout(set = 0, binding = 1, std430) writeonly buffer B {
  float b[];
};

layout(push_constant, std430) uniform Params {
  uint n;
} params;

void main() {
  const uint n = params.n;
  const uint c = gl_GlobalInvocationID.x;
  if (c >= n * n) return;
  const uint i = c / n;
  const uint j = c % n;
  if (i == 0u || j == 0u || i == n - 1u || j == n - 1u) return;
  b[c] = 0.25 * (a[c - n] + a[c + n] + a[c - 1u] + a[c + 1u]);
}
