// Count the nonzero ints of an array: every nonzero element does one atomicAdd on a global counter.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void init_vals(int *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = (i % 3 == 0) ? 0 : i;
}

__global__ void count_nonzero(const int *v, unsigned long long *count, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && v[i] != 0) atomicAdd(count, 1ULL);
}

int main() {
  const int n = 1 << 26;  // 256 MB
  int *v; unsigned long long *count;
  cudaMalloc(&v, (size_t)n * sizeof(int));
  cudaMalloc(&count, sizeof(unsigned long long));
  cudaMemset(count, 0, sizeof(unsigned long long));
  init_vals<<<(n + 255) / 256, 256>>>(v, n);
  count_nonzero<<<(n + 255) / 256, 256>>>(v, count, n);
  cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
