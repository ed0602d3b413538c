#include <cuda_runtime.h>
#include <cstdio>
namespace cfg { enum { BLOCK = 256 }; }

__global__ void block_sum(const float* __restrict__ x, float* __restrict__ out, int n) {
    __shared__ float buf[cfg::BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * cfg::BLOCK + tid;
    buf[tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (int s = 1; s < cfg::BLOCK; s *= 2) {
        if (tid % (2 * s) == 0) buf[tid] += buf[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = buf[0];
}

int main() {
    int n = 1 << 20;
    float *x, *out;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&out, (n / cfg::BLOCK) * sizeof(float));
    block_sum<<<n / cfg::BLOCK, cfg::BLOCK>>>(x, out, n);
    cudaDeviceSynchronize();
    return 0;
}
