// Count hits per block (one counter per block) with per-thread atomics: per-block totals.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void block_hits(const float* __restrict__ x, int n, float thr, int* per_block) {
    int htam_acc = 0;  // this thread's part of &per_block[blockIdx.x] (one atomicAdd per block at the end)
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > thr) {
        htam_acc += static_cast<int>(1);
    }
    {  // one atomicAdd per block: the threads' values combined in the block first
        __shared__ int htam_part[32];  // one value per warp (a block has at most 32 warps)
        const unsigned htam_t = threadIdx.x, htam_nt = blockDim.x;
        const unsigned htam_lane = htam_t % 32u, htam_warp = htam_t / 32u;
        const unsigned htam_left = htam_nt - htam_warp * 32u;
        const unsigned htam_width = htam_left < 32u ? htam_left : 32u;  // this warp's threads (the last may be partial)
        const unsigned htam_mask = htam_width == 32u ? 0xffffffffu : (1u << htam_width) - 1u;
        for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
            const int htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
            if (htam_lane + htam_o < htam_width) htam_acc += htam_y;
        }
        if (htam_lane == 0) htam_part[htam_warp] = htam_acc;
        __syncthreads();
        if (htam_warp == 0) {
            htam_acc = htam_lane < (htam_nt + 31u) / 32u ? htam_part[htam_lane] : 0;
            for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
                const int htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
                if (htam_lane + htam_o < htam_width) htam_acc += htam_y;
            }
            if (htam_lane == 0) atomicAdd(&per_block[blockIdx.x], htam_acc);
        }
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
