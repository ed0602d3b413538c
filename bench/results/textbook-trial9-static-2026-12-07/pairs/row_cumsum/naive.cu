#include <cuda_runtime.h>
#include <vector>

// Inclusive prefix sum along each row: out[r][c] = sum_{k<=c} in[r][k]; one thread per row.
__global__ void row_cumsum(const int* __restrict__ in, int* __restrict__ out, size_t rows, size_t cols) {
    size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    int acc = 0;
    for (size_t c = 0; c < cols; ++c) {
        acc += in[r * cols + c];
        out[r * cols + c] = acc;
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
    row_cumsum<<<(unsigned)((rows + 127) / 128), 128>>>(in, out, rows, cols);
    cudaMemcpy(o.data(), out, o.size() * sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(in);
    cudaFree(out);
    return 0;
}
