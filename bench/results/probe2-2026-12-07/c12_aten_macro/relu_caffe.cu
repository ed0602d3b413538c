// Caffe-style grid-stride macro, elementwise leaky ReLU.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_1D_KERNEL_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

__global__ void leaky_relu_forward(const int n, const float* in, float* out, float slope) {
  CUDA_1D_KERNEL_LOOP(index, n) {
    float v = in[index];
    out[index] = v > 0 ? v : v * slope;
  }
}

int main() {
  const int n = 1 << 22;
  float* h = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; ++i) h[i] = (float)((i % 200) - 100) * 0.01f;
  float *di, *dout;
  cudaMalloc(&di, n * sizeof(float));
  cudaMalloc(&dout, n * sizeof(float));
  cudaMemcpy(di, h, n * sizeof(float), cudaMemcpyHostToDevice);
  const int threads = 512;
  const int blocks = (n + threads - 1) / threads;
  leaky_relu_forward<<<blocks, threads>>>(n, di, dout, 0.1f);
  cudaMemcpy(h, dout, n * sizeof(float), cudaMemcpyDeviceToHost);
  printf("out[3] = %f\n", h[3]);
  cudaFree(di); cudaFree(dout); free(h);
  return 0;
}
