#pragma once
#include <cuda_runtime.h>

// counts[c] = number of i with labels[i] == c, for classes 0 .. NUM_CLASSES-1 (labels outside are skipped).
// One thread per label, global atomics.
template <int NUM_CLASSES>
__global__ void class_histogram(const int* labels, unsigned int* counts, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int c = labels[i];
        if (c >= 0 && c < NUM_CLASSES) atomicAdd(&counts[c], 1u);
    }
}
