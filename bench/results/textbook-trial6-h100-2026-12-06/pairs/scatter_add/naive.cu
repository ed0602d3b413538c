#include <cuda_runtime.h>
#define NBINS 512
// bins[idx[i]] += val[i]
__global__ void scatter_add(const int* idx, const float* val, float* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&bins[idx[i]], val[i]);
}

__global__ void make_inputs(int* idx, float* val, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { idx[i] = (i * 2654435761u) % NBINS; val[i] = 1.0f; }
}

int main()
{
    const int n = 1 << 24;
    int* idx; float *val, *bins;
    cudaMalloc(&idx, n * sizeof(int));
    cudaMalloc(&val, n * sizeof(float));
    cudaMalloc(&bins, NBINS * sizeof(float));
    make_inputs<<<(n + 255) / 256, 256>>>(idx, val, n);
    cudaMemset(bins, 0, NBINS * sizeof(float));
    scatter_add<<<(n + 255) / 256, 256>>>(idx, val, bins, n);
    cudaDeviceSynchronize();
    return 0;
}
