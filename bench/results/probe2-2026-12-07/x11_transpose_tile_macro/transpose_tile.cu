// Naive transpose: TILE macro for the 32x32 block, the block size hard-coded in the index.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define TILE 32

__global__ void transpose_rows(float* odata, const float* idata, int width, int height) {
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  if (x < width && y < height)
    odata[x * height + y] = idata[y * width + x];
}

int main() {
  const int width = 2048, height = 777;
  float* h = (float*)malloc(width * height * sizeof(float));
  for (int i = 0; i < width * height; ++i) h[i] = (float)(i % 1000);
  float *di, *dout;
  cudaMalloc(&di, width * height * sizeof(float));
  cudaMalloc(&dout, width * height * sizeof(float));
  cudaMemcpy(di, h, width * height * sizeof(float), cudaMemcpyHostToDevice);
  dim3 threads(TILE, TILE);
  dim3 blocks((width + TILE - 1) / TILE, (height + TILE - 1) / TILE);
  transpose_rows<<<blocks, threads>>>(dout, di, width, height);
  cudaMemcpy(h, dout, width * height * sizeof(float), cudaMemcpyDeviceToHost);
  printf("o[1] = %f\n", h[1]);
  cudaFree(di); cudaFree(dout); free(h);
  return 0;
}
