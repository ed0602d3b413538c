// Scale into y and also add x into one global total: the kernel writes another output.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void scale_and_sum(const float* x, float* y, float a, float* sum, int n) {
    float htam_acc = 0;  // this thread's part of sum (one atomicAdd per block at the end)
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i];
        htam_acc += static_cast<float>(x[i]);
    }
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
            if (htam_lane == 0) atomicAdd(sum, htam_acc);
        }
    }
}

int main() {
    const int n = 1 << 20;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 100) * 0.01f;
    float *dx, *dy, *ds;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dy, n * sizeof(float));
    cudaMalloc(&ds, sizeof(float));
    cudaMemcpy(dx, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(ds, 0, sizeof(float));
    scale_and_sum<<<(n + 255) / 256, 256>>>(dx, dy, 2.0f, ds, n);
    float r;
    cudaMemcpy(&r, ds, sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(h, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    printf("sum = %f y[5] = %f\n", r, h[5]);
    cudaFree(dx); cudaFree(dy); cudaFree(ds); free(h);
    return 0;
}
