// PyTorch-style two-variable grid-stride macro with an index type argument.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cuda_runtime.h>

#define CUDA_KERNEL_LOOP_TYPE(i, n, index_type)                         \
  int64_t _i_n_d_e_x = blockIdx.x * blockDim.x + threadIdx.x;           \
  for (index_type i = _i_n_d_e_x; _i_n_d_e_x < (n);                     \
       _i_n_d_e_x += blockDim.x * gridDim.x, i = _i_n_d_e_x)

#define CUDA_KERNEL_LOOP(i, n) CUDA_KERNEL_LOOP_TYPE(i, n, int)

__global__ void axpby_kernel(int64_t n, float a, const float* x, float b, float* y) {
  CUDA_KERNEL_LOOP_TYPE(k, n, int64_t) {
    y[k] = a * x[k] + b * y[k];
  }
}

int main() {
  const int64_t n = 3000001;
  float* hx = (float*)malloc(n * sizeof(float));
  float* hy = (float*)malloc(n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) { hx[i] = (float)(i % 10); hy[i] = 1.0f; }
  float *dx, *dy;
  cudaMalloc(&dx, n * sizeof(float));
  cudaMalloc(&dy, n * sizeof(float));
  cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dy, hy, n * sizeof(float), cudaMemcpyHostToDevice);
  axpby_kernel<<<(n + 255) / 256, 256>>>(n, 2.0f, dx, 0.5f, dy);
  cudaMemcpy(hy, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
  printf("y[7] = %f\n", hy[7]);
  cudaFree(dx); cudaFree(dy); free(hx); free(hy);
  return 0;
}
