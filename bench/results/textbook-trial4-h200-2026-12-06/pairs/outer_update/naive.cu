// Rank-1 update A += alpha * x * y^T (BLAS sger), row-major M x N, size_t indices.
// Naive mapping: threadIdx.x walks the rows, so a warp's 32 lanes are a row apart.
#include <cuda_runtime.h>

__global__ void outer_update(float* A, const float* x, const float* y, float alpha, size_t M, size_t N) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t j = (size_t)blockIdx.y * blockDim.y + threadIdx.y;
  if (i < M && j < N) A[i * N + j] += alpha * x[i] * y[j];
}

__global__ void init_vec(float* v, size_t n, float s) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = (float)(i % 17) * s;
}

int main() {
  const size_t M = 4096, N = 4096;  // 64 MB matrix
  float *A, *x, *y;
  cudaMalloc(&A, M * N * sizeof(float));
  cudaMalloc(&x, M * sizeof(float));
  cudaMalloc(&y, N * sizeof(float));
  cudaMemset(A, 0, M * N * sizeof(float));
  init_vec<<<(unsigned)((M + 255) / 256), 256>>>(x, M, 0.5f);
  init_vec<<<(unsigned)((N + 255) / 256), 256>>>(y, N, 0.25f);
  dim3 block(16, 16);
  dim3 grid((unsigned)((M + 15) / 16), (unsigned)((N + 15) / 16));
  outer_update<<<grid, block>>>(A, x, y, 2.0f, M, N);
  cudaDeviceSynchronize();
  cudaFree(A); cudaFree(x); cudaFree(y);
  return 0;
}
