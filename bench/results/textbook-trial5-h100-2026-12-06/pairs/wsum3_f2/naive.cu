// Weighted sum of three vectors, weights passed as a struct by value; scalar loads, one element per thread.
#include <cstdio>
#include <cuda_runtime.h>

struct Weights { float wa, wb, wc; };

__global__ void wsum3(const float *a, const float *b, const float *c, float *out, Weights w, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = w.wa * a[i] + w.wb * b[i] + w.wc * c[i];
}

int main() {
  const unsigned int n = 1u << 24;
  float *a, *b, *c, *out;
  cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&b, n * sizeof(float));
  cudaMalloc(&c, n * sizeof(float)); cudaMalloc(&out, n * sizeof(float));
  cudaMemset(a, 0, n * sizeof(float)); cudaMemset(b, 0, n * sizeof(float)); cudaMemset(c, 0, n * sizeof(float));
  Weights w = {0.5f, 0.25f, 0.25f};
  wsum3<<<(n + 255) / 256, 256>>>(a, b, c, out, w, n);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
