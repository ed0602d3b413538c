// Grid computed by a host helper get_blocks(n).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

constexpr int kThreads = 256;

inline int get_blocks(const int n) { return (n + kThreads - 1) / kThreads; }

__global__ void sigmoid_kernel(const float* __restrict__ x, float* y, int n) {
  {
      const long long htam_n = (long long)(n);
      const long long htam_stride = (long long)blockDim.x * gridDim.x;
      const long long htam_gid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
      long long htam_tail = 0;
      if (((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15ull) == 0ull) {
          const long long htam_n4 = htam_n / 4;
          for (long long htam_v = htam_gid; htam_v < htam_n4; htam_v += htam_stride) {
              const float4 htam_x4 = reinterpret_cast<const float4 *>(x)[htam_v];
              float4 htam_y4;
              { float htam_x = htam_x4.x; float htam_y; htam_y = 1.0f / (1.0f + __expf(-htam_x)); htam_y4.x = htam_y; }
              { float htam_x = htam_x4.y; float htam_y; htam_y = 1.0f / (1.0f + __expf(-htam_x)); htam_y4.y = htam_y; }
              { float htam_x = htam_x4.z; float htam_y; htam_y = 1.0f / (1.0f + __expf(-htam_x)); htam_y4.z = htam_y; }
              { float htam_x = htam_x4.w; float htam_y; htam_y = 1.0f / (1.0f + __expf(-htam_x)); htam_y4.w = htam_y; }
              reinterpret_cast<float4 *>(y)[htam_v] = htam_y4;
          }
          htam_tail = htam_n4 * 4;
      }
      for (long long htam_j = htam_tail + htam_gid; htam_j < htam_n; htam_j += htam_stride) {
          const int i = (int)htam_j;
          y[i] = 1.0f / (1.0f + __expf(-x[i]));
      }
  }
}

int main() {
  const int n = 1 << 20;
  float* h = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) h[i] = (float)((i % 100) - 50) * 0.1f;
  float *dx, *dy;
  cudaMalloc(&dx, n * sizeof(float));
  cudaMalloc(&dy, n * sizeof(float));
  cudaMemcpy(dx, h, n * sizeof(float), cudaMemcpyHostToDevice);
  sigmoid_kernel<<<((get_blocks(n)) + 3) / 4, kThreads>>>(dx, dy, n);
  cudaMemcpy(h, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
  printf("y[0] = %f\n", h[0]);
  cudaFree(dx); cudaFree(dy); free(h);
  return 0;
}
