// Naive transpose launched with a 32x32 block.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) {
    out[c * rows + r] = in[r * cols + c];
  }
}

int main() {
  const int rows = 1000, cols = 1500;
  float* h = (float*)malloc(rows * cols * sizeof(float));
  for (int i = 0; i < rows * cols; ++i) h[i] = (float)i;
  float *di, *dout;
  cudaMalloc(&di, rows * cols * sizeof(float));
  cudaMalloc(&dout, rows * cols * sizeof(float));
  cudaMemcpy(di, h, rows * cols * sizeof(float), cudaMemcpyHostToDevice);
  dim3 block(32, 32);
  dim3 grid((cols + 31) / 32, (rows + 31) / 32);
  transpose_naive<<<grid, block>>>(di, dout, rows, cols);
  cudaMemcpy(h, dout, rows * cols * sizeof(float), cudaMemcpyDeviceToHost);
  printf("out[1] = %f\n", h[1]);
  cudaFree(di); cudaFree(dout); free(h);
  return 0;
}
