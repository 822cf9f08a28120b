// bench/cuda/bench_kernels.cu — hand-written CUDA, the baselines of the CUDA
// rows of grove_bench: the same kernels as the GLSL baselines of the Vulkan
// rows (shaders/bench_*.comp), written as a CUDA programmer would, compiled
// by nvcc at build time (bench/CMakeLists.txt) into a fat binary that
// grove_bench loads through the driver API on the device Grove runs on
// (bench/cuda_common.cpp).
//
// The launch ABI bench/gpu_common.h's HandWritten uses: the buffers first
// (device pointers), then 32-bit parameters, in the order of the GLSL
// shader's push constants; each kernel's block size is the shader's
// local_size_x.

// The hash of bench/gpu_common.h (hash_u32).
__device__ __forceinline__ unsigned hash_u32(unsigned n, unsigned salt) {
  unsigned h = n * 0x9E3779B1u ^ salt;
  h = (h ^ (h >> 15u)) * 0x2C1B3C6Du;
  h = (h ^ (h >> 12u)) * 0x297A2D39u;
  return h ^ (h >> 15u);
}

// y = a * x + y; blocks of 256.
extern "C" __global__ void __launch_bounds__(256) bench_saxpy(const float* __restrict__ x, float* __restrict__ y,
                                                              unsigned a_bits, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __uint_as_float(a_bits) * x[i] + y[i];
}

// One Jacobi step of a 5-point stencil on n x n floats, the border left
// alone; blocks of 256.
extern "C" __global__ void __launch_bounds__(256) bench_stencil5(const float* __restrict__ a, float* __restrict__ b,
                                                                 unsigned n) {
  const unsigned c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= n * n) return;
  const unsigned i = c / n, j = c % n;
  if (i == 0u || j == 0u || i == n - 1u || j == n - 1u) return;
  b[c] = 0.25f * (a[c - n] + a[c + n] + a[c - 1u] + a[c + 1u]);
}

// The sum of n floats into *total: a grid-stride loop, a tree in shared
// memory per block, one atomic add per block; blocks of 256.
extern "C" __global__ void __launch_bounds__(256) bench_reduce_sum(const float* __restrict__ x, float* total,
                                                                   unsigned n) {
  __shared__ float partial[256];
  const unsigned lane = threadIdx.x;
  const unsigned stride = gridDim.x * blockDim.x;
  float sum = 0.0f;
  for (unsigned i = blockIdx.x * blockDim.x + lane; i < n; i += stride) sum += x[i];
  partial[lane] = sum;
  __syncthreads();
  for (unsigned width = blockDim.x / 2u; width > 0u; width /= 2u) {
    if (lane < width) partial[lane] += partial[lane + width];
    __syncthreads();
  }
  if (lane == 0u) atomicAdd(total, partial[0]);
}

// Writes `count` pseudo-random voxels of a 256^3 grid stored as a slot array
// of 64^3 blocks of 4^3 voxels, allocated on first write with an atomic bump
// allocator and compare-and-swap publication, losers' candidates on a spare
// list (shaders/bench_sparse_activate.comp says more). meta: bump,
// spare_count, failures, pad, slots[64^3]. Blocks of 256.
extern "C" __global__ void __launch_bounds__(256) bench_sparse_activate(unsigned* meta, float* voxels,
                                                                        unsigned* spares, unsigned salt,
                                                                        unsigned count, unsigned capacity) {
  const unsigned n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= count) return;
  unsigned* bump = meta;
  unsigned* spare_count = meta + 1;
  unsigned* failures = meta + 2;
  unsigned* slots = meta + 4;
  const unsigned h = hash_u32(n, salt);
  const unsigned i = h & 255u, j = (h >> 8u) & 255u, k = (h >> 16u) & 255u;
  const unsigned block = ((i >> 2u) * 64u + (j >> 2u)) * 64u + (k >> 2u);
  const unsigned local = ((i & 3u) * 4u + (j & 3u)) * 4u + (k & 3u);
  unsigned slot = *(volatile unsigned*)&slots[block];
  if (slot == 0u) {
    const unsigned candidate = atomicAdd(bump, 1u);
    if (candidate < capacity) {
      const unsigned old = atomicCAS(&slots[block], 0u, candidate + 1u);
      if (old == 0u) {
        slot = candidate + 1u;
      } else {
        spares[atomicAdd(spare_count, 1u)] = candidate + 1u;
        slot = old;
      }
    } else {
      slot = atomicCAS(&slots[block], 0u, 0u);  // a racing thread may have published it meanwhile
      if (slot == 0u) {
        atomicAdd(failures, 1u);
        return;
      }
    }
  }
  voxels[(slot - 1u) * 64u + local] = static_cast<float>((i * 256u + j) * 256u + k);
}

