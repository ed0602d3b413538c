#include <cuda_runtime.h>

template <int BLOCK>
__global__ void dot_partial(const float* a, const float* b, float* partial, int n) {
    __shared__ float sm[BLOCK];
    unsigned tid = threadIdx.x;
    float acc = 0.f;
    for (int i = blockIdx.x * BLOCK + tid; i < n; i += BLOCK * gridDim.x)
        acc += a[i] * b[i];
    sm[tid] = acc;
    __syncthreads();
    unsigned s = BLOCK / 2;
    while (s > 0) {
        if (tid < s) sm[tid] += sm[tid + s];
        __syncthreads();
        s >>= 1;
    }
    if (tid == 0) partial[blockIdx.x] = sm[0];
}

int main() {
    int n = 1 << 24;
    float *a, *b, *p;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&p, 1024 * sizeof(float));
    dot_partial<512><<<1024, 512>>>(a, b, p, n);
    cudaDeviceSynchronize();
    return 0;
}
