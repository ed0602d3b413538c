// Sum of absolute values with a guarded early return before the atomic.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void abs_sum(const float* in, float* total, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = fabsf(in[i]);
    atomicAdd(total, v);
}

int main() {
    const int n = 777777;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)((i % 21) - 10) * 0.25f;
    float *d, *dt;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    dim3 block(256);
    dim3 grid((n + block.x - 1) / block.x);
    abs_sum<<<grid, block>>>(d, dt, n);
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    printf("abs sum = %f\n", r);
    cudaFree(d); cudaFree(dt); free(h);
    return 0;
}
