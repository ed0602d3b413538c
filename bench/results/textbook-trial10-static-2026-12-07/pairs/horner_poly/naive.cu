#include <cuda_runtime.h>
#include <cstdint>
#include <vector>

constexpr int DEG = 6;

// p(x) = c0 + c1 x + ... + c6 x^6 by Horner's rule; the coefficients are compile-time constants.
__device__ __forceinline__ float horner(float x) {
    constexpr float c[DEG + 1] = {1.0f, -0.5f, 0.25f, -0.125f, 0.0625f, -0.03125f, 0.015625f};
    float acc = c[DEG];
    for (int k = DEG - 1; k >= 0; --k) acc = acc * x + c[k];
    return acc;
}

// y[i] = p(x[i]); one thread per element, int64_t index.
__global__ void horner_poly(const float* x, float* y, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = horner(x[i]);
    } else {
        return;
    }
}

int main() {
    const int64_t n = (int64_t)1 << 25;
    std::vector<float> hx(n), hy(n);
    auto fill = [](std::vector<float>& v) {
        for (size_t i = 0; i < v.size(); ++i) v[i] = (float)((int)(i % 1001) - 500) * 0.002f;
    };
    fill(hx);
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    const int threads = 256;
    const int blocks = (int)((n + threads - 1) / threads);
    horner_poly<<<blocks, threads>>>(x, y, n);
    cudaMemcpy(hy.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(x);
    cudaFree(y);
    return 0;
}
