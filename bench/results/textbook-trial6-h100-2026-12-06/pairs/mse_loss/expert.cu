#include <cuda_runtime.h>
// Grid-stride accumulation, warp shuffles, one atomic per block.
__global__ void mse_loss(const float* __restrict__ pred, const float* __restrict__ target, float* loss, size_t n)
{
    __shared__ float warp_sums[32];
    float acc = 0.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float diff = pred[i] - target[i];
        acc += diff * diff;
    }
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    unsigned lane = threadIdx.x % 32, wid = threadIdx.x / 32;
    if (lane == 0) warp_sums[wid] = acc;
    __syncthreads();
    if (wid == 0) {
        acc = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) atomicAdd(loss, acc / (float)n);
    }
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
    mse_loss<<<132 * 4, 256>>>(pred, target, loss, n);
    cudaDeviceSynchronize();
    return 0;
}
