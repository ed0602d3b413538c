// Grid computed by a host helper get_blocks(n).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

constexpr int kThreads = 256;

inline int get_blocks(const int n) { return (n + kThreads - 1) / kThreads; }

__global__ void sigmoid_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.0f / (1.0f + __expf(-x[i]));
}

int main() {
  const int n = 1 << 20;
  float* h = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) h[i] = (float)((i % 100) - 50) * 0.1f;
  float *dx, *dy;
  cudaMalloc(&dx, n * sizeof(float));
  cudaMalloc(&dy, n * sizeof(float));
  cudaMemcpy(dx, h, n * sizeof(float), cudaMemcpyHostToDevice);
  sigmoid_kernel<<<get_blocks(n), kThreads>>>(dx, dy, n);
  cudaMemcpy(h, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
  printf("y[0] = %f\n", h[0]);
  cudaFree(dx); cudaFree(dy); free(h);
  return 0;
}
