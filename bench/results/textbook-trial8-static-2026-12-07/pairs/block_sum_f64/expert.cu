#include <cuda_runtime.h>
#include <vector>

static __device__ __forceinline__ double warp_sum(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// out[b] = sum of block b's slice: sequential addressing down to one warp, then shuffles.
__global__ void block_sum_f64(const double* in, double* out, unsigned n) {
    __shared__ double s[256];
    unsigned tid = threadIdx.x;
    unsigned i = threadIdx.x + blockIdx.x * blockDim.x;
    s[tid] = (i < n) ? in[i] : 0.0;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride >= 32; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid < 32) {
        double v = warp_sum(s[tid]);
        if (tid == 0) out[blockIdx.x] = v;
    }
}

int main() {
    const unsigned n = 1u << 24;
    const unsigned threads = 256, blocks = (n + threads - 1) / threads;
    std::vector<double> h(n);
    for (unsigned i = 0; i < n; ++i) h[i] = 1.0 / (1 + i % 7);
    double *in, *out;
    cudaMalloc(&in, n * sizeof(double));
    cudaMalloc(&out, blocks * sizeof(double));
    cudaMemcpy(in, h.data(), n * sizeof(double), cudaMemcpyHostToDevice);
    block_sum_f64<<<blocks, threads>>>(in, out, n);
    cudaDeviceSynchronize();
    cudaFree(in);
    cudaFree(out);
    return 0;
}
