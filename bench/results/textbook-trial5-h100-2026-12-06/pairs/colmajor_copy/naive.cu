// Copy a column-major m x n sub-matrix (leading dimension lda) into a packed column-major buffer.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void colmajor_copy(const float *src, int lda, float *dst, int ldb, int m, int n) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;   // thread x walks columns
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < m && col < n) {
    dst[row + (size_t)col * ldb] = src[row + (size_t)col * lda];
  }
}

int main() {
  const int m = 4000, n = 4096, lda = 4096, ldb = 4000;
  float *src, *dst;
  cudaMalloc(&src, (size_t)lda * n * sizeof(float));
  cudaMalloc(&dst, (size_t)ldb * n * sizeof(float));
  cudaMemset(src, 0, (size_t)lda * n * sizeof(float));
  dim3 block(16, 16);
  dim3 grid((n + block.x - 1) / block.x, (m + block.y - 1) / block.y);
  colmajor_copy<<<grid, block>>>(src, lda, dst, ldb, m, n);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
