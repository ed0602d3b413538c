// Mean of every column: 32 consecutive columns per block on the lanes, the warps (threadIdx.y) split the
// rows, partial sums meet in a padded shared array, warp 0 adds them and writes 32 means.
#include <cuda_runtime.h>

#define THREADS 256
#define WARPS (THREADS / 32)

__global__ void __launch_bounds__(THREADS)
col_mean(const float* __restrict__ in, float* __restrict__ out, unsigned rows, unsigned cols) {
  __shared__ float part[WARPS][33];
  const unsigned col = blockIdx.x * 32 + threadIdx.x;
  float s = 0.0f;
  if (col < cols)
    for (unsigned r = threadIdx.y; r < rows; r += WARPS) s += in[(size_t)r * cols + col];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float t = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) t += part[w][threadIdx.x];
    out[col] = t / (float)rows;
  }
}

__global__ void init_mat(float* p, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (float)(i % 23) - 11.0f;
}

int main() {
  const unsigned rows = 32768, cols = 1024;
  const size_t n = (size_t)rows * cols;
  float *in, *out;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, cols * sizeof(float));
  init_mat<<<(unsigned)((n + 255) / 256), 256>>>(in, n);
  col_mean<<<(cols + 31) / 32, dim3(32, WARPS)>>>(in, out, rows, cols);
  cudaDeviceSynchronize();
  cudaFree(in); cudaFree(out);
  return 0;
}
