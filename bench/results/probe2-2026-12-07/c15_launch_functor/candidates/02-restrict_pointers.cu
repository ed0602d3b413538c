// Launch from a host functor's operator().
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void square_kernel(const float* __restrict__ in, float* out, int n) {
  {
      const long long htam_n = (long long)(n);
      const long long htam_stride = (long long)blockDim.x * gridDim.x;
      const long long htam_gid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
      long long htam_tail = 0;
      if (((reinterpret_cast<unsigned long long>(in) | reinterpret_cast<unsigned long long>(out)) & 15ull) == 0ull) {
          const long long htam_n4 = htam_n / 4;
          for (long long htam_v = htam_gid; htam_v < htam_n4; htam_v += htam_stride) {
              const float4 htam_in4 = reinterpret_cast<const float4 *>(in)[htam_v];
              float4 htam_out4;
              { float htam_in = htam_in4.x; float htam_out; htam_out = htam_in * htam_in; htam_out4.x = htam_out; }
              { float htam_in = htam_in4.y; float htam_out; htam_out = htam_in * htam_in; htam_out4.y = htam_out; }
              { float htam_in = htam_in4.z; float htam_out; htam_out = htam_in * htam_in; htam_out4.z = htam_out; }
              { float htam_in = htam_in4.w; float htam_out; htam_out = htam_in * htam_in; htam_out4.w = htam_out; }
              reinterpret_cast<float4 *>(out)[htam_v] = htam_out4;
          }
          htam_tail = htam_n4 * 4;
      }
      for (long long htam_j = htam_tail + htam_gid; htam_j < htam_n; htam_j += htam_stride) {
          const int i = (int)htam_j;
          out[i] = in[i] * in[i];
      }
  }
}

struct SquareLauncher {
  int threads;
  void operator()(const float* in, float* out, int n) const {
    int blocks = (n + threads - 1) / threads;
    square_kernel<<<((blocks) + 3) / 4, threads>>>(in, out, n);
  }
};

int main() {
  const int n = 1 << 20;
  float* h = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) h[i] = (float)(i % 17);
  float *di, *dout;
  cudaMalloc(&di, n * sizeof(float));
  cudaMalloc(&dout, n * sizeof(float));
  cudaMemcpy(di, h, n * sizeof(float), cudaMemcpyHostToDevice);
  SquareLauncher launch{256};
  launch(di, dout, n);
  cudaMemcpy(h, dout, n * sizeof(float), cudaMemcpyDeviceToHost);
  printf("out[4] = %f\n", h[4]);
  cudaFree(di); cudaFree(dout); free(h);
  return 0;
}
