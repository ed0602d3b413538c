// Caffe macro: reverse copy (index read from the other end).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_1D_KERNEL_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

__global__ void reverse_kernel(const int n, const float* __restrict__ in, float* out) {
  CUDA_1D_KERNEL_LOOP(index, n) {
    out[index] = in[n - 1 - index];
  }
}

int main() {
  const int n = 1000003, C = 7;
  float* h = (float*)malloc(2 * n * sizeof(float));
  for (int i = 0; i < 2 * n; ++i) h[i] = (float)(i % 101);
  float *di, *dout, *db;
  cudaMalloc(&di, 2 * n * sizeof(float));
  cudaMalloc(&dout, 2 * n * sizeof(float));
  cudaMalloc(&db, C * sizeof(float));
  cudaMemcpy(di, h, 2 * n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, h, C * sizeof(float), cudaMemcpyHostToDevice);
  reverse_kernel<<<(n + 255) / 256, 256>>>(n, di, dout);
  cudaMemcpy(h, dout, n * sizeof(float), cudaMemcpyDeviceToHost);
  printf("out[5] = %f\n", h[5]);
  cudaFree(di); cudaFree(dout); cudaFree(db); free(h);
  return 0;
}
