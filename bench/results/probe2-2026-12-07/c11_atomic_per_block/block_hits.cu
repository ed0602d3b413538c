// Count hits per block (one counter per block) with per-thread atomics: per-block totals.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void block_hits(const float* x, int n, float thr, int* per_block) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > thr) {
        atomicAdd(&per_block[blockIdx.x], 1);
    }
}

int main() {
    const int n = 1 << 20;
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)((i * 13) % 100) / 100.0f;
    float* d; int* dp;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&dp, blocks * sizeof(int));
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dp, 0, blocks * sizeof(int));
    block_hits<<<blocks, threads>>>(d, n, 0.9f, dp);
    int* hp = (int*)malloc(blocks * sizeof(int));
    cudaMemcpy(hp, dp, blocks * sizeof(int), cudaMemcpyDeviceToHost);
    printf("block 0 = %d, block 7 = %d\n", hp[0], hp[7]);
    cudaFree(d); cudaFree(dp); free(h); free(hp);
    return 0;
}
