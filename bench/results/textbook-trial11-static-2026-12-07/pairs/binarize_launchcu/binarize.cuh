#pragma once
#include <cstdint>

// mask[r][c] = 255 where img[r][c] > thr, else 0. H rows, W columns, row-major; threadIdx.x walks the rows.
__global__ void binarize_kernel(const float* img, uint8_t* mask, int H, int W, float thr) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < H && c < W) mask[r * W + c] = img[r * W + c] > thr ? 255 : 0;
}
