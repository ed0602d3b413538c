#include <cuda_runtime.h>
#include <cmath>
#include <vector>

#define IDX(r, c) ((r) * ld + (c))

constexpr int BX = 32, BY = 8;

// The block's (BY+2) x (BX+2) window, halo included, is loaded once into shared memory; each pixel's four
// neighbours then come from the tile instead of four global loads.
__global__ void grad_mag(const float* __restrict__ img, float* __restrict__ g, int H, int W, int ld) {
    __shared__ float s[BY + 2][BX + 2];
    int c0 = blockIdx.x * BX - 1, r0 = blockIdx.y * BY - 1;
    for (int y = threadIdx.y; y < BY + 2; y += BY) {
        for (int x = threadIdx.x; x < BX + 2; x += BX) {
            int rr = r0 + y, cc = c0 + x;
            s[y][x] = (rr >= 0 && rr < H && cc >= 0 && cc < W) ? img[IDX(rr, cc)] : 0.0f;
        }
    }
    __syncthreads();
    int c = blockIdx.x * BX + threadIdx.x;
    int r = blockIdx.y * BY + threadIdx.y;
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    if (r > 0 && r < H - 1 && c > 0 && c < W - 1) {
        float dx = s[ty][tx + 1] - s[ty][tx - 1];
        float dy = s[ty + 1][tx] - s[ty - 1][tx];
        g[IDX(r, c)] = 0.5f * sqrtf(dx * dx + dy * dy);
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
    dim3 block(BX, BY);
    dim3 grid((W + BX - 1) / BX, (H + BY - 1) / BY);
    grad_mag<<<grid, block>>>(img, g, H, W, ld);
    cudaMemcpy(out.data(), g, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(img);
    cudaFree(g);
    return 0;
}
