// Each thread walks one row and adds every element of it into one global total.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// htam: cap a 1-D grid at per_sm blocks per SM (grid-stride kernels cover any n with any grid)
static inline unsigned int htam_sm_grid(long long blocks, int per_sm)
{
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    const long long cap = (long long)(sms > 0 ? sms : 1) * per_sm;
    return (unsigned int)(blocks < cap ? blocks : cap);
}

__global__ void rows_total(const float* m, int rows, int cols, float* total) {
    float htam_acc = 0;  // this thread's part of total (one atomicAdd per block at the end)
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += (int)blockDim.x * gridDim.x) {
        for (int c = 0; c < cols; ++c) htam_acc += static_cast<float>(m[r * cols + c]);
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
            if (htam_lane == 0) atomicAdd(total, htam_acc);
        }
    }
}

int main() {
    const int rows = 10000, cols = 64;
    float* h = (float*)malloc(rows * cols * sizeof(float));
    for (int i = 0; i < rows * cols; ++i) h[i] = 0.25f;
    float *dm, *dt;
    cudaMalloc(&dm, rows * cols * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMemcpy(dm, h, rows * cols * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    rows_total<<<htam_sm_grid((rows + 127) / 128, 8), 128>>>(dm, rows, cols, dt);
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    printf("total = %f\n", r);
    cudaFree(dm); cudaFree(dt); free(h);
    return 0;
}
