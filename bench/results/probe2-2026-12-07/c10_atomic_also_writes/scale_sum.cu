// Scale into y and also add x into one global total: the kernel writes another output.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void scale_and_sum(const float* x, float* y, float a, float* sum, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i];
        atomicAdd(sum, x[i]);
    }
}

int main() {
    const int n = 1 << 20;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 100) * 0.01f;
    float *dx, *dy, *ds;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dy, n * sizeof(float));
    cudaMalloc(&ds, sizeof(float));
    cudaMemcpy(dx, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(ds, 0, sizeof(float));
    scale_and_sum<<<(n + 255) / 256, 256>>>(dx, dy, 2.0f, ds, n);
    float r;
    cudaMemcpy(&r, ds, sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(h, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    printf("sum = %f y[5] = %f\n", r, h[5]);
    cudaFree(dx); cudaFree(dy); cudaFree(ds); free(h);
    return 0;
}
