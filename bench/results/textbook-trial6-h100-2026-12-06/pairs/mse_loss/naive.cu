#include <cuda_runtime.h>
// loss += (pred - target)^2 / n, one atomic per element.
__global__ void mse_loss(const float* pred, const float* target, float* loss, size_t n)
{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    float diff = pred[idx] - target[idx];
    atomicAdd(loss, diff * diff / (float)n);
}

__global__ void init(float* p, size_t n, float scale)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = scale * (float)(i % 97);
}

int main()
{
    const size_t n = (size_t)1 << 25;
    float *pred, *target, *loss;
    cudaMalloc(&pred, n * sizeof(float));
    cudaMalloc(&target, n * sizeof(float));
    cudaMalloc(&loss, sizeof(float));
    init<<<(unsigned)((n + 255) / 256), 256>>>(pred, n, 0.01f);
    init<<<(unsigned)((n + 255) / 256), 256>>>(target, n, 0.02f);
    cudaMemset(loss, 0, sizeof(float));
    mse_loss<<<(unsigned)((n + 255) / 256), 256>>>(pred, target, loss, n);
    cudaDeviceSynchronize();
    return 0;
}
