// Sobel gradient magnitude on a row-major float image, 2-D grid, nine global loads per pixel.
#include <cstdio>
#include <cuda_runtime.h>

#define IDX(x, y, w) ((y) * (w) + (x))

__global__ void sobel_mag(const float *img, float *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
  float gx = -img[IDX(x - 1, y - 1, w)] + img[IDX(x + 1, y - 1, w)]
             - 2.f * img[IDX(x - 1, y, w)] + 2.f * img[IDX(x + 1, y, w)]
             - img[IDX(x - 1, y + 1, w)] + img[IDX(x + 1, y + 1, w)];
  float gy = -img[IDX(x - 1, y - 1, w)] - 2.f * img[IDX(x, y - 1, w)] - img[IDX(x + 1, y - 1, w)]
             + img[IDX(x - 1, y + 1, w)] + 2.f * img[IDX(x, y + 1, w)] + img[IDX(x + 1, y + 1, w)];
  out[IDX(x, y, w)] = sqrtf(gx * gx + gy * gy);
}

int main() {
  const int w = 8192, h = 4096;
  float *img, *out;
  cudaMalloc(&img, (size_t)w * h * sizeof(float));
  cudaMalloc(&out, (size_t)w * h * sizeof(float));
  cudaMemset(img, 0, (size_t)w * h * sizeof(float));
  cudaMemset(out, 0, (size_t)w * h * sizeof(float));
  dim3 block(16, 16);
  dim3 grid((w + 15) / 16, (h + 15) / 16);
  sobel_mag<<<grid, block>>>(img, out, w, h);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
