// 3x3 box blur of an 8-bit grayscale image, clamp-to-edge; one thread per pixel, nine global reads.
#include <cuda_runtime.h>

__global__ void boxblur3x3(const unsigned char* src, unsigned char* dst, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) {
    int sum = 0;
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        int xx = min(max(x + dx, 0), width - 1);
        int yy = min(max(y + dy, 0), height - 1);
        sum += src[yy * width + xx];
      }
    }
    dst[y * width + x] = (unsigned char)((sum + 4) / 9);
  }
}

__global__ void init_image(unsigned char* img, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) img[i] = (unsigned char)((i * 31) & 255);
}

int main() {
  const int width = 4096, height = 4096;  // 16 MB image
  const int n = width * height;
  unsigned char *src, *dst;
  cudaMalloc(&src, n);
  cudaMalloc(&dst, n);
  init_image<<<(n + 255) / 256, 256>>>(src, n);
  dim3 block(16, 16);
  dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
  boxblur3x3<<<grid, block>>>(src, dst, width, height);
  cudaDeviceSynchronize();
  cudaFree(src); cudaFree(dst);
  return 0;
}
