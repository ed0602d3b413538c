// Dot product into a double total, size_t index and length.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void dot_total(const float* a, const float* b, size_t n, double* out) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, (double)a[i] * b[i]);
}

int main() {
    const size_t n = 3000000;
    float* h = (float*)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; ++i) h[i] = (float)(i % 11) * 0.5f;
    float *da, *db; double* dout;
    cudaMalloc(&da, n * sizeof(float));
    cudaMalloc(&db, n * sizeof(float));
    cudaMalloc(&dout, sizeof(double));
    cudaMemcpy(da, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(db, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dout, 0, sizeof(double));
    dot_total<<<(unsigned)((n + 255) / 256), 256>>>(da, db, n, dout);
    double r;
    cudaMemcpy(&r, dout, sizeof(double), cudaMemcpyDeviceToHost);
    printf("dot = %f\n", r);
    cudaFree(da); cudaFree(db); cudaFree(dout); free(h);
    return 0;
}
