// Weighted total whose weight depends on the block index (a per-block weight table).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void weighted_total(const float* __restrict__ x, const float* __restrict__ block_w, int n, float* total) {
    float htam_acc = 0;  // this thread's part of total (one atomicAdd per block at the end)
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) htam_acc += static_cast<float>(x[i] * block_w[blockIdx.x]);
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
    const int threads = 256, blocks = (n + threads - 1) / threads;
    float* hx = (float*)malloc(n * sizeof(float));
    float* hw = (float*)malloc(blocks * sizeof(float));
    for (int i = 0; i < n; ++i) hx[i] = 1.0f;
    for (int b = 0; b < blocks; ++b) hw[b] = (float)(b % 3);
    float *dx, *dw, *dt;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dw, blocks * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dw, hw, blocks * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    weighted_total<<<blocks, threads>>>(dx, dw, n, dt);
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    printf("total = %f\n", r);
    cudaFree(dx); cudaFree(dw); cudaFree(dt); free(hx); free(hw);
    return 0;
}
