#pragma once
#include <cstdint>

// Same result: threadIdx.x walks the columns, so a warp reads 32 consecutive floats and writes 32 consecutive bytes.
__global__ void binarize_kernel(const float* __restrict__ img, uint8_t* __restrict__ mask, int H, int W, float thr) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < H && c < W) mask[r * W + c] = img[r * W + c] > thr ? 255 : 0;
}
