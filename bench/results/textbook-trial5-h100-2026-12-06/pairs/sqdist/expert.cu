// Squared distances, tiled: 16 points of P and 16 of Q staged in shared memory per 16-wide chunk of d.
#include <cstdio>
#include <cuda_runtime.h>
#define TILE 16

__global__ void sqdist(const float *__restrict__ P, const float *__restrict__ Q, float *__restrict__ D, int m, int n, int d) {
  __shared__ float Ps[TILE][TILE];
  __shared__ float Qs[TILE][TILE + 1];
  int tx = threadIdx.x, ty = threadIdx.y;
  int j = blockIdx.x * TILE + tx;
  int i = blockIdx.y * TILE + ty;
  float acc = 0.f;
  for (int k0 = 0; k0 < d; k0 += TILE) {
    int pi = blockIdx.y * TILE + ty, qj = blockIdx.x * TILE + ty;
    Ps[ty][tx] = (pi < m && k0 + tx < d) ? P[pi * d + k0 + tx] : 0.f;
    Qs[ty][tx] = (qj < n && k0 + tx < d) ? Q[qj * d + k0 + tx] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) {
      float diff = Ps[ty][k] - Qs[tx][k];
      acc += diff * diff;
    }
    __syncthreads();
  }
  if (i < m && j < n) D[i * n + j] = acc;
}

int main() {
  const int m = 4096, n = 4096, d = 64;
  float *P, *Q, *D;
  cudaMalloc(&P, (size_t)m * d * sizeof(float));
  cudaMalloc(&Q, (size_t)n * d * sizeof(float));
  cudaMalloc(&D, (size_t)m * n * sizeof(float));
  cudaMemset(P, 0, (size_t)m * d * sizeof(float));
  cudaMemset(Q, 0, (size_t)n * d * sizeof(float));
  dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
  sqdist<<<grid, block>>>(P, Q, D, m, n, d);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
