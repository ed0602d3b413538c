#include <cuda_runtime.h>
#include <cassert>
#include <vector>

struct NormParams {
    const float* x;
    float* out;
    long long n;
};

// *out += sum x[i]^2: grid-stride accumulation in a register, warp shuffle, one atomic per warp.
__global__ void vec_norm2(NormParams p) {
    float acc = 0.f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.n;
         i += (long long)blockDim.x * gridDim.x) {
        float v = p.x[i];
        acc += v * v;
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(p.out, acc);
}

int main() {
    const long long n = 1LL << 24;
    std::vector<float> h(n);
    for (long long i = 0; i < n; ++i) h[i] = (float)((i % 5) - 2) * 0.1f;
    NormParams p;
    float* x;
    float* out;
    assert(cudaMalloc(&x, n * sizeof(float)) == cudaSuccess);
    cudaMalloc(&out, sizeof(float));
    cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(out, 0, sizeof(float));
    p.x = x; p.out = out; p.n = n;
    vec_norm2<<<1056, 256>>>(p);
    cudaDeviceSynchronize();
    cudaFree(x);
    cudaFree(out);
    return 0;
}
