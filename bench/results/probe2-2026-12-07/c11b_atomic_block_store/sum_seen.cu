// Uniform atomic total, and thread 0 of every block also writes a per-block flag.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void sum_mark_blocks(const float* x, int n, float* total, int* block_seen) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(total, x[i]);
    if (threadIdx.x == 0) block_seen[blockIdx.x] = 1;
}

int main() {
    const int n = 1 << 20;
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = 1.0f;
    float *d, *dt; int* ds;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMalloc(&ds, blocks * sizeof(int));
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    cudaMemset(ds, 0, blocks * sizeof(int));
    sum_mark_blocks<<<blocks, threads>>>(d, n, dt, ds);
    int* hs = (int*)malloc(blocks * sizeof(int));
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(hs, ds, blocks * sizeof(int), cudaMemcpyDeviceToHost);
    int seen = 0;
    for (int b = 0; b < blocks; ++b) seen += hs[b];
    printf("total = %f, blocks seen = %d of %d\n", r, seen, blocks);
    cudaFree(d); cudaFree(dt); cudaFree(ds); free(h); free(hs);
    return 0;
}
