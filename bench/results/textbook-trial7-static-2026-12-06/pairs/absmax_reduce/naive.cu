#include <cuda_runtime.h>
#include <cstdio>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s\n", cudaGetErrorString(e_)); return 1; } } while (0)
#define THREADS 256

// partial[blockIdx.x] = max |x| over the block's segment (interleaved addressing).
__global__ void absmax_reduce(const float* __restrict__ x, float* __restrict__ partial, int n) {
    __shared__ float s[THREADS];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? fabsf(x[i]) : 0.0f;
    __syncthreads();
    for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
        if (tid % (2 * stride) == 0) s[tid] = fmaxf(s[tid], s[tid + stride]);
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
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
