// bench_sparse_activate.comp — writes `count` pseudo-random voxels of a
// 256^3 grid stored as a slot array of 64^3 blocks of 4^3 voxels, blocks
// allocated on first write: Grove's memory contract by hand.
//
// A slot holds 0 (block inactive) or 1 + the block's entry in the pool. A
// thread that finds its slot empty takes a candidate entry from the bump
// allocator and publishes it with compare-and-swap; a thread that loses the
// race keeps the winner's entry and puts its candidate on the spare list
// (nothing leaks, nobody waits). A full pool is counted in `failures`.
//
//   binding 0: Meta { bump, spare_count, failures, pad, slots[64^3] } (u32)
//   binding 1: pool (f32[capacity * 64]), zeroed while unused
//   binding 2: spares (u32[capacity])
//   push constants: salt, count, capacity (u32)
// One invocation per voxel: dispatch ceil(count / 256) groups.
#version 450

layout(local_size_x = 256) in;

layout(set = 0, binding = 0, std430) buffer Meta {
  uint bump;
  uint spare_count;
  uint failures;
  uint pad;
  uint slots[];
};
layout(set = 0, binding = 1, std430) buffer Pool {
  float voxels[];
};
layout(set = 0, binding = 2, std430) buffer Spares {
  uint spares[];
};

layout(push_constant, std430) uniform Params {
  uint salt;
  uint count;
  uint capacity;
} params;

// The same hash as bench/vulkan_common.h (hash_u32) and the Grove kernel.
uint hash_u32(uint n, uint salt) {
  uint h = n * 0x9E3779B1u ^ salt;
  h = (h ^ (h >> 15u)) * 0x2C1B3C6Du;
  h = (h ^ (h >> 12u)) * 0x297A2D39u;
  return h ^ (h >> 15u);
}

void main() {
  const uint n = gl_GlobalInvocationID.x;
  if (n >= params.count) return;
  const uint h = hash_u32(n, params.salt);
  const uint i = h & 255u;
  const uint j = (h >> 8u) & 255u;
  const uint k = (h >> 16u) & 255u;
  const uint block = ((i >> 2u) * 64u + (j >> 2u)) * 64u + (k >> 2u);
  const uint local = ((i & 3u) * 4u + (j & 3u)) * 4u + (k & 3u);

  uint slot = slots[block];
  if (slot == 0u) {
    const uint candidate = atomicAdd(bump, 1u);
    if (candidate < params.capacity) {
      const uint old = atomicCompSwap(slots[block], 0u, candidate + 1u);
      if (old == 0u) {
        slot = candidate + 1u;
      } else {
        spares[atomicAdd(spare_count, 1u)] = candidate + 1u;
        slot = old;
      }
    } else {
      // Full; a racing thread may have published the block meanwhile.
      slot = atomicCompSwap(slots[block], 0u, 0u);
      if (slot == 0u) {
        atomicAdd(failures, 1u);
        return;
      }
    }
  }
  voxels[(slot - 1u) * 64u + local] = float((i * 256u + j) * 256u + k);
}
