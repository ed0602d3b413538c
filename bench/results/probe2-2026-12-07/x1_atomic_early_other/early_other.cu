// Early return, another output, and a uniform atomic total.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void relu_and_count(const float* x, float* y, int n, int* negatives) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    y[i] = v > 0.0f ? v : 0.0f;
    if (v < 0.0f) atomicAdd(negatives, 1);
}

int main() {
    const int n = 1000001;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)((i % 9) - 4);
    float *dx, *dy; int* dn;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dy, n * sizeof(float));
    cudaMalloc(&dn, sizeof(int));
    cudaMemcpy(dx, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dn, 0, sizeof(int));
    relu_and_count<<<(n + 255) / 256, 256>>>(dx, dy, n, dn);
    int r;
    cudaMemcpy(&r, dn, sizeof(int), cudaMemcpyDeviceToHost);
    printf("negatives = %d\n", r);
    cudaFree(dx); cudaFree(dy); cudaFree(dn); free(h);
    return 0;
}
