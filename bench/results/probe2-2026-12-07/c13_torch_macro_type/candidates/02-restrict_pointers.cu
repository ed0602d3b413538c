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

__global__ void axpby_kernel(int64_t n, float a, const float* __restrict__ x, float b, float* y) {
  int64_t _i_n_d_e_x = blockIdx.x * blockDim.x + threadIdx.x; {
      int64_t htam_tail = 0;
      if (((reinterpret_cast<unsigned long long>(y + (0)) | reinterpret_cast<unsigned long long>(x + (0))) & 15ull) == 0ull) {
          const int64_t htam_n4 = ((n)) / 4;
          for (int64_t htam_v4 = _i_n_d_e_x; htam_v4 < htam_n4; htam_v4 += blockDim.x * gridDim.x) {
              float4 htam_q04 = reinterpret_cast<const float4 *>(y + (0))[htam_v4];
              float4 htam_q14 = reinterpret_cast<const float4 *>(x + (0))[htam_v4];
              { float htam_q0 = htam_q04.x; float htam_q1 = htam_q14.x; { htam_q0 = a * htam_q1 + b * htam_q0; } htam_q04.x = htam_q0; }
              { float htam_q0 = htam_q04.y; float htam_q1 = htam_q14.y; { htam_q0 = a * htam_q1 + b * htam_q0; } htam_q04.y = htam_q0; }
              { float htam_q0 = htam_q04.z; float htam_q1 = htam_q14.z; { htam_q0 = a * htam_q1 + b * htam_q0; } htam_q04.z = htam_q0; }
              { float htam_q0 = htam_q04.w; float htam_q1 = htam_q14.w; { htam_q0 = a * htam_q1 + b * htam_q0; } htam_q04.w = htam_q0; }
              reinterpret_cast<float4 *>(y + (0))[htam_v4] = htam_q04;
          }
          htam_tail = htam_n4 * 4;
      }
      for (int64_t k = htam_tail + _i_n_d_e_x; k < (n); k += blockDim.x * gridDim.x)
          {
          y[k] = a * x[k] + b * y[k];
        }
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
