#include <cuda_runtime.h>
#include <vector>

// out[b] = sum of the doubles of block b's slice; interleaved-addressing tree in shared memory.
__global__ void block_sum_f64(const double* in, double* out, unsigned n) {
    __shared__ double s[256];
    unsigned tid = threadIdx.x;
    unsigned i = threadIdx.x + blockIdx.x * blockDim.x;
    s[tid] = (i < n) ? in[i] : 0.0;
    __syncthreads();
    for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
        if (tid % (2 * stride) == 0) {
            s[tid] += s[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
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
