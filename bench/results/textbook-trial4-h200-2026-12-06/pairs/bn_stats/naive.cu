// Batch-norm statistics over an NCHW tensor: mean and (biased) variance per channel, one thread per channel.
#include <cuda_runtime.h>

__global__ void bn_stats(const float* x, float* mean, float* var, int N, int C, int HW) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c < C) {
    float s = 0.0f;
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < HW; ++i) s += x[((size_t)n * C + c) * HW + i];
    float m = s / (float)(N * HW);
    float v = 0.0f;
    for (int n = 0; n < N; ++n)
      for (int i = 0; i < HW; ++i) {
        float d = x[((size_t)n * C + c) * HW + i] - m;
        v += d * d;
      }
    mean[c] = m;
    var[c] = v / (float)(N * HW);
  }
}

__global__ void fill(float* p, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (float)((i * 37) % 101) * 0.02f;
}

int main() {
  const int N = 32, C = 64, HW = 56 * 56;
  const size_t n = (size_t)N * C * HW;
  float *x, *mean, *var;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&mean, C * sizeof(float));
  cudaMalloc(&var, C * sizeof(float));
  fill<<<(unsigned)((n + 255) / 256), 256>>>(x, n);
  bn_stats<<<(C + 63) / 64, 64>>>(x, mean, var, N, C, HW);
  cudaDeviceSynchronize();
  cudaFree(x); cudaFree(mean); cudaFree(var);
  return 0;
}
