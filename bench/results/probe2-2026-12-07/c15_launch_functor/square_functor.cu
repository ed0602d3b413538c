// Launch from a host functor's operator().
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void square_kernel(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * in[i];
}

struct SquareLauncher {
  int threads;
  void operator()(const float* in, float* out, int n) const {
    int blocks = (n + threads - 1) / threads;
    square_kernel<<<blocks, threads>>>(in, out, n);
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
