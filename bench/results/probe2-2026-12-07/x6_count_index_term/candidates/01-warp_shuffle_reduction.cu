// Count positives at even positions: one guard term reads the index itself.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void count_even_positions(const float* x, int n, int* total) {
    __shared__ int s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = (i < n && i % 2 == 0 && x[i] > 0.0f) ? 1 : 0;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 32; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t < 32) {  // the last warp finishes in registers: the same pairs, no barriers
        int htam_v = s[t] + s[t + 32];
        for (int htam_o = 16; htam_o > 0; htam_o >>= 1)
            htam_v += __shfl_down_sync(0xffffffffu, htam_v, htam_o);
        if (t == 0) s[0] = htam_v;
    }
    __syncthreads();
    if (t == 0) atomicAdd(total, s[0]);
}

int main() {
    const int n = 1 << 20;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)((i % 7) - 3);
    float* d; int* dr;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&dr, sizeof(int));
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dr, 0, sizeof(int));
    count_even_positions<<<(n + 255) / 256, 256>>>(d, n, dr);
    int r;
    cudaMemcpy(&r, dr, sizeof(int), cudaMemcpyDeviceToHost);
    printf("count = %d\n", r);
    cudaFree(d); cudaFree(dr); free(h);
    return 0;
}
