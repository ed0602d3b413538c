#include <cuda_runtime.h>
#include <cstdint>
#define BS 256

__global__ void block_max_abs(const double* __restrict__ v, double* __restrict__ blockmax, int64_t n) {
    __shared__ double red[BS];
    const int t = threadIdx.x;
    const int64_t g = (int64_t)blockIdx.x * BS + t;
    red[t] = g < n ? fabs(v[g]) : 0.0;
    __syncthreads();
    int s = 1;
    do {
        if (t % (2 * s) == 0) red[t] = fmax(red[t], red[t + s]);
        __syncthreads();
        s <<= 1;
    } while (s < BS);
    if (t == 0) blockmax[blockIdx.x] = red[0];
}

int main() {
    int64_t n = 1 << 22;
    double *v, *m;
    cudaMalloc(&v, n * sizeof(double));
    cudaMalloc(&m, (n / BS) * sizeof(double));
    block_max_abs<<<(unsigned)((n + BS - 1) / BS), BS>>>(v, m, n);
    cudaDeviceSynchronize();
    return 0;
}
