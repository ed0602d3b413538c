#include <cuda_runtime.h>
#include <cassert>
#include <vector>

struct NormParams {
    const float* x;
    float* out;
    long long n;
};

// *out += x[i]^2 for all i (the squared 2-norm); one atomic per element.
__global__ void vec_norm2(NormParams p) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) { return; }
    float v = p.x[i];
    atomicAdd(p.out, v * v);
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
    vec_norm2<<<(unsigned)((n + 255) / 256), 256>>>(p);
    cudaDeviceSynchronize();
    cudaFree(x);
    cudaFree(out);
    return 0;
}
