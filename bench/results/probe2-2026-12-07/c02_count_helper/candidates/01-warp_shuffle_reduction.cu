// Count the elements above a threshold through a __device__ helper predicate.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__device__ __forceinline__ bool above(float v, float thr) { return v > thr; }

__global__ void count_above(const float* x, int n, float thr, int* total) {
    __shared__ int partial[256];
    unsigned int t = threadIdx.x;
    unsigned int gid = blockIdx.x * blockDim.x + t;
    partial[t] = (gid < n && above(x[gid], thr)) ? 1 : 0;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (t < s) {
            partial[t] += partial[t + s];
        }
        __syncthreads();
    }
    if (t < 32) {  // the last warp finishes in registers: the same pairs, no barriers
        int htam_v = partial[t] + partial[t + 32];
        for (int htam_o = 16; htam_o > 0; htam_o >>= 1)
            htam_v += __shfl_down_sync(0xffffffffu, htam_v, htam_o);
        if (t == 0) partial[0] = htam_v;
    }
    __syncthreads();
    if (t == 0) atomicAdd(total, partial[0]);
}

int main() {
    const int n = 3000017;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)((i * 37) % 101) / 100.0f;
    float* d; int* dt;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&dt, sizeof(int));
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(int));
    count_above<<<(n + 255) / 256, 256>>>(d, n, 0.5f, dt);
    int r = 0;
    cudaMemcpy(&r, dt, sizeof(int), cudaMemcpyDeviceToHost);
    printf("above = %d\n", r);
    cudaFree(d); cudaFree(dt); free(h);
    return 0;
}
