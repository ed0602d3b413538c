#include <cuda_runtime.h>
#include <vector>

// bins[v] += 1 for every byte v: per-block private histogram in shared memory, merged once per block.
__global__ void hist256(const unsigned char* data, unsigned int* bins, size_t n) {
    __shared__ unsigned int local[256];
    for (unsigned b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (size_t i = threadIdx.x + (size_t)blockIdx.x * blockDim.x; i < n; i += (size_t)blockDim.x * gridDim.x) {
        atomicAdd(&local[data[i]], 1u);
    }
    __syncthreads();
    for (unsigned b = threadIdx.x; b < 256; b += blockDim.x) {
        if (local[b]) atomicAdd(&bins[b], local[b]);
    }
}

int main() {
    const size_t n = (size_t)1 << 26;
    std::vector<unsigned char> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = (unsigned char)((i * 2654435761u) >> 24);
    unsigned char* d;
    unsigned int* bins;
    cudaMalloc(&d, n);
    cudaMalloc(&bins, 256 * sizeof(unsigned int));
    cudaMemcpy(d, h.data(), n, cudaMemcpyHostToDevice);
    cudaMemset(bins, 0, 256 * sizeof(unsigned int));
    hist256<<<1024, 256>>>(d, bins, n);
    cudaDeviceSynchronize();
    cudaFree(d);
    cudaFree(bins);
    return 0;
}
