// Count the nonzero elements: per-block shared-memory tree, one atomicAdd per block.
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

__global__ void count_nonzero(const int* x, int n, unsigned int* total) {
    __shared__ unsigned int s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int htam_v = 0;
    for (int htam_j = i; htam_j < n; htam_j += blockDim.x * gridDim.x)
        if (x[htam_j] != 0) htam_v += 1;
    s[tid] = htam_v;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 32; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid < 32) {  // the last warp finishes in registers: the same pairs, no barriers
        unsigned int htam_v = s[tid] + s[tid + 32];
        for (int htam_o = 16; htam_o > 0; htam_o >>= 1)
            htam_v += __shfl_down_sync(0xffffffffu, htam_v, htam_o);
        if (tid == 0) s[0] = htam_v;
    }
    __syncthreads();
    if (tid == 0) atomicAdd(total, s[0]);
}

int main() {
    const int n = 1 << 22;
    int* h = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h[i] = (i % 7 == 0) ? 0 : i % 13;
    int* d; unsigned int* dt;
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&dt, sizeof(unsigned int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(unsigned int));
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    count_nonzero<<<htam_sm_grid(blocks, 4), threads>>>(d, n, dt);
    unsigned int r = 0;
    cudaMemcpy(&r, dt, sizeof(unsigned int), cudaMemcpyDeviceToHost);
    printf("nonzero = %u\n", r);
    cudaFree(d); cudaFree(dt); free(h);
    return 0;
}
