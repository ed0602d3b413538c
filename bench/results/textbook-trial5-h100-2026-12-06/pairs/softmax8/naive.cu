// Softmax over a short last dimension (D = 8), one thread per row, ATen-like template.
#include <cstdio>
#include <cuda_runtime.h>

template <typename scalar_t>
__global__ void softmax_last8(const scalar_t *input, scalar_t *output, int64_t rows) {
  int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) {
    const scalar_t *in = input + r * 8;
    scalar_t *out = output + r * 8;
    scalar_t mx = in[0];
    for (int k = 1; k < 8; ++k) mx = in[k] > mx ? in[k] : mx;
    scalar_t sum = 0;
    for (int k = 0; k < 8; ++k) sum += exp(in[k] - mx);
    for (int k = 0; k < 8; ++k) out[k] = exp(in[k] - mx) / sum;
  }
}

int main() {
  const int64_t rows = 1 << 22;  // 4M rows x 8 floats = 128 MB in
  float *in, *out;
  cudaMalloc(&in, rows * 8 * sizeof(float));
  cudaMalloc(&out, rows * 8 * sizeof(float));
  cudaMemset(in, 0, rows * 8 * sizeof(float));
  softmax_last8<float><<<(rows + 255) / 256, 256>>>(in, out, rows);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
