// bench_block_map.comp — y = 2 * x + 1 over every voxel of the active blocks
// of a sparse grid whose blocks of 64 voxels live in a pool, each voxel
// holding (x, y) side by side (the layout of Grove's dense(ijk, 4) with
// place(x, y) under a pointer). `list` holds the pool entries of the active
// blocks, built once by the host.
//   binding 0: list (u32[count]), binding 1: pool (f32[capacity * 128])
//   push constants: count (u32)
// One workgroup per listed block, one invocation per voxel: dispatch count groups.
#version 450

layout(local_size_x = 64) in;

layout(set = 0, binding = 0, std430) readonly buffer List {
  uint list[];
};
layout(set = 0, binding = 1, std430) buffer Pool {
  float pool[];
};

layout(push_constant, std430) uniform Params {
  uint count;
} params;

void main() {
  const uint b = gl_WorkGroupID.x;
  if (b >= params.count) return;
  const uint at = (list[b] * 64u + gl_LocalInvocationID.x) * 2u;
  pool[at + 1u] = pool[at] * 2.0 + 1.0;
}
