#include <cuda_runtime.h>
#include <cstdio>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s\n", cudaGetErrorString(e_)); return 1; } } while (0)
#define THREADS 256

// partial[blockIdx.x] = max |x| over the block's segment (sequential addressing, warp-shuffle finish).
__global__ void absmax_reduce(const float* __restrict__ x, float* __restrict__ partial, int n) {
    __shared__ float s[THREADS];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? fabsf(x[i]) : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 32; stride >>= 1) {
        if (tid < stride) s[tid] = fmaxf(s[tid], s[tid + stride]);
        __syncthreads();
    }
    if (tid < 32) {
        float v = fmaxf(s[tid], s[tid + 32]);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
        if (tid == 0) partial[blockIdx.x] = v;
    }
}

int main() {
    int n = 1 << 24;
    int blocks = (n + THREADS - 1) / THREADS;
    float *x, *partial;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&partial, blocks * sizeof(float)));
    CHECK(cudaMemset(x, 0, n * sizeof(float)));
    absmax_reduce<<<blocks, THREADS>>>(x, partial, n);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(x)); CHECK(cudaFree(partial));
    return 0;
}
