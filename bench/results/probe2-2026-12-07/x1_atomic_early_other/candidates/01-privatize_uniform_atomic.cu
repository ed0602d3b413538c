// Early return, another output, and a uniform atomic total.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void relu_and_count(const float* x, float* y, int n, int* negatives) {
    int htam_acc = 0;  // this thread's part of negatives (one atomicAdd per block at the end)
    [&] {  // the kernel's code: its `return` ends this thread's part, not the thread
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
        if (v < 0.0f) htam_acc += static_cast<int>(1);
    }();
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
            if (htam_lane == 0) atomicAdd(negatives, htam_acc);
        }
    }
}

int main() {
    const int n = 1000001;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)((i % 9) - 4);
    float *dx, *dy; int* dn;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dy, n * sizeof(float));
    cudaMalloc(&dn, sizeof(int));
    cudaMemcpy(dx, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dn, 0, sizeof(int));
    relu_and_count<<<(n + 255) / 256, 256>>>(dx, dy, n, dn);
    int r;
    cudaMemcpy(&r, dn, sizeof(int), cudaMemcpyDeviceToHost);
    printf("negatives = %d\n", r);
    cudaFree(dx); cudaFree(dy); cudaFree(dn); free(h);
    return 0;
}
