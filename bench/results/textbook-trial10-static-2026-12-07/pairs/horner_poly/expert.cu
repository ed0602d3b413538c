#include <cuda_runtime.h>
#include <cstdint>
#include <vector>

constexpr int DEG = 6;

__device__ __forceinline__ float horner(float x) {
    constexpr float c[DEG + 1] = {1.0f, -0.5f, 0.25f, -0.125f, 0.0625f, -0.03125f, 0.015625f};
    float acc = c[DEG];
    for (int k = DEG - 1; k >= 0; --k) acc = acc * x + c[k];
    return acc;
}

// Grid-stride loop over float4 groups (a fixed grid of a few waves), scalar tail at the end.
__global__ void horner_poly(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t n4 = n / 4;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x4[i];
        y4[i] = make_float4(horner(v.x), horner(v.y), horner(v.z), horner(v.w));
    }
    for (int64_t i = n4 * 4 + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = horner(x[i]);
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
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    horner_poly<<<sms * 8, 256>>>(x, y, n);
    cudaMemcpy(hy.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(x);
    cudaFree(y);
    return 0;
}
