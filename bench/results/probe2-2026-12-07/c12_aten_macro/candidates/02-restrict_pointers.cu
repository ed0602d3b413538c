// Caffe-style grid-stride macro, elementwise leaky ReLU.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_1D_KERNEL_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

__global__ void leaky_relu_forward(const int n, const float* __restrict__ in, float* out, float slope) {
  {
      int htam_tail = 0;
      if (((reinterpret_cast<unsigned long long>(in + (0)) | reinterpret_cast<unsigned long long>(out + (0))) & 15ull) == 0ull) {
          const int htam_n4 = ((n)) / 4;
          for (int htam_v4 = blockIdx.x * blockDim.x + threadIdx.x; htam_v4 < htam_n4; htam_v4 += blockDim.x * gridDim.x) {
              float4 htam_q04 = reinterpret_cast<const float4 *>(in + (0))[htam_v4];
              float4 htam_q14;
              { float htam_q0 = htam_q04.x; float htam_q1; { float v = htam_q0; htam_q1 = v > 0 ? v : v * slope; } htam_q14.x = htam_q1; }
              { float htam_q0 = htam_q04.y; float htam_q1; { float v = htam_q0; htam_q1 = v > 0 ? v : v * slope; } htam_q14.y = htam_q1; }
              { float htam_q0 = htam_q04.z; float htam_q1; { float v = htam_q0; htam_q1 = v > 0 ? v : v * slope; } htam_q14.z = htam_q1; }
              { float htam_q0 = htam_q04.w; float htam_q1; { float v = htam_q0; htam_q1 = v > 0 ? v : v * slope; } htam_q14.w = htam_q1; }
              reinterpret_cast<float4 *>(out + (0))[htam_v4] = htam_q14;
          }
          htam_tail = htam_n4 * 4;
      }
      for (int index = htam_tail + blockIdx.x * blockDim.x + threadIdx.x; index < (n); index += blockDim.x * gridDim.x)
          {
          float v = in[index];
          out[index] = v > 0 ? v : v * slope;
        }
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
