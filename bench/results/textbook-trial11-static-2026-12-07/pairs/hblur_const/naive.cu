#include <cstdio>
#include <vector>

#define RADIUS 4

__constant__ float c_taps[2 * RADIUS + 1];

// Horizontal 9-tap Gaussian blur of a W x H image, edges clamped; the taps live in constant memory.
__global__ void hblur(const float* src, float* dst, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) return;
    float acc = 0.f;
    for (int k = -RADIUS; k <= RADIUS; ++k) {
        int xx = min(max(x + k, 0), W - 1);
        acc += c_taps[k + RADIUS] * src[y * W + xx];
    }
    dst[y * W + x] = acc;
}

int main() {
    const int W = 4096, H = 2048;
    std::vector<float> h((size_t)W * H), o((size_t)W * H);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 131) % 256) / 255.f;
    float taps[2 * RADIUS + 1] = {0.0162f, 0.0540f, 0.1216f, 0.1945f, 0.2274f, 0.1945f, 0.1216f, 0.0540f, 0.0162f};
    cudaMemcpyToSymbol(c_taps, taps, sizeof(taps));
    float *src, *dst;
    cudaMalloc(&src, h.size() * sizeof(float));
    cudaMalloc(&dst, o.size() * sizeof(float));
    cudaMemcpy(src, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
    dim3 block(32, 8);
    dim3 grid((W + block.x - 1) / block.x, (H + block.y - 1) / block.y);
    hblur<<<grid, block>>>(src, dst, W, H);
    cudaMemcpy(o.data(), dst, o.size() * sizeof(float), cudaMemcpyDeviceToHost);
    double sum = 0;
    for (size_t i = 0; i < o.size(); ++i) sum += o[i];
    printf("checksum = %.6f\n", sum);
    cudaFree(src);
    cudaFree(dst);
    return 0;
}
