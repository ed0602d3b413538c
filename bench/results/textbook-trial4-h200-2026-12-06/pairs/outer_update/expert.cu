// Rank-1 update A += alpha * x * y^T: lanes on consecutive columns, four columns per thread (float4),
// the row's alpha * x[i] computed once, scalar path for a ragged or misaligned row end.
#include <cuda_runtime.h>

__global__ void outer_update(float* __restrict__ A, const float* __restrict__ x, const float* __restrict__ y,
                             float alpha, size_t M, size_t N) {
  const size_t j = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * 4;
  const size_t i = (size_t)blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= M || j >= N) return;
  const float ax = alpha * x[i];
  float* row = A + i * N;
  if (j + 3 < N && (N % 4) == 0) {
    float4 a = *reinterpret_cast<float4*>(row + j);
    const float4 b = *reinterpret_cast<const float4*>(y + j);
    a.x += ax * b.x; a.y += ax * b.y; a.z += ax * b.z; a.w += ax * b.w;
    *reinterpret_cast<float4*>(row + j) = a;
  } else {
    for (size_t k = j; k < N && k < j + 4; ++k) row[k] += ax * y[k];
  }
}

__global__ void init_vec(float* v, size_t n, float s) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = (float)(i % 17) * s;
}

int main() {
  const size_t M = 4096, N = 4096;
  float *A, *x, *y;
  cudaMalloc(&A, M * N * sizeof(float));
  cudaMalloc(&x, M * sizeof(float));
  cudaMalloc(&y, N * sizeof(float));
  cudaMemset(A, 0, M * N * sizeof(float));
  init_vec<<<(unsigned)((M + 255) / 256), 256>>>(x, M, 0.5f);
  init_vec<<<(unsigned)((N + 255) / 256), 256>>>(y, N, 0.25f);
  dim3 block(64, 4);
  dim3 grid((unsigned)((N / 4 + 63) / 64), (unsigned)((M + 3) / 4));
  outer_update<<<grid, block>>>(A, x, y, 2.0f, M, N);
  cudaDeviceSynchronize();
  cudaFree(A); cudaFree(x); cudaFree(y);
  return 0;
}
