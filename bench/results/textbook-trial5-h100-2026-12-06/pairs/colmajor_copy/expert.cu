// Column-major copy with threadIdx.x on the row (the contiguous index) and 32-wide rows of threads.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void colmajor_copy(const float *__restrict__ src, int lda, float *__restrict__ dst, int ldb, int m, int n) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;   // thread x walks rows: contiguous in column-major
  int col = blockIdx.y * blockDim.y + threadIdx.y;
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
  dim3 block(32, 8);
  dim3 grid((m + block.x - 1) / block.x, (n + block.y - 1) / block.y);
  colmajor_copy<<<grid, block>>>(src, lda, dst, ldb, m, n);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
