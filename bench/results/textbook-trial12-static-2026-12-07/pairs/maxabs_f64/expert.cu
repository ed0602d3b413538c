// max_i |x[i]| of a double array. Expert: grid-stride loop keeps a running max per thread, a warp-shuffle max
// combines the warp, and one lane per warp does the 64-bit atomicMax on the result's bits.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <cuda_runtime.h>

typedef unsigned long long u64;
#define CK(call) do { cudaError_t err = (call); if (err != cudaSuccess) { \
    printf("error %s at line %d\n", cudaGetErrorString(err), __LINE__); exit(1); } } while (0)

__global__ void maxabs_f64(const double* x, u64* result_bits, long n) {
    double a = 0.0;
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)blockDim.x * gridDim.x)
        a = fmax(a, fabs(x[i]));
    for (int off = 16; off > 0; off >>= 1) a = fmax(a, __shfl_down_sync(0xffffffffu, a, off));
    if ((threadIdx.x & 31) == 0) atomicMax(result_bits, (u64)__double_as_longlong(a));
}

int main() {
    const long n = 1L << 24;
    double* h = (double*)malloc(n * sizeof(double));
    for (long i = 0; i < n; i++) h[i] = ((double)((i * 7919) % 100003) - 50001.0) * 1e-3;
    double* d_x;
    u64* d_r;
    CK(cudaMalloc(&d_x, n * sizeof(double)));
    CK(cudaMalloc(&d_r, sizeof(u64)));
    CK(cudaMemcpy(d_x, h, n * sizeof(double), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_r, 0, sizeof(u64)));
    int threads = 256;
    int blocks = 132 * 8;
    maxabs_f64<<<blocks, threads>>>(d_x, d_r, n);
    CK(cudaGetLastError());
    u64 bits = 0;
    CK(cudaMemcpy(&bits, d_r, sizeof(u64), cudaMemcpyDeviceToHost));
    double r;
    memcpy(&r, &bits, sizeof(r));
    printf("checksum = %.9f\n", r);
    CK(cudaFree(d_x));
    CK(cudaFree(d_r));
    free(h);
    return 0;
}
