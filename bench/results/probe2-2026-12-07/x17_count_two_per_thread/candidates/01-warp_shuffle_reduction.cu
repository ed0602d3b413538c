// Count positives, two elements per thread at load time (first add during load), tree, one atomic per block.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void count_pos2(const float* x, int n, int* total) {
    __shared__ int s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    int a = (i < n && x[i] > 0.0f) ? 1 : 0;
    int b = (i + blockDim.x < n && x[i + blockDim.x] > 0.0f) ? 1 : 0;
    s[tid] = a + b;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 32; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid < 32) {  // the last warp finishes in registers: the same pairs, no barriers
        int htam_v = s[tid] + s[tid + 32];
        for (int htam_o = 16; htam_o > 0; htam_o >>= 1)
            htam_v += __shfl_down_sync(0xffffffffu, htam_v, htam_o);
        if (tid == 0) s[0] = htam_v;
    }
    __syncthreads();
    if (tid == 0) atomicAdd(total, s[0]);
}

int main() {
    const int n = 1000001;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)((i % 5) - 2);
    float* d; int* dt;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&dt, sizeof(int));
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(int));
    count_pos2<<<(n + 511) / 512, 256>>>(d, n, dt);
    int r;
    cudaMemcpy(&r, dt, sizeof(int), cudaMemcpyDeviceToHost);
    printf("positives = %d\n", r);
    cudaFree(d); cudaFree(dt); free(h);
    return 0;
}
