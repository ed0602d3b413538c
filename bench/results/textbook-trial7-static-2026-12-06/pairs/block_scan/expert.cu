#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#define CHECK(call) { cudaError_t err = call; if (err != cudaSuccess) { fprintf(stderr, "%s\n", cudaGetErrorString(err)); exit(1); } }
#define BLOCK 1024

// Inclusive scan of each block's segment: warp-shuffle scans, then a scan of the warp totals.
__global__ void block_scan(const float* in, float* out, int n) {
    __shared__ float warp_tot[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float v = (i < n) ? in[i] : 0.0f;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        float t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += t;
    }
    if (lane == 31) warp_tot[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = (lane < (blockDim.x >> 5)) ? warp_tot[lane] : 0.0f;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            float t = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) w += t;
        }
        warp_tot[lane] = w;
    }
    __syncthreads();
    if (warp > 0) v += warp_tot[warp - 1];
    if (i < n) out[i] = v;
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
