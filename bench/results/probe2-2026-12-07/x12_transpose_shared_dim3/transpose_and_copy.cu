// A 32x32 block dim3 shared by a naive transpose and a 2-D copy launched after it.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}

__global__ void copy2d(const float* in, float* out, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[r * cols + c] = in[r * cols + c];
}

int main() {
  const int rows = 1024, cols = 1024;
  float* h = (float*)malloc(rows * cols * sizeof(float));
  for (int i = 0; i < rows * cols; ++i) h[i] = (float)i;
  float *di, *dt, *dc;
  cudaMalloc(&di, rows * cols * sizeof(float));
  cudaMalloc(&dt, rows * cols * sizeof(float));
  cudaMalloc(&dc, rows * cols * sizeof(float));
  cudaMemcpy(di, h, rows * cols * sizeof(float), cudaMemcpyHostToDevice);
  dim3 block(32, 32);
  dim3 grid((cols + 31) / 32, (rows + 31) / 32);
  transpose_naive<<<grid, block>>>(di, dt, rows, cols);
  copy2d<<<grid, block>>>(dt, dc, cols, rows);
  cudaMemcpy(h, dc, rows * cols * sizeof(float), cudaMemcpyDeviceToHost);
  printf("c[1] = %f c[last] = %f\n", h[1], h[rows * cols - 1]);
  cudaFree(di); cudaFree(dt); cudaFree(dc); free(h);
  return 0;
}
