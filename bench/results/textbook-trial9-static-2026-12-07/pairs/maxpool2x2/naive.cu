#include <cuda_runtime.h>
#include <vector>

// out[c][r][q] = max of the 2x2 window in[c][2r..2r+1][2q..2q+1]; one thread per output, read through __ldg.
__global__ void maxpool2x2(const float* __restrict__ in, float* __restrict__ out, int C, int H, int W) {
    int q = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.z;
    int Ho = H / 2, Wo = W / 2;
    if (q >= Wo || r >= Ho) return;
    const float* p = in + ((size_t)c * H + 2 * r) * W + 2 * q;
    float a = __ldg(p), b = __ldg(p + 1), d = __ldg(p + W), e = __ldg(p + W + 1);
    out[((size_t)c * Ho + r) * Wo + q] = fmaxf(fmaxf(a, b), fmaxf(d, e));
}

int main() {
    const int C = 64, H = 512, W = 512;
    std::vector<float> h((size_t)C * H * W), o((size_t)C * (H / 2) * (W / 2));
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 2654435761u) % 4093) * 0.001f;
    float *in, *out;
    cudaMalloc(&in, h.size() * sizeof(float));
    cudaMalloc(&out, o.size() * sizeof(float));
    cudaMemcpy(in, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
    dim3 block(32, 8);
    dim3 grid((W / 2 + block.x - 1) / block.x, (H / 2 + block.y - 1) / block.y, C);
    maxpool2x2<<<grid, block>>>(in, out, C, H, W);
    cudaMemcpy(o.data(), out, o.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(in);
    cudaFree(out);
    return 0;
}
