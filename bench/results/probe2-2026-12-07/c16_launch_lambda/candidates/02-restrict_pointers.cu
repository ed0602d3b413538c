// Launch from a host lambda.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* c, int n) {
  {
      const long long htam_n = (long long)(n);
      const long long htam_stride = (long long)blockDim.x * gridDim.x;
      const long long htam_gid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
      long long htam_tail = 0;
      if (((reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(b) | reinterpret_cast<unsigned long long>(c)) & 15ull) == 0ull) {
          const long long htam_n4 = htam_n / 4;
          for (long long htam_v = htam_gid; htam_v < htam_n4; htam_v += htam_stride) {
              const float4 htam_a4 = reinterpret_cast<const float4 *>(a)[htam_v];
              const float4 htam_b4 = reinterpret_cast<const float4 *>(b)[htam_v];
              float4 htam_c4;
              { float htam_a = htam_a4.x; float htam_b = htam_b4.x; float htam_c; htam_c = htam_a + htam_b; htam_c4.x = htam_c; }
              { float htam_a = htam_a4.y; float htam_b = htam_b4.y; float htam_c; htam_c = htam_a + htam_b; htam_c4.y = htam_c; }
              { float htam_a = htam_a4.z; float htam_b = htam_b4.z; float htam_c; htam_c = htam_a + htam_b; htam_c4.z = htam_c; }
              { float htam_a = htam_a4.w; float htam_b = htam_b4.w; float htam_c; htam_c = htam_a + htam_b; htam_c4.w = htam_c; }
              reinterpret_cast<float4 *>(c)[htam_v] = htam_c4;
          }
          htam_tail = htam_n4 * 4;
      }
      for (long long htam_j = htam_tail + htam_gid; htam_j < htam_n; htam_j += htam_stride) {
          const int i = (int)htam_j;
          c[i] = a[i] + b[i];
      }
  }
}

int main() {
  const int n = 1000000;
  float* h = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) h[i] = (float)i;
  float *da, *db, *dc;
  cudaMalloc(&da, n * sizeof(float));
  cudaMalloc(&db, n * sizeof(float));
  cudaMalloc(&dc, n * sizeof(float));
  cudaMemcpy(da, h, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, h, n * sizeof(float), cudaMemcpyHostToDevice);
  auto launch = [&](int count) {
    const int threads = 128;
    add_kernel<<<(((count + threads - 1) / threads) + 3) / 4, threads>>>(da, db, dc, count);
  };
  launch(n);
  cudaMemcpy(h, dc, n * sizeof(float), cudaMemcpyDeviceToHost);
  printf("c[9] = %f\n", h[9]);
  cudaFree(da); cudaFree(db); cudaFree(dc); free(h);
  return 0;
}
