#include <cuda_runtime.h>
#include <cstdio>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s\n", cudaGetErrorString(e_)); return 1; } } while (0)
#define R 2
#define BX 32
#define BY 8

// 5x5 box filter with clamped borders; the block's tile plus halo is staged in shared memory.
__global__ void box5_filter(const float* __restrict__ src, float* __restrict__ dst, int w, int h) {
    __shared__ float tile[BY + 2 * R][BX + 2 * R];
    int x0 = blockIdx.x * BX - R, y0 = blockIdx.y * BY - R;
    for (int ty = threadIdx.y; ty < BY + 2 * R; ty += BY)
        for (int tx = threadIdx.x; tx < BX + 2 * R; tx += BX) {
            int xx = min(max(x0 + tx, 0), w - 1);
            int yy = min(max(y0 + ty, 0), h - 1);
            tile[ty][tx] = src[yy * w + xx];
        }
    __syncthreads();
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    if (x >= w || y >= h) return;
    float acc = 0.0f;
#pragma unroll
    for (int dy = 0; dy <= 2 * R; ++dy)
#pragma unroll
        for (int dx = 0; dx <= 2 * R; ++dx) acc += tile[threadIdx.y + dy][threadIdx.x + dx];
    dst[y * w + x] = acc * (1.0f / ((2 * R + 1) * (2 * R + 1)));
}

int main() {
    int w = 4096, h = 4096;
    float *src, *dst;
    CHECK(cudaMalloc(&src, (size_t)w * h * sizeof(float)));
    CHECK(cudaMalloc(&dst, (size_t)w * h * sizeof(float)));
    CHECK(cudaMemset(src, 0, (size_t)w * h * sizeof(float)));
    dim3 block(BX, BY);
    dim3 grid((w + BX - 1) / BX, (h + BY - 1) / BY);
    box5_filter<<<grid, block>>>(src, dst, w, h);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(src)); CHECK(cudaFree(dst));
    return 0;
}
