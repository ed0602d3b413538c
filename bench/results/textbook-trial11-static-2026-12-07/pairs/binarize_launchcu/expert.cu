#include <cstdio>
#include <vector>
#include "launch_expert.cu"

int main() {
    const int H = 3072, W = 4096;
    std::vector<float> h((size_t)H * W);
    std::vector<uint8_t> m((size_t)H * W);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 2971) % 1000) / 1000.f;
    float* img;
    uint8_t* mask;
    cudaMalloc(&img, h.size() * sizeof(float));
    cudaMalloc(&mask, m.size());
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaMemcpyAsync(img, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice, s);
    binarize(img, mask, H, W, 0.4f, s);
    cudaMemcpyAsync(m.data(), mask, m.size(), cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    unsigned long long sum = 0;
    for (size_t i = 0; i < m.size(); ++i) sum += m[i] ? (i % 13) : 0;
    printf("checksum = %llu\n", sum);
    cudaStreamDestroy(s);
    cudaFree(img);
    cudaFree(mask);
    return 0;
}
