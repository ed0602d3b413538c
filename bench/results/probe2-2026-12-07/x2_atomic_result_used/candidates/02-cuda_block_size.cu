// Stream compaction: the atomic's old value is used as the output slot.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void compact_positive(const float* __restrict__ x, int n, float* out, int* count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] > 0.0f) {
        int slot = atomicAdd(count, 1);
        out[slot] = x[i];
    }
}

int main() {
    const int n = 1 << 20;
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)((i % 5) - 2);
    float *dx, *dout; int* dc;
    cudaMalloc(&dx, n * sizeof(float));
    cudaMalloc(&dout, n * sizeof(float));
    cudaMalloc(&dc, sizeof(int));
    cudaMemcpy(dx, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dc, 0, sizeof(int));
    compact_positive<<<(n + 127) / 128, 128>>>(dx, n, dout, dc);
    int r;
    cudaMemcpy(&r, dc, sizeof(int), cudaMemcpyDeviceToHost);
    printf("kept = %d\n", r);
    cudaFree(dx); cudaFree(dout); cudaFree(dc); free(h);
    return 0;
}
