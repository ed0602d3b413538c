#include <cuda_runtime.h>
#define NBINS 512
// Per-block bins in shared memory, grid-stride, one global atomic per bin per block.
__global__ void scatter_add(const int* __restrict__ idx, const float* __restrict__ val, float* bins, int n)
{
    __shared__ float local[NBINS];
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x) local[b] = 0.0f;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[idx[i]], val[i]);
    __syncthreads();
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        if (local[b] != 0.0f) atomicAdd(&bins[b], local[b]);
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
    scatter_add<<<132 * 8, 256>>>(idx, val, bins, n);
    cudaDeviceSynchronize();
    return 0;
}