// y = 2 x + 1 over every voxel of the listed blocks of a pool whose voxels
// hold (x, y) side by side; one block of 64 threads per listed block.
extern "C" __global__ void __launch_bounds__(64) bench_block_map(const unsigned* __restrict__ list, float* pool,
                                                                 unsigned count) {
  const unsigned b = blockIdx.x;
  if (b >= count) return;
  const unsigned at = (list[b] * 64u + threadIdx.x) * 2u;
  pool[at + 1u] = pool[at] * 2.0f + 1.0f;
}

// The 7-point Laplacian over every voxel of the listed blocks of that pool
// (shaders/bench_block_stencil.comp): indices clamped to the 256^3 grid, a
// voxel of an inactive block reading 0, a neighbour in the voxel's own block
// read at its entry, another block's found through the slot array.
__device__ float block_stencil_x(const unsigned* __restrict__ slots, const float* pool, unsigned entry,
                                 unsigned bi, unsigned bj, unsigned bk, int i, int j, int k) {
  const unsigned ci = static_cast<unsigned>(min(max(i, 0), 255)), cj = static_cast<unsigned>(min(max(j, 0), 255)),
                 ck = static_cast<unsigned>(min(max(k, 0), 255));
  const unsigned local = ((ci & 3u) * 4u + (cj & 3u)) * 4u + (ck & 3u);
  if (ci >> 2u == bi && cj >> 2u == bj && ck >> 2u == bk) return pool[(entry * 64u + local) * 2u];
  const unsigned slot = slots[((ci >> 2u) * 64u + (cj >> 2u)) * 64u + (ck >> 2u)];
  return slot == 0u ? 0.0f : pool[((slot - 1u) * 64u + local) * 2u];
}

extern "C" __global__ void __launch_bounds__(64) bench_block_stencil(const unsigned* __restrict__ list,
                                                                     const unsigned* __restrict__ blocks,
                                                                     const unsigned* __restrict__ slots, float* pool,
                                                                     unsigned count) {
  const unsigned n = blockIdx.x;
  if (n >= count) return;
  const unsigned entry = list[n], b = blocks[n];
  const unsigned bi = b / 4096u, bj = b / 64u % 64u, bk = b % 64u;
  const unsigned l = threadIdx.x;
  const int i = static_cast<int>(bi * 4u + l / 16u), j = static_cast<int>(bj * 4u + l / 4u % 4u),
            k = static_cast<int>(bk * 4u + l % 4u);
  const unsigned at = (entry * 64u + l) * 2u;
  pool[at + 1u] = block_stencil_x(slots, pool, entry, bi, bj, bk, i - 1, j, k) +
                  block_stencil_x(slots, pool, entry, bi, bj, bk, i + 1, j, k) +
                  block_stencil_x(slots, pool, entry, bi, bj, bk, i, j - 1, k) +
                  block_stencil_x(slots, pool, entry, bi, bj, bk, i, j + 1, k) +
                  block_stencil_x(slots, pool, entry, bi, bj, bk, i, j, k - 1) +
                  block_stencil_x(slots, pool, entry, bi, bj, bk, i, j, k + 1) - 6.0f * pool[at];
}

// words[0] = 1: the launch-overhead baseline; one thread.
extern "C" __global__ void bench_store_one(unsigned* words) { words[0] = 1u; }
