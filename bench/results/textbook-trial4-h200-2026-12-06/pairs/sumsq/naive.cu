// Sum of squares to a scalar, NVIDIA-samples style: interleaved-addressing shared tree per block,
// then one atomicAdd of the block's partial into the scalar.
#include <cuda_runtime.h>

__global__ void sumsq(const float* g_idata, float* g_odata, unsigned int n) {
  extern __shared__ float sdata[];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = (i < n) ? g_idata[i] : 0.0f;
  sdata[tid] = v * v;
  __syncthreads();
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    if ((tid % (2 * s)) == 0) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) atomicAdd(g_odata, sdata[0]);
}

__global__ void init_data(float* p, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (float)(i & 7) * 0.125f;
}

int main() {
  const unsigned int n = 1u << 25;  // 128 MB
  const int threads = 256;
  float *d_in, *d_out;
  cudaMalloc(&d_in, n * sizeof(float));
  cudaMalloc(&d_out, sizeof(float));
  init_data<<<(n + threads - 1) / threads, threads>>>(d_in, n);
  cudaMemset(d_out, 0, sizeof(float));
  sumsq<<<(n + threads - 1) / threads, threads, threads * sizeof(float)>>>(d_in, d_out, n);
  cudaDeviceSynchronize();
  cudaFree(d_in); cudaFree(d_out);
  return 0;
}
