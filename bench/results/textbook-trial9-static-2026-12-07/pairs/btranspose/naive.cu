#include <cuda_runtime.h>
#include <vector>

// out[b][j][i] = in[b][i][j] for a batch of R x C matrices; 3-D grid (z = batch), BS x BS threads.
template <typename T, int BS>
__global__ void batched_transpose(const T* in, T* out, int R, int C) {
    int j = blockIdx.x * BS + threadIdx.x;
    int i = blockIdx.y * BS + threadIdx.y;
    size_t base = (size_t)blockIdx.z * R * C;
    if (i < R && j < C) out[base + (size_t)j * R + i] = in[base + (size_t)i * C + j];
}

int main() {
    const int batch = 16, R = 1024, C = 768;
    std::vector<float> h((size_t)batch * R * C), o(h.size());
    for (size_t k = 0; k < h.size(); ++k) h[k] = (float)(k % 65521);
    float *in, *out;
    cudaMalloc(&in, h.size() * sizeof(float));
    cudaMalloc(&out, h.size() * sizeof(float));
    cudaMemcpy(in, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
    constexpr int BS = 32;
    dim3 block(BS, BS);
    dim3 grid((C + BS - 1) / BS, (R + BS - 1) / BS, batch);
    batched_transpose<float, BS><<<grid, block>>>(in, out, R, C);
    cudaMemcpy(o.data(), out, o.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(in);
    cudaFree(out);
    return 0;
}
