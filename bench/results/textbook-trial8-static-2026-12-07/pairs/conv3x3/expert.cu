#include <cuda_runtime.h>
#include <vector>
#define B 16

// 3x3 convolution; the block's (B+2)^2 input tile and the 9 weights are staged in shared memory.
__global__ void conv3x3(const float* img, const float* w, float* out, int W, int H) {
    __shared__ float tile[B + 2][B + 2];
    __shared__ float ws[9];
    int x0 = blockIdx.x * B - 1, y0 = blockIdx.y * B - 1;
    int t = threadIdx.y * B + threadIdx.x;
    if (t < 9) ws[t] = w[t];
    for (int k = t; k < (B + 2) * (B + 2); k += B * B) {
        int ty = k / (B + 2), tx = k % (B + 2);
        int yy = y0 + ty, xx = x0 + tx;
        tile[ty][tx] = (yy >= 0 && yy < H && xx >= 0 && xx < W) ? img[yy * W + xx] : 0.f;
    }
    __syncthreads();
    int x = blockIdx.x * B + threadIdx.x, y = blockIdx.y * B + threadIdx.y;
    if (x >= W || y >= H) {
        return;
    }
    float acc = 0.f;
#pragma unroll
    for (int dy = 0; dy < 3; ++dy)
#pragma unroll
        for (int dx = 0; dx < 3; ++dx) acc += ws[dy * 3 + dx] * tile[threadIdx.y + dy][threadIdx.x + dx];
    out[y * W + x] = acc;
}

int main() {
    const int W = 4096, H = 4096;
    std::vector<float> h((size_t)W * H), hw(9, 1.0f / 9);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)(i % 255);
    float *img, *w, *out;
    cudaMalloc(&img, h.size() * sizeof(float));
    cudaMalloc(&w, 9 * sizeof(float));
    cudaMalloc(&out, h.size() * sizeof(float));
    cudaMemcpy(img, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(w, hw.data(), 9 * sizeof(float), cudaMemcpyHostToDevice);
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    dim3 block(B, B), grid((W + B - 1) / B, (H + B - 1) / B);
    conv3x3<<<grid, block, 0, stream>>>(img, w, out, W, H);
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    cudaFree(img);
    cudaFree(w);
    cudaFree(out);
    return 0;
}
