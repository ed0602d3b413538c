// y = A^T x: four adjacent columns per thread with float4 row loads, x staged through shared memory.
#include <cstdio>
#include <cuda_runtime.h>

#define ROWS_PER_TILE 256

__global__ void atx(const float *__restrict__ A, const float *__restrict__ x, float *__restrict__ y, int m, int n) {
  __shared__ float xs[ROWS_PER_TILE];
  int j4 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int i0 = 0; i0 < m; i0 += ROWS_PER_TILE) {
    for (int t = threadIdx.x; t < ROWS_PER_TILE; t += blockDim.x)
      xs[t] = (i0 + t < m) ? x[i0 + t] : 0.f;
    __syncthreads();
    int rows = min(ROWS_PER_TILE, m - i0);
    if (j4 + 3 < n) {
      for (int r = 0; r < rows; ++r) {
        float4 a = *reinterpret_cast<const float4 *>(A + (size_t)(i0 + r) * n + j4);
        float xv = xs[r];
        acc.x += a.x * xv; acc.y += a.y * xv; acc.z += a.z * xv; acc.w += a.w * xv;
      }
    } else {
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < 4 && j4 + c < n; ++c)
          (&acc.x)[c] += A[(size_t)(i0 + r) * n + j4 + c] * xs[r];
    }
    __syncthreads();
  }
  for (int c = 0; c < 4; ++c)
    if (j4 + c < n) y[j4 + c] = (&acc.x)[c];
}

int main() {
  const int m = 8192, n = 4096;
  float *A, *x, *y;
  cudaMalloc(&A, (size_t)m * n * sizeof(float));
  cudaMalloc(&x, m * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(A, 0, (size_t)m * n * sizeof(float));
  cudaMemset(x, 0, m * sizeof(float));
  int threads = 128;
  int blocks = ((n + 3) / 4 + threads - 1) / threads;
  atx<<<blocks, threads>>>(A, x, y, m, n);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
