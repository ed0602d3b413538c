// Weighted total whose weight depends on the block index (a per-block weight table).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void weighted_total(const float* x, const float* block_w, int n, float* total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(total, x[i] * block_w[blockIdx.x]);
}

int main() {
    const int n = 1 << 20;
    const int threads = 256, blocks = (n + threads - 1) / threads;
    float* hx = (float*)malloc(n * sizeof(float));
    float* hw = (float*)malloc(blocks * sizeof(float));
    for (int i = 0; i < n; ++i) hx[i] = 1.0f;
    for (int b = 0; b < blocks; ++b) hw[b] = (float)(b % 3);
    float *dx, *dw, *dt;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dw, blocks * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dw, hw, blocks * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    weighted_total<<<blocks, threads>>>(dx, dw, n, dt);
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    printf("total = %f\n", r);
    cudaFree(dx); cudaFree(dw); cudaFree(dt); free(hx); free(hw);
    return 0;
}
