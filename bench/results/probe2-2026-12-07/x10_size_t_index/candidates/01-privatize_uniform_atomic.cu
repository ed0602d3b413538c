// Dot product into a double total, size_t index and length.
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

__global__ void dot_total(const float* a, const float* b, size_t n, double* out) {
    double htam_acc = 0;  // this thread's part of out (one atomicAdd per block at the end)
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)blockDim.x * gridDim.x) htam_acc += static_cast<double>((double)a[i] * b[i]);
    {  // one atomicAdd per block: the threads' values combined in the block first
        __shared__ double htam_part[32];  // one value per warp (a block has at most 32 warps)
        const unsigned htam_t = threadIdx.x, htam_nt = blockDim.x;
        const unsigned htam_lane = htam_t % 32u, htam_warp = htam_t / 32u;
        const unsigned htam_left = htam_nt - htam_warp * 32u;
        const unsigned htam_width = htam_left < 32u ? htam_left : 32u;  // this warp's threads (the last may be partial)
        const unsigned htam_mask = htam_width == 32u ? 0xffffffffu : (1u << htam_width) - 1u;
        for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
            const double htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
            if (htam_lane + htam_o < htam_width) htam_acc += htam_y;
        }
        if (htam_lane == 0) htam_part[htam_warp] = htam_acc;
        __syncthreads();
        if (htam_warp == 0) {
            htam_acc = htam_lane < (htam_nt + 31u) / 32u ? htam_part[htam_lane] : 0;
            for (unsigned htam_o = 16; htam_o > 0; htam_o >>= 1) {
                const double htam_y = __shfl_down_sync(htam_mask, htam_acc, htam_o);
                if (htam_lane + htam_o < htam_width) htam_acc += htam_y;
            }
            if (htam_lane == 0) atomicAdd(out, htam_acc);
        }
    }
}

int main() {
    const size_t n = 3000000;
    float* h = (float*)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; ++i) h[i] = (float)(i % 11) * 0.5f;
    float *da, *db; double* dout;
    cudaMalloc(&da, n * sizeof(float));
    cudaMalloc(&db, n * sizeof(float));
    cudaMalloc(&dout, sizeof(double));
    cudaMemcpy(da, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dout, 0, sizeof(double));
    dot_total<<<htam_sm_grid((unsigned)((n + 255) / 256), 8), 256>>>(da, db, n, dout);
    double r;
    cudaMemcpy(&r, dout, sizeof(double), cudaMemcpyDeviceToHost);
    printf("dot = %f\n", r);
    cudaFree(da); cudaFree(db); cudaFree(dout); free(h);
    return 0;
}
