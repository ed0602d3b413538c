#include <cuda_runtime.h>
#include <cmath>
#include <vector>

#define IDX(r, c) ((r) * ld + (c))

// Gradient magnitude by central differences: g = 0.5 * sqrt((I[r][c+1]-I[r][c-1])^2 + (I[r+1][c]-I[r-1][c])^2)
// on the interior of an H x W image (row pitch ld); the border is left at zero.
__global__ void grad_mag(const float* img, float* g, int H, int W, int ld) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r > 0 && r < H - 1 && c > 0 && c < W - 1) {
        float dx = img[IDX(r, c + 1)] - img[IDX(r, c - 1)];
        float dy = img[IDX(r + 1, c)] - img[IDX(r - 1, c)];
        g[IDX(r, c)] = 0.5f * sqrtf(dx * dx + dy * dy);
    } else {
        return;
    }
}

int main() {
    const int H = 4096, W = 4096, ld = W;
    std::vector<float> h((size_t)H * ld), out((size_t)H * ld, 0.0f);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 7) % 255);
    float *img, *g;
    cudaMalloc(&img, h.size() * sizeof(float));
    cudaMalloc(&g, h.size() * sizeof(float));
    cudaMemcpy(img, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(g, 0, h.size() * sizeof(float));
    dim3 block(32, 8);
    dim3 grid((W + block.x - 1) / block.x, (H + block.y - 1) / block.y);
    grad_mag<<<grid, block>>>(img, g, H, W, ld);
    cudaMemcpy(out.data(), g, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(img);
    cudaFree(g);
    return 0;
}
