#include <cuda_runtime.h>
template <typename scalar_t, typename acc_t>
__global__ void logsumexp_rows(const scalar_t* __restrict__ input, scalar_t* __restrict__ output,
                               int64_t outer_size, int64_t dim_size)
{
    int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row < outer_size) {
        const scalar_t* in = input + row * dim_size;
        acc_t m = -INFINITY;
        for (int64_t k = 0; k < dim_size; ++k) m = max(m, (acc_t)in[k]);
        acc_t s = 0;
        for (int64_t k = 0; k < dim_size; ++k) s += exp((acc_t)in[k] - m);
        output[row] = (scalar_t)(m + log(s));
    }
}

int main()
{
    const int64_t outer = 8192, dim = 4096;
    float *in, *out;
    cudaMalloc(&in, outer * dim * sizeof(float));
    cudaMalloc(&out, outer * sizeof(float));
    cudaMemset(in, 0, outer * dim * sizeof(float));
    const int threads = 128;
    logsumexp_rows<float, float><<<(outer + threads - 1) / threads, threads>>>(in, out, outer, dim);
    cudaDeviceSynchronize();
    return 0;
}
