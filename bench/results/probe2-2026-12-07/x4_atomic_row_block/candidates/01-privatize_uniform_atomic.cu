// One block per row, threads over columns, every element added into one global total.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void matrix_total(const float* m, int ncols, float* total) {
    float htam_acc = 0;  // this thread's part of total (one atomicAdd per block at the end)
    int row = blockIdx.x;
    int col = threadIdx.x;
    if (col < ncols) htam_acc += static_cast<float>(m[row * ncols + col]);
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
    const int rows = 4096, cols = 200;
    float* h = (float*)malloc(rows * cols * sizeof(float));
    for (int i = 0; i < rows * cols; ++i) h[i] = 0.5f;
    float *dm, *dt;
    cudaMalloc(&dm, rows * cols * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMemcpy(dm, h, rows * cols * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    matrix_total<<<rows, 256>>>(dm, cols, dt);
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    printf("total = %f\n", r);
    cudaFree(dm); cudaFree(dt); free(h);
    return 0;
}
