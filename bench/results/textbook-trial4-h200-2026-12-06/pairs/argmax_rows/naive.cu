// Argmax per row (first index of the maximum), one thread per row.
#include <cuda_runtime.h>

__global__ void argmax_rows(const float* logits, int* idx, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    const float* p = logits + (size_t)r * cols;
    float best = p[0];
    int bi = 0;
    for (int c = 1; c < cols; ++c) {
      if (p[c] > best) { best = p[c]; bi = c; }
    }
    idx[r] = bi;
  }
}

__global__ void init_logits(float* p, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (float)((i * 2654435761u) % 1000) * 0.001f;
}

int main() {
  const int rows = 65536, cols = 512;  // 128 MB of logits
  const size_t n = (size_t)rows * cols;
  float* logits;
  int* idx;
  cudaMalloc(&logits, n * sizeof(float));
  cudaMalloc(&idx, rows * sizeof(int));
  init_logits<<<(unsigned)((n + 255) / 256), 256>>>(logits, n);
  argmax_rows<<<(rows + 255) / 256, 256>>>(logits, idx, rows, cols);
  cudaDeviceSynchronize();
  cudaFree(logits); cudaFree(idx);
  return 0;
}
