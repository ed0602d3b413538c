#include <cuda_runtime.h>
#include <cuda_fp16.h>

__global__ void box3x3(const float* __restrict__ src, float* __restrict__ dst, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= 1 && x < w - 1 && y >= 1 && y < h - 1) {
        float acc = 0.f;
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx)
                acc += src[(y + dy) * w + (x + dx)];
        dst[y * w + x] = acc * (1.0f / 9.0f);
    }
}

namespace img {
template <int BX, int BY>
void launch(const float* src, float* dst, int w, int h) {
    dim3 threads(BX, BY);
    dim3 blocks((w + BX - 1) / BX, (h + BY - 1) / BY);
    box3x3<<<blocks, threads>>>(src, dst, w, h);
}
}

int main() {
    int w = 1920, h = 1080;
    float *a, *b;
    cudaMalloc(&a, w * h * sizeof(float));
    cudaMalloc(&b, w * h * sizeof(float));
    img::launch<16, 16>(a, b, w, h);
    cudaDeviceSynchronize();
    return 0;
}
