// Min/max pass 1: sequential addressing in shared memory, then a warp-shuffle finish (same blocks, same outputs).
#include <cstdio>
#include <cfloat>
#include <cooperative_groups.h>
#include <cuda_runtime.h>
namespace cg = cooperative_groups;

__global__ void minmax_reduce(const float *__restrict__ x, float *block_min, float *block_max, int n) {
  cg::thread_block cta = cg::this_thread_block();
  extern __shared__ float smem[];
  float *smin = smem, *smax = smem + blockDim.x;
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  float vmin = (i < n) ? x[i] : FLT_MAX;
  float vmax = (i < n) ? x[i] : -FLT_MAX;
  smin[tid] = vmin; smax[tid] = vmax;
  cg::sync(cta);
  for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s) {
      smin[tid] = vmin = fminf(vmin, smin[tid + s]);
      smax[tid] = vmax = fmaxf(vmax, smax[tid + s]);
    }
    cg::sync(cta);
  }
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cta);
  if (cta.thread_rank() < 32) {
    if (blockDim.x >= 64) { vmin = fminf(vmin, smin[tid + 32]); vmax = fmaxf(vmax, smax[tid + 32]); }
    for (int off = warp.size() / 2; off > 0; off /= 2) {
      vmin = fminf(vmin, warp.shfl_down(vmin, off));
      vmax = fmaxf(vmax, warp.shfl_down(vmax, off));
    }
  }
  if (tid == 0) { block_min[blockIdx.x] = vmin; block_max[blockIdx.x] = vmax; }
}

__global__ void scale_kernel(float *x, const float *mn, const float *mx, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = (x[i] - mn[0]) / (mx[0] - mn[0] + 1e-12f);
}

int main() {
  const int n = 1 << 25, threads = 256, blocks = (n + threads - 1) / threads;
  float *x, *bmin, *bmax;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&bmin, blocks * sizeof(float));
  cudaMalloc(&bmax, blocks * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  minmax_reduce<<<blocks, threads, 2 * threads * sizeof(float)>>>(x, bmin, bmax, n);
  scale_kernel<<<blocks, threads>>>(x, bmin, bmax, n);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
