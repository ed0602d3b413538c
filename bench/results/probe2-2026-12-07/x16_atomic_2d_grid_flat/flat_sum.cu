// 1-D data over a 2-D grid of blocks (large n), flattened block index, one atomicAdd per element.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void flat_total(const float* x, int n, float* total) {
    int block = blockIdx.y * gridDim.x + blockIdx.x;
    int i = block * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(total, x[i]);
}

int main() {
    const int n = 5000000;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = 0.5f;
    float *d, *dt;
    cudaMalloc(&d, n * sizeof(float));
    cudaMalloc(&dt, sizeof(float));
    cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dt, 0, sizeof(float));
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    dim3 grid(1024, (blocks + 1023) / 1024);
    flat_total<<<grid, threads>>>(d, n, dt);
    float r;
    cudaMemcpy(&r, dt, sizeof(float), cudaMemcpyDeviceToHost);
    printf("total = %f\n", r);
    cudaFree(d); cudaFree(dt); free(h);
    return 0;
}
