#include <cstdint>
#include <cstdio>
#include <vector>

// 1024-bin histogram of 16-bit samples (e.g. a 16-bit camera frame): bin = sample >> 6. Global atomics.
__global__ void hist_u16(const uint16_t* samples, unsigned int* hist, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        uint16_t v = samples[i];
        atomicAdd(&hist[v >> 6], 1u);
    }
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
    hist_u16<<<(unsigned)((n + 255) / 256), 256>>>(samples, hist, n);
    std::vector<unsigned int> hh(nbins);
    cudaMemcpy(hh.data(), hist, nbins * sizeof(unsigned int), cudaMemcpyDeviceToHost);
    unsigned long long sum = 0;
    for (int b = 0; b < nbins; ++b) sum += (unsigned long long)hh[b] * (b + 1);
    printf("checksum = %llu\n", sum);
    cudaFree(samples);
    cudaFree(hist);
    return 0;
}
