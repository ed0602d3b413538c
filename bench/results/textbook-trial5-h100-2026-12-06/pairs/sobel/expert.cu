// Sobel gradient magnitude through a shared tile with a one-pixel halo (32 x 8 blocks).
#include <cstdio>
#include <cuda_runtime.h>

#define IDX(x, y, w) ((y) * (w) + (x))
#define BX 32
#define BY 8

__global__ void sobel_mag(const float *__restrict__ img, float *__restrict__ out, int w, int h) {
  __shared__ float tile[BY + 2][BX + 2];
  int x = blockIdx.x * BX + threadIdx.x;
  int y = blockIdx.y * BY + threadIdx.y;
  for (int ty = threadIdx.y; ty < BY + 2; ty += BY)
    for (int tx = threadIdx.x; tx < BX + 2; tx += BX) {
      int gx = blockIdx.x * BX + tx - 1, gy = blockIdx.y * BY + ty - 1;
      tile[ty][tx] = (gx >= 0 && gy >= 0 && gx < w && gy < h) ? img[IDX(gx, gy, w)] : 0.f;
    }
  __syncthreads();
  if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
  int cx = threadIdx.x + 1, cy = threadIdx.y + 1;
  float gx = -tile[cy - 1][cx - 1] + tile[cy - 1][cx + 1] - 2.f * tile[cy][cx - 1] + 2.f * tile[cy][cx + 1]
             - tile[cy + 1][cx - 1] + tile[cy + 1][cx + 1];
  float gy = -tile[cy - 1][cx - 1] - 2.f * tile[cy - 1][cx] - tile[cy - 1][cx + 1]
             + tile[cy + 1][cx - 1] + 2.f * tile[cy + 1][cx] + tile[cy + 1][cx + 1];
  out[IDX(x, y, w)] = sqrtf(gx * gx + gy * gy);
}

int main() {
  const int w = 8192, h = 4096;
  float *img, *out;
  cudaMalloc(&img, (size_t)w * h * sizeof(float));
  cudaMalloc(&out, (size_t)w * h * sizeof(float));
  cudaMemset(img, 0, (size_t)w * h * sizeof(float));
  cudaMemset(out, 0, (size_t)w * h * sizeof(float));
  dim3 block(BX, BY);
  dim3 grid((w + BX - 1) / BX, (h + BY - 1) / BY);
  sobel_mag<<<grid, block>>>(img, out, w, h);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
