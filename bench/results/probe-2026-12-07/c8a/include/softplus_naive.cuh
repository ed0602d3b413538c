#pragma once
#include <cuda_runtime.h>

__global__ void softplus(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = log1pf(expf(x[i]));
}
