#include <cstdint>
#include <cstdio>
#include <vector>

// Same result: each block counts into its own 1024 shared bins over a grid-stride loop, then flushes them once.
__global__ void hist_u16(const uint16_t* __restrict__ samples, unsigned int* hist, size_t n) {
    __shared__ unsigned int local[1024];
    for (int b = threadIdx.x; b < 1024; b += blockDim.x) local[b] = 0u;
    __syncthreads();
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&local[samples[i] >> 6], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 1024; b += blockDim.x)
        if (local[b]) atomicAdd(&hist[b], local[b]);
}

int main() {
    const size_t n = (size_t)1 << 26;
    const int nbins = 1024;
    std::vector<uint16_t> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = (uint16_t)((i * 2654435761ull) >> 11);
    uint16_t* samples;
    unsigned int* hist;
    cudaMalloc(&samples, n * sizeof(uint16_t));
    cudaMalloc(&hist, nbins * sizeof(unsigned int));
    cudaMemcpy(samples, h.data(), n * sizeof(uint16_t), cudaMemcpyHostToDevice);
    cudaMemset(hist, 0, nbins * sizeof(unsigned int));
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    hist_u16<<<sms * 8, 256>>>(samples, hist, n);
    std::vector<unsigned int> hh(nbins);
    cudaMemcpy(hh.data(), hist, nbins * sizeof(unsigned int), cudaMemcpyDeviceToHost);
    unsigned long long sum = 0;
    for (int b = 0; b < nbins; ++b) sum += (unsigned long long)hh[b] * (b + 1);
    printf("checksum = %llu\n", sum);
    cudaFree(samples);
    cudaFree(hist);
    return 0;
}
