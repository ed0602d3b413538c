// Count the nonzero elements: per-block shared-memory tree, one atomicAdd per block.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void count_nonzero(const int* x, int n, unsigned int* total) {
    __shared__ unsigned int s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = (i < n && x[i] != 0) ? 1 : 0;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(total, s[0]);
}

int main() {
    const int n = 1 << 22;
    int* h = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h[i] = (i % 7 == 0) ? 0 : i % 13;
    int* d; unsigned int* dt;
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&dt, sizeof(unsigned int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(unsigned int));
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    count_nonzero<<<blocks, threads>>>(d, n, dt);
    unsigned int r = 0;
    cudaMemcpy(&r, dt, sizeof(unsigned int), cudaMemcpyDeviceToHost);
    printf("nonzero = %u\n", r);
    cudaFree(d); cudaFree(dt); free(h);
    return 0;
}
