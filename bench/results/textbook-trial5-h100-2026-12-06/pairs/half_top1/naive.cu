// Per-row top-1 (max value and its index) of a half-precision matrix, one thread per row.
#include <cstdio>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void row_top1_half(const __half *x, __half *vals, int *idx, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    const __half *row = x + (size_t)r * cols;
    float best = __half2float(row[0]);
    int bi = 0;
    for (int c = 1; c < cols; ++c) {
      float v = __half2float(row[c]);
      if (v > best) { best = v; bi = c; }
    }
    vals[r] = __float2half(best);
    idx[r] = bi;
  }
}

int main() {
  const int rows = 32768, cols = 2048;  // 128 MB of half
  __half *x, *vals; int *idx;
  cudaMalloc(&x, (size_t)rows * cols * sizeof(__half));
  cudaMalloc(&vals, rows * sizeof(__half));
  cudaMalloc(&idx, rows * sizeof(int));
  cudaMemset(x, 0, (size_t)rows * cols * sizeof(__half));
  row_top1_half<<<(rows + 127) / 128, 128>>>(x, vals, idx, rows, cols);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
