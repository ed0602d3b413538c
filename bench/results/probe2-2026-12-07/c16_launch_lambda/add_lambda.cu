// Launch from a host lambda.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  const int n = 1000000;
  float* h = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) h[i] = (float)i;
  float *da, *db, *dc;
  cudaMalloc(&da, n * sizeof(float));
  cudaMalloc(&db, n * sizeof(float));
  cudaMalloc(&dc, n * sizeof(float));
  cudaMemcpy(da, h, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, h, n * sizeof(float), cudaMemcpyHostToDevice);
  auto launch = [&](int count) {
    const int threads = 128;
    add_kernel<<<(count + threads - 1) / threads, threads>>>(da, db, dc, count);
  };
  launch(n);
  cudaMemcpy(h, dc, n * sizeof(float), cudaMemcpyDeviceToHost);
  printf("c[9] = %f\n", h[9]);
  cudaFree(da); cudaFree(db); cudaFree(dc); free(h);
  return 0;
}
