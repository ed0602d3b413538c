#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t e = (call);                                                           \
        if (e != cudaSuccess) {                                                           \
            fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
            exit(EXIT_FAILURE);                                                           \
        }                                                                                 \
    } while (0)

// Per-block histogram in dynamic shared memory (nbins passed in the launch), merged with one atomic per bin.
__global__ void gray_hist(const unsigned char* __restrict__ img, int width, int height, int pitch,
                          unsigned int* __restrict__ hist) {
    extern __shared__ unsigned int local[];
    int tid = threadIdx.y * blockDim.x + threadIdx.x;
    int nthreads = blockDim.x * blockDim.y;
    for (int b = tid; b < 256; b += nthreads) local[b] = 0;
    __syncthreads();
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) atomicAdd(&local[img[y * pitch + x]], 1u);
    __syncthreads();
    for (int b = tid; b < 256; b += nthreads)
        if (local[b]) atomicAdd(&hist[b], local[b]);
}

int main() {
    const int width = 3840, height = 2160, pitch = 3840;
    std::vector<unsigned char> h((size_t)pitch * height);
    std::vector<unsigned int> out(256);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) h[(size_t)y * pitch + x] = (unsigned char)((x * 3 + y * 5) ^ (x >> 4));
    unsigned char* img;
    unsigned int* hist;
    CUDA_CHECK(cudaMalloc(&img, h.size()));
    CUDA_CHECK(cudaMalloc(&hist, 256 * sizeof(unsigned int)));
    CUDA_CHECK(cudaMemcpy(img, h.data(), h.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(hist, 0, 256 * sizeof(unsigned int)));
    dim3 threads(32, 8);
    dim3 blocks((width + threads.x - 1) / threads.x, (height + threads.y - 1) / threads.y);
    size_t smem = 256 * sizeof(unsigned int);
    gray_hist<<<blocks, threads, smem>>>(img, width, height, pitch, hist);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(out.data(), hist, 256 * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(img));
    CUDA_CHECK(cudaFree(hist));
    return 0;
}
