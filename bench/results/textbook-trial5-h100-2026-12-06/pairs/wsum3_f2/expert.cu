// Weighted sum of three vectors with float2 loads and a grid-stride loop sized to the SMs.
#include <cstdio>
#include <cuda_runtime.h>

struct Weights { float wa, wb, wc; };

__global__ void wsum3(const float *__restrict__ a, const float *__restrict__ b, const float *__restrict__ c,
                      float *__restrict__ out, Weights w, unsigned int n) {
  unsigned int n2 = n / 2;
  unsigned int stride = gridDim.x * blockDim.x;
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n2; i += stride) {
    float2 x = reinterpret_cast<const float2 *>(a)[i];
    float2 y = reinterpret_cast<const float2 *>(b)[i];
    float2 z = reinterpret_cast<const float2 *>(c)[i];
    reinterpret_cast<float2 *>(out)[i] =
        make_float2(w.wa * x.x + w.wb * y.x + w.wc * z.x, w.wa * x.y + w.wb * y.y + w.wc * z.y);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0 && (n & 1u))
    out[n - 1] = w.wa * a[n - 1] + w.wb * b[n - 1] + w.wc * c[n - 1];
}

int main() {
  const unsigned int n = 1u << 24;
  float *a, *b, *c, *out;
  cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&b, n * sizeof(float));
  cudaMalloc(&c, n * sizeof(float)); cudaMalloc(&out, n * sizeof(float));
  cudaMemset(a, 0, n * sizeof(float)); cudaMemset(b, 0, n * sizeof(float)); cudaMemset(c, 0, n * sizeof(float));
  Weights w = {0.5f, 0.25f, 0.25f};
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  wsum3<<<sms * 8, 256>>>(a, b, c, out, w, n);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
