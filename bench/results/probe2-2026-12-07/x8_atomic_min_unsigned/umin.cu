// Minimum of unsigned keys with atomicMin on an unsigned total.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void min_key(const unsigned int* keys, int n, unsigned int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicMin(out, keys[i]);
}

int main() {
    const int n = 1 << 20;
    unsigned int* h = (unsigned int*)malloc(n * sizeof(unsigned int));
    for (int i = 0; i < n; ++i) h[i] = 3000000000u + (unsigned)((i * 7919) % 100000);
    unsigned int *d, *dout;
    cudaMalloc(&d, n * sizeof(unsigned int));
    cudaMalloc(&dout, sizeof(unsigned int));
    cudaMemcpy(d, h, n * sizeof(unsigned int), cudaMemcpyHostToDevice);
    unsigned int init = 0xffffffffu;
    cudaMemcpy(dout, &init, sizeof(init), cudaMemcpyHostToDevice);
    min_key<<<(n + 255) / 256, 256>>>(d, n, dout);
    unsigned int r;
    cudaMemcpy(&r, dout, sizeof(r), cudaMemcpyDeviceToHost);
    printf("min = %u\n", r);
    cudaFree(d); cudaFree(dout); free(h);
    return 0;
}
