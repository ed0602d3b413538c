#include <cuda_runtime.h>
#include <cmath>
#include <vector>

// One AdamW step over n parameters, grid-stride with size_t counters.
__global__ void adamw_step(float* params, const float* grads, float* m, float* v, size_t n, float lr, float beta1,
                           float beta2, float eps, float wd, float bc1, float bc2) {
    size_t stride = (size_t)blockDim.x * gridDim.x;
#pragma unroll 4
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float g = grads[i];
        float mi = beta1 * m[i] + (1.f - beta1) * g;
        float vi = beta2 * v[i] + (1.f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / bc1, vhat = vi / bc2;
        params[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * params[i]);
    }
}

// Host launcher taking raw device pointers and the stream to run on.
void launch_adamw(float* params, const float* grads, float* m, float* v, size_t n, int step, cudaStream_t stream) {
    const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    float bc1 = 1.f - powf(b1, (float)step), bc2 = 1.f - powf(b2, (float)step);
    int threads = 256;
    int blocks = 1024;
    adamw_step<<<blocks, threads, 0, stream>>>(params, grads, m, v, n, lr, b1, b2, eps, wd, bc1, bc2);
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
