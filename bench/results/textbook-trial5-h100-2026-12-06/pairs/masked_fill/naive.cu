// masked_fill / where: out = mask ? value : x, macro-heavy style with size_t indices and an early return.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

#define CUDA_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
  printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); return 1; } } while (0)
#define THREADS 256
#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

__global__ void masked_fill(const float *x, const uint8_t *mask, float value, float *out, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = mask[i] ? value : x[i];
}

int main() {
  const size_t n = (size_t)1 << 25;
  float *x, *out; uint8_t *mask;
  CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&out, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&mask, n));
  CUDA_CHECK(cudaMemset(x, 0, n * sizeof(float)));
  CUDA_CHECK(cudaMemset(mask, 1, n / 2));
  CUDA_CHECK(cudaMemset(mask + n / 2, 0, n - n / 2));
  masked_fill<<<(unsigned)CEIL_DIV(n, THREADS), THREADS>>>(x, mask, -1e9f, out, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  return 0;
}
