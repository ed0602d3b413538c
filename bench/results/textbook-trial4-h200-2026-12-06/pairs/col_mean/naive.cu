// Mean of every column of a row-major matrix: one block per column, the block's threads stride the rows
// (lanes a row apart), a shared-memory tree per block.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void col_mean(const float* in, float* out, unsigned rows, unsigned cols) {
  __shared__ float buf[THREADS];
  unsigned col = blockIdx.x;
  float s = 0.0f;
  for (unsigned r = threadIdx.x; r < rows; r += blockDim.x) s += in[(size_t)r * cols + col];
  buf[threadIdx.x] = s;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) buf[threadIdx.x] += buf[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[col] = buf[0] / (float)rows;
}

__global__ void init_mat(float* p, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (float)(i % 23) - 11.0f;
}

int main() {
  const unsigned rows = 32768, cols = 1024;  // 128 MB
  const size_t n = (size_t)rows * cols;
  float *in, *out;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, cols * sizeof(float));
  init_mat<<<(unsigned)((n + 255) / 256), 256>>>(in, n);
  col_mean<<<cols, THREADS>>>(in, out, rows, cols);
  cudaDeviceSynchronize();
  cudaFree(in); cudaFree(out);
  return 0;
}
