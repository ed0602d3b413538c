// Two uniform totals in one kernel: a sum and a maximum.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void sum_and_max(const int* __restrict__ x, int n, int* sum, int* mx) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(sum, x[i]);
        atomicMax(mx, x[i]);
    }
}

int main() {
    const int n = 1 << 20;
    int* h = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h[i] = (i * 37) % 1000 - 500;
    int *d, *ds, *dm;
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&ds, sizeof(int));
    cudaMalloc(&dm, sizeof(int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    int zero = 0, lowest = -2147483647 - 1;
    cudaMemcpy(ds, &zero, sizeof(int), cudaMemcpyHostToDevice);
    cudaMemcpy(dm, &lowest, sizeof(int), cudaMemcpyHostToDevice);
    sum_and_max<<<(n + 127) / 128, 128>>>(d, n, ds, dm);
    int s, m;
    cudaMemcpy(&s, ds, sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(&m, dm, sizeof(int), cudaMemcpyDeviceToHost);
    printf("sum = %d max = %d\n", s, m);
    cudaFree(d); cudaFree(ds); cudaFree(dm); free(h);
    return 0;
}
