// Uniform atomic total, and thread 0 of every block also writes a per-block flag.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void sum_mark_blocks(const float* x, int n, float* total, int* block_seen) {
    float htam_acc = 0;  // this thread's part of total (one atomicAdd per block at the end)
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) htam_acc += static_cast<float>(x[i]);
    if (threadIdx.x == 0) block_seen[blockIdx.x] = 1;
    {  // one atomicAdd per block: the threads' values combined in the block first
        __shared__ float htam_part[32];  // one value per warp (a block has at most 32 warps)
        const unsigned htam_t = threadIdx.x, htam_nt = blockDim.x;
        const unsigned htam_lane = htam_t % 32u, htam_warp = htam_t / 32u;
        const unsigned htam_left = htam_nt - htam_warp * 32u;
        const unsigned htam_width = htam_left < 32u ? htam_left : 32u;  // this warp's threads (the last may be partial)
        const unsigned htam_mask = htam_width == 32u ? 0xffffffffu : (1u << htam_width) - 1u;
        for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
            const float htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
            if (htam_lane + htam_o < htam_width) htam_acc += htam_y;
        }
        if (htam_lane == 0) htam_part[htam_warp] = htam_acc;
        __syncthreads();
        if (htam_warp == 0) {
            htam_acc = htam_lane < (htam_nt + 31u) / 32u ? htam_part[htam_lane] : 0;
            for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
                const float htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
                if (htam_lane + htam_o < htam_width) htam_acc += htam_y;
            }
            if (htam_lane == 0) atomicAdd(total, htam_acc);
        }
    }
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
