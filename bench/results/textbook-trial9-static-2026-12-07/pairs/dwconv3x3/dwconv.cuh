#pragma once
#include <cuda_runtime.h>

// Depthwise 3x3 convolution, zero padding, one filter per channel:
// out[c][y][x] = sum_{dy,dx} in[c][y+dy-1][x+dx-1] * w[c][dy][dx].
__global__ void dwconv3x3(const float* in, const float* w, float* out, int C, int H, int W) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.z;
    if (x >= W || y >= H) return;
    float acc = 0.f;
#pragma unroll 4
    for (int dy = 0; dy < 3; ++dy) {
        for (int dx = 0; dx < 3; ++dx) {
            int yy = y + dy - 1, xx = x + dx - 1;
            if (yy >= 0 && yy < H && xx >= 0 && xx < W)
                acc += in[((size_t)c * H + yy) * W + xx] * w[c * 9 + dy * 3 + dx];
        }
    }
    out[((size_t)c * H + y) * W + x] = acc;
}
