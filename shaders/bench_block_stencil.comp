// bench_block_stencil.comp — the 7-point Laplacian y = x(i-1) + x(i+1) +
// x(j-1) + x(j+1) + x(k-1) + x(k+1) - 6 x over every voxel of the active
// blocks of the grid bench_block_map.comp works on (64^3 blocks of 4^3
// voxels in a pool, each voxel holding (x, y)), indices clamped to the
// 256^3 grid, a voxel of an inactive block reading 0: Grove's memory
// contract by hand. A neighbour in the voxel's own block is read at its
// block's entry; another block's is found through the slot array.
//   binding 0: list (u32[count], pool entries), binding 1: blocks
//   (u32[count], each listed block's index), binding 2: slots (u32[64^3]:
//   0 or 1 + the block's entry), binding 3: pool (f32[capacity * 128])
//   push constants: count (u32)
// One workgroup per listed block, one invocation per voxel: dispatch count groups.
#version 450

layout(local_size_x = 64) in;

layout(set = 0, binding = 0, std430) readonly buffer List {
  uint list[];
};
layout(set = 0, binding = 1, std430) readonly buffer Blocks {
  uint blocks[];
};
layout(set = 0, binding = 2, std430) readonly buffer Slots {
  uint slots[];
};
layout(set = 0, binding = 3, std430) buffer Pool {
  float pool[];
};

layout(push_constant, std430) uniform Params {
  uint count;
} params;

float x_at(uint entry, uvec3 block, ivec3 v) {
  const uvec3 c = uvec3(clamp(v, ivec3(0), ivec3(255)));
  const uvec3 b = c >> 2u;
  const uint local = ((c.x & 3u) * 4u + (c.y & 3u)) * 4u + (c.z & 3u);
  if (b == block) return pool[(entry * 64u + local) * 2u];
  const uint slot = slots[(b.x * 64u + b.y) * 64u + b.z];
  return slot == 0u ? 0.0 : pool[((slot - 1u) * 64u + local) * 2u];
}

void main() {
  const uint n = gl_WorkGroupID.x;
  if (n >= params.count) return;
  const uint entry = list[n];
  const uint b = blocks[n];
  const uvec3 block = uvec3(b / 4096u, b / 64u % 64u, b % 64u);
  const uint l = gl_LocalInvocationID.x;
  const ivec3 v = ivec3(block * 4u + uvec3(l / 16u, l / 4u % 4u, l % 4u));
  const uint at = (entry * 64u + l) * 2u;
  pool[at + 1u] = x_at(entry, block, v - ivec3(1, 0, 0)) + x_at(entry, block, v + ivec3(1, 0, 0)) +
                  x_at(entry, block, v - ivec3(0, 1, 0)) + x_at(entry, block, v + ivec3(0, 1, 0)) +
                  x_at(entry, block, v - ivec3(0, 0, 1)) + x_at(entry, block, v + ivec3(0, 0, 1)) - 6.0 * pool[at];
}
