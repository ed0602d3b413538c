#include <cuda_runtime.h>
#include <cstdint>
enum class Hist : int { Bins = 64, Threads = 128 };

__global__ void hist64(const uint8_t* data, unsigned int* bins, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        atomicAdd(&bins[data[i] % static_cast<int>(Hist::Bins)], 1u);
    }
}

int main() {
    int64_t n = 1 << 24;
    uint8_t* d; unsigned int* b;
    cudaMalloc(&d, n);
    cudaMalloc(&b, static_cast<int>(Hist::Bins) * sizeof(unsigned int));
    hist64<<<1024, static_cast<int>(Hist::Threads)>>>(d, b, n);
    cudaDeviceSynchronize();
    return 0;
}
