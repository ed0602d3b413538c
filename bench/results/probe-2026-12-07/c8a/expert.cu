#include <cuda_runtime.h>

// numerically stable softplus, float4 where aligned, grid-stride
__global__ void softplus(const float* __restrict__ x, float* __restrict__ y, int n) {
    int stride = blockDim.x * gridDim.x;
    int n4 = n / 4;
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n4; v += stride) {
        float4 a = reinterpret_cast<const float4*>(x)[v];
        float4 b;
        b.x = fmaxf(a.x, 0.f) + log1pf(expf(-fabsf(a.x)));
        b.y = fmaxf(a.y, 0.f) + log1pf(expf(-fabsf(a.y)));
        b.z = fmaxf(a.z, 0.f) + log1pf(expf(-fabsf(a.z)));
        b.w = fmaxf(a.w, 0.f) + log1pf(expf(-fabsf(a.w)));
        reinterpret_cast<float4*>(y)[v] = b;
    }
    for (int i = n4 * 4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = fmaxf(x[i], 0.f) + log1pf(expf(-fabsf(x[i])));
}

int main() {
    const int n = 1 << 20;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    softplus<<<264, 256>>>(x, y, n);
    cudaDeviceSynchronize();
    return 0;
}
