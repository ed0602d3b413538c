#include <cuda_runtime.h>
#include <vector>
#include "dwconv.cuh"

int main() {
    const int C = 32, H = 512, W = 512;
    std::vector<float> h((size_t)C * H * W), hw(C * 9), o(h.size());
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 17) % 255) / 255.f;
    for (int i = 0; i < C * 9; ++i) hw[i] = (float)((i % 9) - 4) * 0.125f;
    float *in, *w, *out;
    cudaMalloc(&in, h.size() * sizeof(float));
    cudaMalloc(&w, hw.size() * sizeof(float));
    cudaMalloc(&out, o.size() * sizeof(float));
    cudaMemcpy(in, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(w, hw.data(), hw.size() * sizeof(float), cudaMemcpyHostToDevice);
    dim3 block(16, 16);
    dim3 grid((W + 15) / 16, (H + 15) / 16, C);
    dwconv3x3<<<grid, block>>>(in, w, out, C, H, W);
    cudaMemcpy(o.data(), out, o.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(in);
    cudaFree(w);
    cudaFree(out);
    return 0;
}
