#include <cuda_runtime.h>
#include <cmath>
#include <vector>

// tanh approximation of GELU, used as a device functor.
struct Gelu {
    __device__ float operator()(float x) const {
        const float k = 0.7978845608f;  // sqrt(2/pi)
        return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
    }
};

// y[i] = Op(x[i]); one element per thread.
template <typename Op>
__global__ void __launch_bounds__(256) apply_act(const float* x, float* y, int n, Op op) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = op(x[i]);
}

int main() {
    const int n = 1 << 24;
    std::vector<float> h(n), out(n);
    for (int i = 0; i < n; ++i) h[i] = (float)((i % 2001) - 1000) * 0.004f;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    apply_act<Gelu><<<(n + 255) / 256, 256>>>(x, y, n, Gelu{});
    cudaMemcpy(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(x);
    cudaFree(y);
    return 0;
}
