// Count matches into a __device__ global counter with atomicAdd(&count, 1u).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__device__ unsigned int count;

__global__ void count_matches(const int* keys, int n, int key) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && keys[i] == key) {
        atomicAdd(&count, 1u);
    }
}

int main() {
    const int n = 1 << 21;
    int* h = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h[i] = (i * 31) % 97;
    int* d;
    cudaMalloc(&d, n * sizeof(int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    unsigned int zero = 0;
    cudaMemcpyToSymbol(count, &zero, sizeof(zero));
    count_matches<<<(n + 127) / 128, 128>>>(d, n, 42);
    unsigned int r = 0;
    cudaMemcpyFromSymbol(&r, count, sizeof(r));
    printf("matches = %u\n", r);
    cudaFree(d); free(h);
    return 0;
}
