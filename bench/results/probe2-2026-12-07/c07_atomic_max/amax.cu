// Global maximum of ints with atomicMax.
#include <cstdio>
#include <cstdlib>
#include <climits>
#include <cuda_runtime.h>

__global__ void global_max(const int* v, int* result, int n) {
    int idx = threadIdx.x + blockIdx.x * blockDim.x;
    if (idx < n) atomicMax(result, v[idx]);
}

int main() {
    const int n = 1000003;
    int* h = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h[i] = (i * 2654435761u) % 1000000 - 500000;
    int *d, *dr;
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&dr, sizeof(int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    int init = INT_MIN;
    cudaMemcpy(dr, &init, sizeof(int), cudaMemcpyHostToDevice);
    int block = 256;
    int grid = (n + block - 1) / block;
    global_max<<<grid, block>>>(d, dr, n);
    int r;
    cudaMemcpy(&r, dr, sizeof(int), cudaMemcpyDeviceToHost);
    printf("max = %d\n", r);
    cudaFree(d); cudaFree(dr); free(h);
    return 0;
}
