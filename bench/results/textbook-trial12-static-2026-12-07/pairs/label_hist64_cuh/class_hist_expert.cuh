#pragma once
#include <cuda_runtime.h>

// counts[c] = number of i with labels[i] == c, for classes 0 .. NUM_CLASSES-1 (labels outside are skipped).
// Expert: a grid-stride loop counts into a per-block shared histogram, merged once per bin at the end.
template <int NUM_CLASSES>
__global__ void class_histogram(const int* labels, unsigned int* counts, int n) {
    __shared__ unsigned int s_counts[NUM_CLASSES];
    for (int c = threadIdx.x; c < NUM_CLASSES; c += blockDim.x) s_counts[c] = 0u;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        int c = labels[i];
        if (c >= 0 && c < NUM_CLASSES) atomicAdd(&s_counts[c], 1u);
    }
    __syncthreads();
    for (int c = threadIdx.x; c < NUM_CLASSES; c += blockDim.x)
        if (s_counts[c]) atomicAdd(&counts[c], s_counts[c]);
}
