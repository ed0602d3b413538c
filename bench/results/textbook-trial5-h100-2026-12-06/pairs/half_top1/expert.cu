// Per-row top-1 in half: one warp per row, lanes stride the row, a shuffle argmax (lowest index on ties).
#include <cstdio>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void row_top1_half(const __half *__restrict__ x, __half *__restrict__ vals, int *__restrict__ idx, int rows, int cols) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (warp >= rows) return;
  const __half *row = x + (size_t)warp * cols;
  float best = -INFINITY;
  int bi = 0x7fffffff;
  for (int c = lane; c < cols; c += 32) {
    float v = __half2float(row[c]);
    if (v > best) { best = v; bi = c; }
  }
  for (int off = 16; off > 0; off >>= 1) {
    float ov = __shfl_down_sync(0xffffffffu, best, off);
    int oi = __shfl_down_sync(0xffffffffu, bi, off);
    if (ov > best || (ov == best && oi < bi)) { best = ov; bi = oi; }
  }
  if (lane == 0) { vals[warp] = __float2half(best); idx[warp] = bi; }
}

int main() {
  const int rows = 32768, cols = 2048;
  __half *x, *vals; int *idx;
  cudaMalloc(&x, (size_t)rows * cols * sizeof(__half));
  cudaMalloc(&vals, rows * sizeof(__half));
  cudaMalloc(&idx, rows * sizeof(int));
  cudaMemset(x, 0, (size_t)rows * cols * sizeof(__half));
  const int threads = 256;
  row_top1_half<<<(rows * 32 + threads - 1) / threads, threads>>>(x, vals, idx, rows, cols);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
