// RoPE, one thread per rotated pair: consecutive threads take consecutive pairs of the same head vector,
// each pair and its (cos, sin) moved with one float2 load.
#include <cuda_runtime.h>

__global__ void rope_forward(float* out, const float* inp, const float* freqs_cis, int B, int T, int NH, int HS) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;  // pair index over (B, T, NH, HS/2)
  int half = HS / 2;
  if (idx >= B * T * NH * half) return;
  int p = idx % half;
  int t = (idx / half / NH) % T;
  float2 x = reinterpret_cast<const float2*>(inp)[idx];
  float2 f = reinterpret_cast<const float2*>(freqs_cis)[(size_t)t * half + p];
  float2 o;
  o.x = x.x * f.x - x.y * f.y;
  o.y = x.x * f.y + x.y * f.x;
  reinterpret_cast<float2*>(out)[idx] = o;
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
  int B = 8, T = 1024, NH = 12, HS = 64;
  size_t n = (size_t)B * T * NH * HS;
  float *inp, *out, *freqs;
  cudaMalloc(&inp, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMalloc(&freqs, (size_t)T * HS * sizeof(float));
  init_x<<<(unsigned)((n + 255) / 256), 256>>>(inp, n);
  init_freqs<<<(T * HS / 2 + 255) / 256, 256>>>(freqs, T, HS);
  int block_size = 256;
  int grid_size = (B * T * NH * HS / 2 + block_size - 1) / block_size;
  rope_forward<<<grid_size, block_size>>>(out, inp, freqs, B, T, NH, HS);
  cudaDeviceSynchronize();
  cudaFree(inp); cudaFree(out); cudaFree(freqs);
  return 0;
}
