#include <cuda_runtime.h>
#include <cmath>
#include <vector>

struct Gelu {
    __device__ float operator()(float x) const {
        const float k = 0.7978845608f;
        return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
    }
};

// Four elements per thread through float4; the tail (n % 4) handled by the last thread.
template <typename Op>
__global__ void __launch_bounds__(256) apply_act(const float* __restrict__ x, float* __restrict__ y, int n, Op op) {
    int i4 = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n / 4;
    if (i4 < n4) {
        float4 v = reinterpret_cast<const float4*>(x)[i4];
        v.x = op(v.x); v.y = op(v.y); v.z = op(v.z); v.w = op(v.w);
        reinterpret_cast<float4*>(y)[i4] = v;
    }
    if (i4 == n4) {
        for (int i = n4 * 4; i < n; ++i) y[i] = op(x[i]);
    }
}

int main() {
    const int n = 1 << 24;
    std::vector<float> h(n), out(n);
    for (int i = 0; i < n; ++i) h[i] = (float)((i % 2001) - 1000) * 0.004f;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    int threads = n / 4 + 1;
    apply_act<Gelu><<<(threads + 255) / 256, 256>>>(x, y, n, Gelu{});
    cudaMemcpy(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(x);
    cudaFree(y);
    return 0;
}
