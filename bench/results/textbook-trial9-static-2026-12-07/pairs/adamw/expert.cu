#include <cuda_runtime.h>
#include <cmath>
#include <vector>

__device__ __forceinline__ float adamw_one(float& p, float g, float& m, float& v, float lr, float beta1, float beta2,
                                           float eps, float wd, float bc1, float bc2) {
    m = beta1 * m + (1.f - beta1) * g;
    v = beta2 * v + (1.f - beta2) * g * g;
    p -= lr * ((m / bc1) / (sqrtf(v / bc2) + eps) + wd * p);
    return p;
}

// float4 through every array (n % 4 == 0), grid-stride over the float4 index.
__global__ void adamw_step(float* __restrict__ params, const float* __restrict__ grads, float* __restrict__ m,
                           float* __restrict__ v, size_t n, float lr, float beta1, float beta2, float eps, float wd,
                           float bc1, float bc2) {
    size_t n4 = n / 4;
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 p = reinterpret_cast<float4*>(params)[i];
        float4 g = reinterpret_cast<const float4*>(grads)[i];
        float4 mm = reinterpret_cast<float4*>(m)[i];
        float4 vv = reinterpret_cast<float4*>(v)[i];
        adamw_one(p.x, g.x, mm.x, vv.x, lr, beta1, beta2, eps, wd, bc1, bc2);
        adamw_one(p.y, g.y, mm.y, vv.y, lr, beta1, beta2, eps, wd, bc1, bc2);
        adamw_one(p.z, g.z, mm.z, vv.z, lr, beta1, beta2, eps, wd, bc1, bc2);
        adamw_one(p.w, g.w, mm.w, vv.w, lr, beta1, beta2, eps, wd, bc1, bc2);
        reinterpret_cast<float4*>(params)[i] = p;
        reinterpret_cast<float4*>(m)[i] = mm;
        reinterpret_cast<float4*>(v)[i] = vv;
    }
}

void launch_adamw(float* params, const float* grads, float* m, float* v, size_t n, int step, cudaStream_t stream) {
    const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    float bc1 = 1.f - powf(b1, (float)step), bc2 = 1.f - powf(b2, (float)step);
    adamw_step<<<1024, 256, 0, stream>>>(params, grads, m, v, n, lr, b1, b2, eps, wd, bc1, bc2);
}

int main() {
    const size_t n = (size_t)1 << 24;
    std::vector<float> hp(n), hg(n), hm(n), hv(n);
    for (size_t i = 0; i < n; ++i) {
        hp[i] = (float)(i % 101) * 0.01f;
        hg[i] = (float)((i % 37) - 18) * 0.001f;
        hm[i] = 0.f;
        hv[i] = 0.f;
    }
    float *p, *g, *m, *v;
    cudaMalloc(&p, n * sizeof(float));
    cudaMalloc(&g, n * sizeof(float));
    cudaMalloc(&m, n * sizeof(float));
    cudaMalloc(&v, n * sizeof(float));
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cudaMemcpyAsync(p, hp.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(g, hg.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(m, hm.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(v, hv.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream);
    launch_adamw(p, g, m, v, n, 1, stream);
    cudaMemcpyAsync(hp.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    cudaFree(p);
    cudaFree(g);
    cudaFree(m);
    cudaFree(v);
    return 0;
}
