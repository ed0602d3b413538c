#include <cuda_runtime.h>
#include <cstdint>
#include <vector>

// out = in^H: out[c][r] = conj(in[r][c]) for a complex (float2) rows x cols matrix, row-major, int64_t offsets.
// Reads are coalesced along threadIdx.x, writes stride by `rows`.
__global__ void conj_transpose(const float2* in, float2* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        int64_t src = (int64_t)r * cols + c;
        int64_t dst = (int64_t)c * rows + r;
        float2 v = in[src];
        out[dst] = make_float2(v.x, -v.y);
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
    dim3 block(32, 8);
    dim3 grid((cols + 31) / 32, (rows + 7) / 8);
    conj_transpose<<<grid, block, 0, stream>>>(in, out, rows, cols);
    cudaMemcpyAsync(back.data(), out, total * sizeof(float2), cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    cudaFree(in);
    cudaFree(out);
    return 0;
}
