#include <cuda_runtime.h>
#include <vector>

// out[y][x] = sum_{dy,dx in -1..1} w[(dy+1)*3+dx+1] * img[y+dy][x+dx], zero outside the W x H image.
__global__ void conv3x3(const float* img, const float* w, float* out, int W, int H) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H) {
        return;
    }
    float acc = 0.f;
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            int yy = y + dy, xx = x + dx;
            if (yy >= 0 && yy < H && xx >= 0 && xx < W) acc += w[(dy + 1) * 3 + (dx + 1)] * img[yy * W + xx];
        }
    }
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
    dim3 block(16, 16), grid((W + 15) / 16, (H + 15) / 16);
    conv3x3<<<grid, block, 0, stream>>>(img, w, out, W, H);
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    cudaFree(img);
    cudaFree(w);
    cudaFree(out);
    return 0;
}
