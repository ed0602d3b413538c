// Min/max normalize, pass 1: per-block min and max with an interleaved shared-memory tree (cooperative groups).
#include <cstdio>
#include <cfloat>
#include <cooperative_groups.h>
#include <cuda_runtime.h>
namespace cg = cooperative_groups;

__global__ void minmax_reduce(const float *x, float *block_min, float *block_max, int n) {
  cg::thread_block cta = cg::this_thread_block();
  extern __shared__ float smem[];
  float *smin = smem, *smax = smem + blockDim.x;
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  smin[tid] = (i < n) ? x[i] : FLT_MAX;
  smax[tid] = (i < n) ? x[i] : -FLT_MAX;
  cg::sync(cta);
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) {
      smin[tid] = fminf(smin[tid], smin[tid + s]);
      smax[tid] = fmaxf(smax[tid], smax[tid + s]);
    }
    cg::sync(cta);
  }
  if (tid == 0) { block_min[blockIdx.x] = smin[0]; block_max[blockIdx.x] = smax[0]; }
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
  // (pass 1b, reducing the block partials, is left to the host library in this course example)
  scale_kernel<<<blocks, threads>>>(x, bmin, bmax, n);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
