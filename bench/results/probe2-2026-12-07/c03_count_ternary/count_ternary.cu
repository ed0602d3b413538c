// Count |x| > thr where |x| is spelled as a ternary inside the predicate.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define BLOCK 512

__global__ void count_abs_above(const float* __restrict__ x, int n, float thr, unsigned long long* total) {
    __shared__ unsigned long long sh[BLOCK];
    int tid = threadIdx.x;
    int i = blockIdx.x * BLOCK + tid;
    sh[tid] = (i < n && (x[i] < 0.0f ? -x[i] : x[i]) > thr) ? 1ull : 0ull;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (tid < s) sh[tid] += sh[tid + s];
        __syncthreads();
    }
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
    count_abs_above<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(d, n, 1.0f, dt);
    unsigned long long r = 0;
    cudaMemcpy(&r, dt, sizeof(r), cudaMemcpyDeviceToHost);
    printf("count = %llu\n", r);
    cudaFree(d); cudaFree(dt); free(h);
    return 0;
}
