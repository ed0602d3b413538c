// 2-D scale over a cudaMallocPitch buffer.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void __launch_bounds__(512) scale_pitched(float* img, size_t pitch, int width, int height, float s) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) {
    float* row = (float*)((char*)img + y * pitch);
    row[x] *= s;
  }
}

int main() {
  const int w = 1000, h = 700;
  float* hi = (float*)malloc(w * h * sizeof(float));
  for (int i = 0; i < w * h; ++i) hi[i] = (float)(i % 50);
  float* d; size_t pitch;
  cudaMallocPitch((void**)&d, &pitch, w * sizeof(float), h);
  cudaMemcpy2D(d, pitch, hi, w * sizeof(float), w * sizeof(float), h, cudaMemcpyHostToDevice);
  dim3 block(32, 16);
  dim3 grid((w + block.x - 1) / block.x, (h + block.y - 1) / block.y);
  scale_pitched<<<grid, block>>>(d, pitch, w, h, 3.0f);
  cudaMemcpy2D(hi, w * sizeof(float), d, pitch, w * sizeof(float), h, cudaMemcpyDeviceToHost);
  printf("v = %f\n", hi[w * 5 + 3]);
  cudaFree(d); free(hi);
  return 0;
}
