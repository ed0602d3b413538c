// Embedding lookup (gather), 16 bytes per thread: four consecutive channels of one token moved as a float4
// (C is a multiple of 4 in every model this serves), the token id read once per four elements.
#include <cuda_runtime.h>

__global__ void embedding_gather(float* out, const int* ids, const float* table, int n_tokens, int C) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (i < n_tokens * C) {
    int t = i / C;
    int c = i % C;
    const float4 v = __ldg(reinterpret_cast<const float4*>(table + (size_t)__ldg(ids + t) * C + c));
    *reinterpret_cast<float4*>(out + i) = v;
  }
}

__global__ void init_ids(int* ids, int n, int V) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) ids[i] = (int)(((long long)i * 7919) % V);
}

__global__ void init_table(float* w, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] = (float)(i % 1009) * 1e-3f;
}

int main() {
  const int V = 32000, C = 1024, n_tokens = 16384;
  float *table, *out;
  int* ids;
  cudaMalloc(&table, (size_t)V * C * sizeof(float));
  cudaMalloc(&out, (size_t)n_tokens * C * sizeof(float));
  cudaMalloc(&ids, n_tokens * sizeof(int));
  init_table<<<(unsigned)(((size_t)V * C + 255) / 256), 256>>>(table, (size_t)V * C);
  init_ids<<<(n_tokens + 255) / 256, 256>>>(ids, n_tokens, V);
  const int block_size = 256;
  embedding_gather<<<(n_tokens * C / 4 + block_size - 1) / block_size, block_size>>>(out, ids, table, n_tokens, C);
  cudaDeviceSynchronize();
  cudaFree(table); cudaFree(out); cudaFree(ids);
  return 0;
}
