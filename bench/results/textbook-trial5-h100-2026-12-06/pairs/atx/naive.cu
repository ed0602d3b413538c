// y = A^T x for a row-major m x n matrix A: one thread per output column, a loop down the rows.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void atx(const float *A, const float *x, float *y, int m, int n) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  float acc = 0.0f;
  for (int i = 0; i < m; ++i) {
    acc += A[(size_t)i * n + j] * x[i];
  }
  y[j] = acc;
}

int main() {
  const int m = 8192, n = 4096;
  float *A, *x, *y;
  cudaMalloc(&A, (size_t)m * n * sizeof(float));
  cudaMalloc(&x, m * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(A, 0, (size_t)m * n * sizeof(float));
  cudaMemset(x, 0, m * sizeof(float));
  atx<<<(n + 255) / 256, 256>>>(A, x, y, m, n);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
