// Count nonzeros per block: the tree's result is written to counts[blockIdx.x] (per-block totals, no atomic).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void count_per_block(const int* x, int n, int* counts) {
    __shared__ int s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n && x[i] != 0) ? 1 : 0;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 32; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid < 32) {  // the last warp finishes in registers: the same pairs, no barriers
        int htam_v = s[tid] + s[tid + 32];
        for (int htam_o = 16; htam_o > 0; htam_o >>= 1)
            htam_v += __shfl_down_sync(0xffffffffu, htam_v, htam_o);
        if (tid == 0) s[0] = htam_v;
    }
    __syncthreads();
    if (tid == 0) counts[blockIdx.x] = s[0];
}

int main() {
    const int n = 1 << 20;
    const int threads = 256, blocks = (n + threads - 1) / threads;
    int* h = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h[i] = i % 3;
    int *d, *dc;
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&dc, blocks * sizeof(int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    count_per_block<<<blocks, threads>>>(d, n, dc);
    int* hc = (int*)malloc(blocks * sizeof(int));
    cudaMemcpy(hc, dc, blocks * sizeof(int), cudaMemcpyDeviceToHost);
    long long total = 0;
    for (int b = 0; b < blocks; ++b) total += hc[b];
    printf("nonzero = %lld\n", total);
    cudaFree(d); cudaFree(dc); free(h); free(hc);
    return 0;
}
