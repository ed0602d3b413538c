// Count |x| > thr where |x| is spelled as a ternary inside the predicate.
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

#define BLOCK 512

__global__ void count_abs_above(const float* __restrict__ x, int n, float thr, unsigned long long* total) {
    __shared__ unsigned long long sh[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    unsigned long long htam_v = 0ull;
    for (int htam_j = i; htam_j < n; htam_j += blockDim.x * gridDim.x)
        if ((x[htam_j] < 0.0f ? -x[htam_j] : x[htam_j]) > thr) htam_v += 1ull;
    sh[tid] = htam_v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 32; s /= 2) {
        if (tid < s) sh[tid] += sh[tid + s];
        __syncthreads();
    }
    if (tid < 32) {  // the last warp finishes in registers: the same pairs, no barriers
        unsigned long long htam_v = sh[tid] + sh[tid + 32];
        for (int htam_o = 16; htam_o > 0; htam_o >>= 1)
            htam_v += __shfl_down_sync(0xffffffffu, htam_v, htam_o);
        if (tid == 0) sh[0] = htam_v;
    }
    __syncthreads();
    if (tid == 0) atomicAdd(total, sh[0]);
}

int main() {
    const int n = 5000000;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)((i * 17) % 201 - 100) / 50.0f;
    float* d; unsigned long long* dt;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&dt, sizeof(unsigned long long));
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(unsigned long long));
    count_abs_above<<<htam_sm_grid((n + BLOCK - 1) / BLOCK, 4), BLOCK>>>(d, n, 1.0f, dt);
    unsigned long long r = 0;
    cudaMemcpy(&r, dt, sizeof(r), cudaMemcpyDeviceToHost);
    printf("count = %llu\n", r);
    cudaFree(d); cudaFree(dt); free(h);
    return 0;
}
