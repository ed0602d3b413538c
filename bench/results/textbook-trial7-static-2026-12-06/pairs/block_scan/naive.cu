#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#define CHECK(call) { cudaError_t err = call; if (err != cudaSuccess) { fprintf(stderr, "%s\n", cudaGetErrorString(err)); exit(1); } }
#define BLOCK 1024

// Inclusive scan of each block's segment: every thread sums its prefix from global memory.
__global__ void block_scan(const float* in, float* out, int n) {
    int seg = blockIdx.x * blockDim.x;
    int i = seg + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int j = seg; j <= i; ++j) s += in[j];
    out[i] = s;
}

void launch_scan(const float* in, float* out, int n) {
    block_scan<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(in, out, n);
}

int main() {
    int n = 1 << 22;
    float *d_in, *d_out;
    CHECK(cudaMalloc((void**)&d_in, n * sizeof(float)));
    CHECK(cudaMalloc((void**)&d_out, n * sizeof(float)));
    float* h = (float*)malloc(n * sizeof(float));
    for (int i = 0; i < n; ++i) h[i] = (float)(i % 7) * 0.25f;
    CHECK(cudaMemcpy(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice));
    launch_scan(d_in, d_out, n);
    CHECK(cudaDeviceSynchronize());
    free(h);
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    return 0;
}
