#include <cstdio>
#include <cstring>
#include <vector>

constexpr int kBlock = 256;

// max_i |a[i] - b[i]| (L-infinity distance). Per-block interleaved max tree, then one atomicMax on the float's
// bits (valid: the values are non-negative, so their int patterns order like the floats).
__global__ void __launch_bounds__(kBlock, 2) linf_dist(const float* a, const float* b, int* out_bits, int n) {
    __shared__ float sm[kBlock];
    int tid = threadIdx.x;
    int i = blockIdx.x * kBlock + tid;
    sm[tid] = (i < n) ? fabsf(a[i] - b[i]) : 0.f;
    __syncthreads();
#pragma unroll 4
    for (int s = 1; s < kBlock; s <<= 1) {
        int idx = 2 * s * tid;
        if (idx < kBlock) sm[idx] = fmaxf(sm[idx], sm[idx + s]);
        __syncthreads();
    }
    if (tid == 0) atomicMax(out_bits, __float_as_int(sm[0]));
}

int main() {
    const int n = 1 << 24;
    std::vector<float> ha(n), hb(n);
    for (int i = 0; i < n; ++i) {
        ha[i] = (float)((i * 1103) % 4099) * 1e-3f;
        hb[i] = (float)((i * 577) % 4093) * 1e-3f;
    }
    float *a, *b;
    int* bits;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&bits, sizeof(int));
    cudaMemcpy(a, ha.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(b, hb.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(bits, 0, sizeof(int));
    linf_dist<<<(n + kBlock - 1) / kBlock, kBlock>>>(a, b, bits, n);
    int hbits = 0;
    cudaMemcpy(&hbits, bits, sizeof(int), cudaMemcpyDeviceToHost);
    float r;
    memcpy(&r, &hbits, sizeof(float));
    printf("linf = %.6f\n", r);
    cudaFree(a);
    cudaFree(b);
    cudaFree(bits);
    return 0;
}
