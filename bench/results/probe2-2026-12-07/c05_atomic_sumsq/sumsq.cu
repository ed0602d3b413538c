// Sum of squares: every thread adds its square into one global total.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void sum_squares(const float* x, float* sum, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(sum, x[i] * x[i]);
    }
}

int main() {
    const int n = 1 << 20;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 10) * 0.1f;
    float *d, *ds;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&ds, sizeof(float));
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(ds, 0, sizeof(float));
    sum_squares<<<(n + 255) / 256, 256>>>(d, ds, n);
    float r = 0.0f;
    cudaMemcpy(&r, ds, sizeof(float), cudaMemcpyDeviceToHost);
    printf("sumsq = %f\n", r);
    cudaFree(d); cudaFree(ds); free(h);
    return 0;
}
