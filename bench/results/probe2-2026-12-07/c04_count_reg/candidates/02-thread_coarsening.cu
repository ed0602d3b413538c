// Count even values; the 0/1 flag is held in a register before the shared store.
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

__global__ void count_even(const int* data, int n, int* out) {
    extern __shared__ int cache[];
    int lane = threadIdx.x;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int htam_v = 0;
    for (int htam_j = idx; htam_j < n; htam_j += blockDim.x * gridDim.x)
        if ((data[htam_j] & 1) == 0) htam_v += 1;
    cache[lane] = htam_v;
    __syncthreads();
    for (int half = blockDim.x >> 1; half > 32; half >>= 1) {
        if (lane < half) cache[lane] += cache[lane + half];
        __syncthreads();
    }
    if (lane < 32) {  // the last warp finishes in registers: the same pairs, no barriers
        int htam_v = cache[lane] + cache[lane + 32];
        for (int htam_o = 16; htam_o > 0; htam_o >>= 1)
            htam_v += __shfl_down_sync(0xffffffffu, htam_v, htam_o);
        if (lane == 0) cache[0] = htam_v;
    }
    __syncthreads();
    if (lane == 0) atomicAdd(out, cache[0]);
}

int main() {
    const int n = 1 << 20;
    int* h = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h[i] = (i * 7919) % 1000;
    int *d, *dc;
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&dc, sizeof(int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemset(dc, 0, sizeof(int));
    const int threads = 128;
    count_even<<<htam_sm_grid((n + threads - 1) / threads, 4), threads, threads * sizeof(int)>>>(d, n, dc);
    int r = 0;
    cudaMemcpy(&r, dc, sizeof(int), cudaMemcpyDeviceToHost);
    printf("even = %d\n", r);
    cudaFree(d); cudaFree(dc); free(h);
    return 0;
}
