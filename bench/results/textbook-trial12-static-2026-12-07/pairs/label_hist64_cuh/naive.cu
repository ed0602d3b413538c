#include <cstdio>
#include <vector>
#include "launch.cu"

int main() {
    const int n = 1 << 24;
    std::vector<int> labels(n);
    for (int i = 0; i < n; ++i) labels[i] = (int)(((unsigned)i * 2654435761u) >> 26);   // 0..63
    int* d_labels;
    unsigned int* d_counts;
    cudaMalloc(&d_labels, n * sizeof(int));
    cudaMalloc(&d_counts, 64 * sizeof(unsigned int));
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaMemcpyAsync(d_labels, labels.data(), n * sizeof(int), cudaMemcpyHostToDevice, s);
    count_classes(d_labels, d_counts, n, s);
    unsigned int counts[64];
    cudaMemcpyAsync(counts, d_counts, sizeof(counts), cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    unsigned long long sum = 0;
    for (int c = 0; c < 64; ++c) sum += (unsigned long long)counts[c] * (c + 1);
    printf("checksum = %llu\n", sum);
    cudaStreamDestroy(s);
    cudaFree(d_labels);
    cudaFree(d_counts);
    return 0;
}
