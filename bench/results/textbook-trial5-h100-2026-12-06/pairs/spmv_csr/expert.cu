// CSR SpMV, vector kernel: one warp per row, lanes stride the row's nonzeros, a shuffle sum.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void init_csr(int *row_ptr, int *col_idx, float *vals, float *x, int rows, int nnz_per_row, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r > rows) return;
  row_ptr[r] = r * nnz_per_row;
  if (r == rows) return;
  for (int k = 0; k < nnz_per_row; ++k) {
    col_idx[r * nnz_per_row + k] = (r * 7 + k * 131) % cols;
    vals[r * nnz_per_row + k] = 1.0f;
  }
  if (r < cols) x[r] = 1.0f;
}

__global__ void spmv_csr(const int *__restrict__ row_ptr, const int *__restrict__ col_idx, const float *__restrict__ vals,
                         const float *__restrict__ x, float *__restrict__ y, int rows) {
  int row = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  int lane = threadIdx.x & 31;
  if (row >= rows) return;
  int start = row_ptr[row], end = row_ptr[row + 1];
  float dot = 0.0f;
  for (int jj = start + lane; jj < end; jj += 32)
    dot += vals[jj] * __ldg(&x[col_idx[jj]]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) dot += __shfl_down_sync(0xffffffffu, dot, off);
  if (lane == 0) y[row] = dot;
}

int main() {
  const int rows = 1 << 20, cols = 1 << 20, nnz_per_row = 32, nnz = rows * nnz_per_row;
  int *row_ptr, *col_idx; float *vals, *x, *y;
  cudaMalloc(&row_ptr, (rows + 1) * sizeof(int));
  cudaMalloc(&col_idx, (size_t)nnz * sizeof(int));
  cudaMalloc(&vals, (size_t)nnz * sizeof(float));
  cudaMalloc(&x, cols * sizeof(float));
  cudaMalloc(&y, rows * sizeof(float));
  init_csr<<<(rows + 256) / 256, 256>>>(row_ptr, col_idx, vals, x, rows, nnz_per_row, cols);
  const int threads = 256;
  spmv_csr<<<(int)(((long long)rows * 32 + threads - 1) / threads), threads>>>(row_ptr, col_idx, vals, x, y, rows);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
