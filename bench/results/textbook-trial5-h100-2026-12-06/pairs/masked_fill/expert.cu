// masked_fill: four elements per thread (float4 values, one 32-bit word of mask bytes), grid-stride loop.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

#define CUDA_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
  printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); return 1; } } while (0)
#define THREADS 256
#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

__global__ void masked_fill(const float *__restrict__ x, const uint8_t *__restrict__ mask, float value,
                            float *__restrict__ out, size_t n) {
  size_t n4 = n / 4;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = reinterpret_cast<const float4 *>(x)[i];
    uchar4 m = reinterpret_cast<const uchar4 *>(mask)[i];
    v.x = m.x ? value : v.x; v.y = m.y ? value : v.y;
    v.z = m.z ? value : v.z; v.w = m.w ? value : v.w;
    reinterpret_cast<float4 *>(out)[i] = v;
  }
  for (size_t i = n4 * 4 + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
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
  int sms; CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  masked_fill<<<sms * 16, THREADS>>>(x, mask, -1e9f, out, n);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  return 0;
}
