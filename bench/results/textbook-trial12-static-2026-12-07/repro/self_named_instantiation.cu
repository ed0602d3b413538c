#include <cuda_runtime.h>
template <typename scalar_t>
__global__ void k(scalar_t* out, const scalar_t* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = exp((scalar_t)in[i]);
}
int main() {
    int n = 1 << 20;
    using scalar_t = float;
    scalar_t *a, *b;
    cudaMalloc(&a, n * sizeof(scalar_t)); cudaMalloc(&b, n * sizeof(scalar_t));
    k<scalar_t><<<(n + 255) / 256, 256>>>(b, a, n);
    cudaDeviceSynchronize();
    return 0;
}
