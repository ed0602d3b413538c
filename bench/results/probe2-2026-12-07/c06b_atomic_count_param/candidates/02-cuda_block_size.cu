// Count matches into a pointer parameter: atomicAdd(count, 1u) under a data-dependent equality guard.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void count_matches(const int* __restrict__ keys, int n, int key, unsigned int* count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && keys[i] == key) {
        atomicAdd(count, 1u);
    }
}

int main() {
    const int n = 1 << 21;
    int* h = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h[i] = (i * 31) % 97;
    int* d; unsigned int* dc;
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&dc, sizeof(unsigned int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemset(dc, 0, sizeof(unsigned int));
    count_matches<<<(n + 255) / 256, 256>>>(d, n, 42, dc);
    unsigned int r = 0;
    cudaMemcpy(&r, dc, sizeof(r), cudaMemcpyDeviceToHost);
    printf("matches = %u\n", r);
    cudaFree(d); cudaFree(dc); free(h);
    return 0;
}
