// 1-D data over a 2-D grid of blocks (large n), flattened block index, one atomicAdd per element.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void flat_total(const float* x, int n, float* total) {
    float htam_acc = 0;  // this thread's part of total (one atomicAdd per block at the end)
    int block = blockIdx.y * gridDim.x + blockIdx.x;
    int i = block * blockDim.x + threadIdx.x;
    if (i < n) htam_acc += static_cast<float>(x[i]);
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
    const int n = 5000000;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = 0.5f;
    float *d, *dt;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    dim3 grid(1024, (blocks + 1023) / 1024);
    flat_total<<<grid, threads>>>(d, n, dt);
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    printf("total = %f\n", r);
    cudaFree(d); cudaFree(dt); free(h);
    return 0;
}
