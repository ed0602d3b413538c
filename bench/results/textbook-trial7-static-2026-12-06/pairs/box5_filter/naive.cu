#include <cuda_runtime.h>
#include <cstdio>
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s\n", cudaGetErrorString(e_)); return 1; } } while (0)
#define R 2
#define BX 32
#define BY 8

// 5x5 box filter with clamped borders.
__global__ void box5_filter(const float* __restrict__ src, float* __restrict__ dst, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float acc = 0.0f;
    for (int dy = -R; dy <= R; ++dy) {
        int yy = min(max(y + dy, 0), h - 1);
        for (int dx = -R; dx <= R; ++dx) {
            int xx = min(max(x + dx, 0), w - 1);
            acc += src[yy * w + xx];
        }
    }
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
