#include <cuda_runtime.h>
#include <vector>

// Shared tile (padded against bank conflicts); BS x ROWS threads, each moves BS / ROWS elements.
template <typename T, int BS, int ROWS>
__global__ void batched_transpose(const T* __restrict__ in, T* __restrict__ out, int R, int C) {
    __shared__ T tile[BS][BS + 1];
    size_t base = (size_t)blockIdx.z * R * C;
    int j = blockIdx.x * BS + threadIdx.x;
    int i0 = blockIdx.y * BS + threadIdx.y;
    for (int k = 0; k < BS; k += ROWS)
        if (i0 + k < R && j < C) tile[threadIdx.y + k][threadIdx.x] = in[base + (size_t)(i0 + k) * C + j];
    __syncthreads();
    int oi = blockIdx.y * BS + threadIdx.x;   // column of out = row of in
    int oj0 = blockIdx.x * BS + threadIdx.y;  // row of out = column of in
    for (int k = 0; k < BS; k += ROWS)
        if (oj0 + k < C && oi < R) out[base + (size_t)(oj0 + k) * R + oi] = tile[threadIdx.x][threadIdx.y + k];
}

int main() {
    const int batch = 16, R = 1024, C = 768;
    std::vector<float> h((size_t)batch * R * C), o(h.size());
    for (size_t k = 0; k < h.size(); ++k) h[k] = (float)(k % 65521);
    float *in, *out;
    cudaMalloc(&in, h.size() * sizeof(float));
    cudaMalloc(&out, h.size() * sizeof(float));
    cudaMemcpy(in, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
    constexpr int BS = 32, ROWS = 8;
    dim3 block(BS, ROWS);
    dim3 grid((C + BS - 1) / BS, (R + BS - 1) / BS, batch);
    batched_transpose<float, BS, ROWS><<<grid, block>>>(in, out, R, C);
    cudaMemcpy(o.data(), out, o.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(in);
    cudaFree(out);
    return 0;
}
