#pragma once
#include <cuda_runtime.h>
namespace ops {
template <typename T>
__global__ void rowsum(const T* m, T* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        T s = 0;
        for (int c = 0; c < cols; ++c) s += m[r * cols + c];
        out[r] = s;
    }
}
}
