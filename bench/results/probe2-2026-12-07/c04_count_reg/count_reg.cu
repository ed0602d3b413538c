// Count even values; the 0/1 flag is held in a register before the shared store.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void count_even(const int* data, int n, int* out) {
    extern __shared__ int cache[];
    int lane = threadIdx.x;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int flag = (idx < n && (data[idx] & 1) == 0) ? 1 : 0;
    cache[lane] = flag;
    __syncthreads();
    for (int half = blockDim.x >> 1; half > 0; half >>= 1) {
        if (lane < half) cache[lane] += cache[lane + half];
        __syncthreads();
    }
    if (lane == 0) atomicAdd(out, cache[0]);
}

int main() {
    const int n = 1 << 20;
    int* h = (int*)malloc(n * sizeof(int));
    for (int i = 0; i < n; ++i) h[i] = (i * 7919) % 1000;
    int *d, *dc;
    cudaMalloc(&d, n * sizeof(int));
    cudaMalloc(&dc, sizeof(int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemset(dc, 0, sizeof(int));
    const int threads = 128;
    count_even<<<(n + threads - 1) / threads, threads, threads * sizeof(int)>>>(d, n, dc);
    int r = 0;
    cudaMemcpy(&r, dc, sizeof(int), cudaMemcpyDeviceToHost);
    printf("even = %d\n", r);
    cudaFree(d); cudaFree(dc); free(h);
    return 0;
}
