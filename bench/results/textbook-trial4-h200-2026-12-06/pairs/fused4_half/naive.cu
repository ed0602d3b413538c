// Fused fp16 elementwise op with four inputs: out = a*b + c*d (each product rounded to half, as __hmul does).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void fused4_half(const __half* a, const __half* b, const __half* c, const __half* d,
                            __half* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = __hadd(__hmul(a[i], b[i]), __hmul(c[i], d[i]));
  }
}

__global__ void init_half(__half* p, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = __float2half((float)(i % 31) * s);
}

int main() {
  const int n = 1 << 24;  // 16M halves = 32 MB per array
  __half *a, *b, *c, *d, *out;
  cudaMalloc(&a, n * sizeof(__half));
  cudaMalloc(&b, n * sizeof(__half));
  cudaMalloc(&c, n * sizeof(__half));
  cudaMalloc(&d, n * sizeof(__half));
  cudaMalloc(&out, n * sizeof(__half));
  init_half<<<(n + 255) / 256, 256>>>(a, n, 0.01f);
  init_half<<<(n + 255) / 256, 256>>>(b, n, 0.02f);
  init_half<<<(n + 255) / 256, 256>>>(c, n, 0.03f);
  init_half<<<(n + 255) / 256, 256>>>(d, n, -0.01f);
  fused4_half<<<(n + 255) / 256, 256>>>(a, b, c, d, out, n);
  cudaDeviceSynchronize();
  cudaFree(a); cudaFree(b); cudaFree(c); cudaFree(d); cudaFree(out);
  return 0;
}
