// 3x3 box blur, shared tile with a one-pixel halo (clamped loads), then nine shared reads per pixel.
#include <cuda_runtime.h>

#define TILE_W 32
#define TILE_H 8

__global__ void __launch_bounds__(TILE_W * TILE_H)
boxblur3x3(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, int width, int height) {
  __shared__ unsigned char tile[TILE_H + 2][TILE_W + 2];
  const int x0 = blockIdx.x * TILE_W - 1, y0 = blockIdx.y * TILE_H - 1;
  const int tid = threadIdx.y * TILE_W + threadIdx.x;
  for (int k = tid; k < (TILE_W + 2) * (TILE_H + 2); k += TILE_W * TILE_H) {
    const int ty = k / (TILE_W + 2), tx = k % (TILE_W + 2);
    const int xx = min(max(x0 + tx, 0), width - 1);
    const int yy = min(max(y0 + ty, 0), height - 1);
    tile[ty][tx] = src[yy * width + xx];
  }
  __syncthreads();
  const int x = blockIdx.x * TILE_W + threadIdx.x, y = blockIdx.y * TILE_H + threadIdx.y;
  if (x < width && y < height) {
    int sum = 0;
#pragma unroll
    for (int dy = 0; dy < 3; ++dy)
#pragma unroll
      for (int dx = 0; dx < 3; ++dx) sum += tile[threadIdx.y + dy][threadIdx.x + dx];
    dst[y * width + x] = (unsigned char)((sum + 4) / 9);
  }
}

__global__ void init_image(unsigned char* img, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) img[i] = (unsigned char)((i * 31) & 255);
}

int main() {
  const int width = 4096, height = 4096;
  const int n = width * height;
  unsigned char *src, *dst;
  cudaMalloc(&src, n);
  cudaMalloc(&dst, n);
  init_image<<<(n + 255) / 256, 256>>>(src, n);
  dim3 block(TILE_W, TILE_H);
  dim3 grid((width + TILE_W - 1) / TILE_W, (height + TILE_H - 1) / TILE_H);
  boxblur3x3<<<grid, block>>>(src, dst, width, height);
  cudaDeviceSynchronize();
  cudaFree(src); cudaFree(dst);
  return 0;
}
