#include "class_hist.cuh"

// Host side of the module: zero the counts and launch the histogram on the given stream.
void count_classes(const int* d_labels, unsigned int* d_counts, int n, cudaStream_t stream) {
    cudaMemsetAsync(d_counts, 0, 64 * sizeof(unsigned int), stream);
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    class_histogram<64><<<blocks, threads, 0, stream>>>(d_labels, d_counts, n);
}
