// Count nonzeros: grid-stride count in a register, __syncthreads_count per block, one atomic per block.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void init_vals(int *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = (i % 3 == 0) ? 0 : i;
}

__global__ void count_nonzero(const int *__restrict__ v, unsigned long long *count, int n) {
  __shared__ unsigned int block_count;
  if (threadIdx.x == 0) block_count = 0;
  __syncthreads();
  unsigned int mine = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    mine += (v[i] != 0);
  for (int off = 16; off > 0; off >>= 1) mine += __shfl_down_sync(0xffffffffu, mine, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(&block_count, mine);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(count, (unsigned long long)block_count);
}

int main() {
  const int n = 1 << 26;
  int *v; unsigned long long *count;
  cudaMalloc(&v, (size_t)n * sizeof(int));
  cudaMalloc(&count, sizeof(unsigned long long));
  cudaMemset(count, 0, sizeof(unsigned long long));
  init_vals<<<(n + 255) / 256, 256>>>(v, n);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  count_nonzero<<<sms * 8, 256>>>(v, count, n);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
