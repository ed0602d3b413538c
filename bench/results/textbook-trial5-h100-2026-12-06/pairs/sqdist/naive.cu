// Squared distances between two point sets (P: m x d, Q: n x d, row-major): D[i][j] = |p_i - q_j|^2.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void sqdist(const float *P, const float *Q, float *D, int m, int n, int d) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < m && j < n) {
    float acc = 0.f;
    for (int k = 0; k < d; ++k) {
      float diff = P[i * d + k] - Q[j * d + k];
      acc += diff * diff;
    }
    D[i * n + j] = acc;
  }
}

int main() {
  const int m = 4096, n = 4096, d = 64;
  float *P, *Q, *D;
  cudaMalloc(&P, (size_t)m * d * sizeof(float));
  cudaMalloc(&Q, (size_t)n * d * sizeof(float));
  cudaMalloc(&D, (size_t)m * n * sizeof(float));
  cudaMemset(P, 0, (size_t)m * d * sizeof(float));
  cudaMemset(Q, 0, (size_t)n * d * sizeof(float));
  dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  sqdist<<<grid, block>>>(P, Q, D, m, n, d);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
