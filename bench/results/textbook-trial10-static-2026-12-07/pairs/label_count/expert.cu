#include <cuda_runtime.h>
#include <array>
#include <cstdint>
#include <vector>

enum { NCLASS = 100 };

// Privatized histogram: each block counts into shared memory, then adds its NCLASS counts to global memory once.
__global__ void label_count(const int* __restrict__ labels, unsigned int* counts, int n) {
    __shared__ unsigned int local[NCLASS];
    for (int c = threadIdx.x; c < NCLASS; c += blockDim.x) local[c] = 0u;
    __syncthreads();
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int c = labels[i];
        if (c >= 0 && c < NCLASS) atomicAdd(&local[c], 1u);
    }
    __syncthreads();
    for (int c = threadIdx.x; c < NCLASS; c += blockDim.x) {
        unsigned int v = local[c];
        if (v) atomicAdd(&counts[c], v);
    }
}

int main() {
    const int n = 1 << 25;
    std::vector<int> h(n);
    for (int i = 0; i < n; ++i) h[i] = (int)(((uint32_t)i * 2654435761u) >> 7) % (NCLASS + 3);
    std::array<unsigned int, NCLASS> result{};
    int* labels;
    unsigned int* counts;
    cudaMalloc(&labels, n * sizeof(int));
    cudaMalloc(&counts, NCLASS * sizeof(unsigned int));
    cudaMemcpy(labels, h.data(), n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemset(counts, 0, NCLASS * sizeof(unsigned int));
    int nn = n;
    void* args[] = {&labels, &counts, &nn};
    cudaLaunchKernel((const void*)label_count, dim3(1024), dim3(256), args, 0, nullptr);
    cudaMemcpy(result.data(), counts, NCLASS * sizeof(unsigned int), cudaMemcpyDeviceToHost);
    cudaFree(labels);
    cudaFree(counts);
    return 0;
}
