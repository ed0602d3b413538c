// Global maximum of ints with atomicMax.
#include <cstdio>
#include <cstdlib>
#include <climits>
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

__global__ void global_max(const int* v, int* result, int n) {
    int htam_acc = (-2147483647 - 1);  // this thread's part of result (one atomicMax per block at the end)
    for (int idx = threadIdx.x + blockIdx.x * blockDim.x; idx < n; idx += (int)blockDim.x * gridDim.x) { const int htam_v = static_cast<int>(v[idx]); if (htam_v > htam_acc) htam_acc = htam_v; }
    {  // one atomicMax per block: the threads' values combined in the block first
        __shared__ int htam_part[32];  // one value per warp (a block has at most 32 warps)
        const unsigned htam_t = threadIdx.x, htam_nt = blockDim.x;
        const unsigned htam_lane = htam_t % 32u, htam_warp = htam_t / 32u;
        const unsigned htam_left = htam_nt - htam_warp * 32u;
        const unsigned htam_width = htam_left < 32u ? htam_left : 32u;  // this warp's threads (the last may be partial)
        const unsigned htam_mask = htam_width == 32u ? 0xffffffffu : (1u << htam_width) - 1u;
        for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
            const int htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
            if (htam_lane + htam_o < htam_width && htam_y > htam_acc) htam_acc = htam_y;
        }
        if (htam_lane == 0) htam_part[htam_warp] = htam_acc;
        __syncthreads();
        if (htam_warp == 0) {
            htam_acc = htam_lane < (htam_nt + 31u) / 32u ? htam_part[htam_lane] : (-2147483647 - 1);
            for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
                const int htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
                if (htam_lane + htam_o < htam_width && htam_y > htam_acc) htam_acc = htam_y;
            }
            if (htam_lane == 0) atomicMax(result, htam_acc);
        }
    }
}

int main() {
    const int n = 1000003;
    int* h = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h[i] = (i * 2654435761u) % 1000000 - 500000;
    int *d, *dr;
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&dr, sizeof(int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    int init = INT_MIN;
    cudaMemcpy(dr, &init, sizeof(int), cudaMemcpyHostToDevice);
    int block = 256;
    int grid = (n + block - 1) / block;
    global_max<<<htam_sm_grid(grid, 8), block>>>(d, dr, n);
    int r;
    cudaMemcpy(&r, dr, sizeof(int), cudaMemcpyDeviceToHost);
    printf("max = %d\n", r);
    cudaFree(d); cudaFree(dr); free(h);
    return 0;
}
