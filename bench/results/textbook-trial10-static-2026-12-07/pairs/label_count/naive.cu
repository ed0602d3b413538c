#include <cuda_runtime.h>
#include <array>
#include <cstdint>
#include <vector>

enum { NCLASS = 100 };

// counts[c] = number of i with labels[i] == c (class labels of a batch, out-of-range labels skipped).
// Grid-stride loop with `+=`; every count goes straight to global memory with atomicAdd.
__global__ void label_count(const int* labels, unsigned int* counts, int n) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int c = labels[i];
        if (c >= 0 && c < NCLASS) atomicAdd(&counts[c], 1u);
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
