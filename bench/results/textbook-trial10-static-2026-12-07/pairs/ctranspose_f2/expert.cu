#include <cuda_runtime.h>
#include <cstdint>
#include <vector>

constexpr int TD = 32;  // tile side
constexpr int BR = 8;   // block rows: each thread moves TD / BR elements

// Tile through shared memory: a 32x32 tile of float2 is read with coalesced rows, written back transposed with
// coalesced rows of out. The +1 column avoids bank conflicts on the transposed read.
__global__ void conj_transpose(const float2* __restrict__ in, float2* __restrict__ out, int rows, int cols) {
    __shared__ float2 tile[TD][TD + 1];
    int c = blockIdx.x * TD + threadIdx.x;
    int r0 = blockIdx.y * TD;
    for (int j = threadIdx.y; j < TD; j += BR) {
        int r = r0 + j;
        if (r < rows && c < cols) tile[j][threadIdx.x] = in[(int64_t)r * cols + c];
    }
    __syncthreads();
    int oc = r0 + threadIdx.x;             // column of out = row of in
    int orow0 = blockIdx.x * TD;           // row of out = column of in
    for (int j = threadIdx.y; j < TD; j += BR) {
        int orow = orow0 + j;
        if (orow < cols && oc < rows) {
            float2 v = tile[threadIdx.x][j];
            out[(int64_t)orow * rows + oc] = make_float2(v.x, -v.y);
        }
    }
}

int main() {
    const int rows = 4096, cols = 3072;
    const int64_t total = (int64_t)rows * cols;
    std::vector<float2> h(total), back(total);
    for (int64_t i = 0; i < total; ++i) h[i] = make_float2((float)(i % 97), (float)(i % 31) - 15.f);
    float2 *in, *out;
    cudaMalloc(&in, total * sizeof(float2));
    cudaMalloc(&out, total * sizeof(float2));
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cudaMemcpyAsync(in, h.data(), total * sizeof(float2), cudaMemcpyHostToDevice, stream);
    dim3 block(TD, BR);
    dim3 grid((cols + TD - 1) / TD, (rows + TD - 1) / TD);
    conj_transpose<<<grid, block, 0, stream>>>(in, out, rows, cols);
    cudaMemcpyAsync(back.data(), out, total * sizeof(float2), cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    cudaFree(in);
    cudaFree(out);
    return 0;
}
