#include <cuda_runtime.h>
#include <vector>

// One block per row: the row is walked in chunks of blockDim.x; each chunk is scanned with warp shuffles
// (Hillis-Steele inside a warp, then the warp totals), plus the carry of the earlier chunks.
__global__ void row_cumsum(const int* __restrict__ in, int* __restrict__ out, size_t rows, size_t cols) {
    __shared__ int warp_tot[32];
    __shared__ int carry;
    size_t r = blockIdx.x;
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (size_t c0 = 0; c0 < cols; c0 += blockDim.x) {
        size_t c = c0 + threadIdx.x;
        int v = c < cols ? in[r * cols + c] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            int t = __shfl_up_sync(0xffffffffu, v, o);
            if (lane >= o) v += t;
        }
        if (lane == 31) warp_tot[wid] = v;
        __syncthreads();
        if (wid == 0) {
            int t = lane < nw ? warp_tot[lane] : 0;
            for (int o = 1; o < 32; o <<= 1) {
                int u = __shfl_up_sync(0xffffffffu, t, o);
                if (lane >= o) t += u;
            }
            if (lane < nw) warp_tot[lane] = t;
        }
        __syncthreads();
        int prefix = carry + (wid > 0 ? warp_tot[wid - 1] : 0);
        if (c < cols) out[r * cols + c] = v + prefix;
        __syncthreads();
        if (threadIdx.x == blockDim.x - 1) carry += warp_tot[nw - 1];
        __syncthreads();
    }
}

int main() {
    const size_t rows = 4096, cols = 1024;
    std::vector<int> h(rows * cols), o(rows * cols);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (int)(i % 7) - 3;
    int *in, *out;
    cudaMalloc(&in, h.size() * sizeof(int));
    cudaMalloc(&out, h.size() * sizeof(int));
    cudaMemcpy(in, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice);
    row_cumsum<<<(unsigned)rows, 256>>>(in, out, rows, cols);
    cudaMemcpy(o.data(), out, o.size() * sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(in);
    cudaFree(out);
    return 0;
}
