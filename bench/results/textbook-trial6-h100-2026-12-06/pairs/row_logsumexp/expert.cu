#include <cuda_runtime.h>
// One block per row; online max/sum per thread, merged with warp shuffles then shared memory.
template <typename acc_t>
__device__ __forceinline__ void lse_merge(acc_t& m, acc_t& s, acc_t m2, acc_t s2)
{
    acc_t mn = max(m, m2);
    s = (m == -INFINITY ? 0 : s * exp(m - mn)) + (m2 == -INFINITY ? 0 : s2 * exp(m2 - mn));
    m = mn;
}

template <typename scalar_t, typename acc_t>
__global__ void logsumexp_rows(const scalar_t* __restrict__ input, scalar_t* __restrict__ output,
                               int64_t outer_size, int64_t dim_size)
{
    __shared__ acc_t sm[32], ss[32];
    int64_t row = blockIdx.x;
    const scalar_t* in = input + row * dim_size;
    acc_t m = -INFINITY, s = 0;
    for (int64_t k = threadIdx.x; k < dim_size; k += blockDim.x) {
        acc_t v = (acc_t)in[k];
        lse_merge(m, s, v, (acc_t)1);
    }
    for (int off = 16; off > 0; off >>= 1)
        lse_merge(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) { sm[wid] = m; ss[wid] = s; }
    __syncthreads();
    if (wid == 0) {
        int nw = blockDim.x >> 5;
        m = lane < nw ? sm[lane] : -INFINITY;
        s = lane < nw ? ss[lane] : 0;
        for (int off = 16; off > 0; off >>= 1)
            lse_merge(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
        if (lane == 0) output[row] = (scalar_t)(m + log(s));
    }
}

int main()
{
    const int64_t outer = 8192, dim = 4096;
    float *in, *out;
    cudaMalloc(&in, outer * dim * sizeof(float));
    cudaMalloc(&out, outer * sizeof(float));
    cudaMemset(in, 0, outer * dim * sizeof(float));
    logsumexp_rows<float, float><<<outer, 256>>>(in, out, outer, dim);
    cudaDeviceSynchronize();
    return 0;
}
