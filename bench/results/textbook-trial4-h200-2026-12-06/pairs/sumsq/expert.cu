// Sum of squares to a scalar: grid-stride "add during load", warp shuffles, one shared slot per warp,
// one atomicAdd per block.
#include <cuda_runtime.h>

__global__ void sumsq(const float* __restrict__ g_idata, float* g_odata, unsigned int n) {
  extern __shared__ float sdata[];
  const unsigned int tid = threadIdx.x;
  float v = 0.0f;
  for (unsigned int i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x) {
    const float x = g_idata[i];
    v += x * x;
  }
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((tid & 31) == 0) sdata[tid >> 5] = v;
  __syncthreads();
  if (tid < 32) {
    v = tid < (blockDim.x >> 5) ? sdata[tid] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (tid == 0) atomicAdd(g_odata, v);
  }
}

__global__ void init_data(float* p, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (float)(i & 7) * 0.125f;
}

int main() {
  const unsigned int n = 1u << 25;
  const int threads = 256;
  float *d_in, *d_out;
  cudaMalloc(&d_in, n * sizeof(float));
  cudaMalloc(&d_out, sizeof(float));
  init_data<<<(n + threads - 1) / threads, threads>>>(d_in, n);
  cudaMemset(d_out, 0, sizeof(float));
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  sumsq<<<sms * 4, threads, (threads / 32) * sizeof(float)>>>(d_in, d_out, n);
  cudaDeviceSynchronize();
  cudaFree(d_in); cudaFree(d_out);
  return 0;
}
