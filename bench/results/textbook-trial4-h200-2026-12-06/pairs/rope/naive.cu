// Rotary position embedding (RoPE), llm.c-like layout: inp/out are (B, T, NH, HS), freqs_cis is (T, HS/2, 2)
// holding cos and sin. Naive: one thread per (b, t, h) head vector, looping over its HS/2 pairs.
#include <cuda_runtime.h>

__global__ void rope_forward(float* out, const float* inp, const float* freqs_cis, int B, int T, int NH, int HS) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= B * T * NH) return;
  int t = (idx / NH) % T;
  const float* x = inp + (size_t)idx * HS;
  float* o = out + (size_t)idx * HS;
  const float* f = freqs_cis + (size_t)t * HS;
  for (int p = 0; p < HS / 2; p++) {
    float c = f[2 * p], s = f[2 * p + 1];
    float x0 = x[2 * p], x1 = x[2 * p + 1];
    o[2 * p] = x0 * c - x1 * s;
    o[2 * p + 1] = x0 * s + x1 * c;
  }
}

__global__ void init_freqs(float* f, int T, int HS) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= T * HS / 2) return;
  int t = i / (HS / 2), p = i % (HS / 2);
  float theta = t * powf(10000.0f, -2.0f * p / HS);
  f[2 * i] = cosf(theta);
  f[2 * i + 1] = sinf(theta);
}

__global__ void init_x(float* x, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = (float)(i % 29) * 0.1f - 1.4f;
}

int main() {
  int B = 8, T = 1024, NH = 12, HS = 64;  // 24 MB activations
  size_t n = (size_t)B * T * NH * HS;
  float *inp, *out, *freqs;
  cudaMalloc(&inp, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMalloc(&freqs, (size_t)T * HS * sizeof(float));
  init_x<<<(unsigned)((n + 255) / 256), 256>>>(inp, n);
  init_freqs<<<(T * HS / 2 + 255) / 256, 256>>>(freqs, T, HS);
  int block_size = 128;
  int grid_size = (B * T * NH + block_size - 1) / block_size;
  rope_forward<<<grid_size, block_size>>>(out, inp, freqs, B, T, NH, HS);
  cudaDeviceSynchronize();
  cudaFree(inp); cudaFree(out); cudaFree(freqs);
  return 0;
}
