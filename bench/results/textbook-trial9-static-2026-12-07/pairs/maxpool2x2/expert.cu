#include <cuda_runtime.h>
#include <vector>

// Two outputs per thread: each input row of the pair of windows is one float4 (W % 4 == 0), one float2 store.
__global__ void maxpool2x2(const float* __restrict__ in, float* __restrict__ out, int C, int H, int W) {
    int q2 = blockIdx.x * blockDim.x + threadIdx.x;  // index of a pair of outputs
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.z;
    int Ho = H / 2, Wo = W / 2;
    if (2 * q2 >= Wo || r >= Ho) return;
    const float* p = in + ((size_t)c * H + 2 * r) * W + 4 * q2;
    float4 top = __ldg(reinterpret_cast<const float4*>(p));
    float4 bot = __ldg(reinterpret_cast<const float4*>(p + W));
    float2 res;
    res.x = fmaxf(fmaxf(top.x, top.y), fmaxf(bot.x, bot.y));
    res.y = fmaxf(fmaxf(top.z, top.w), fmaxf(bot.z, bot.w));
    reinterpret_cast<float2*>(out + ((size_t)c * Ho + r) * Wo)[q2] = res;
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
    dim3 grid((W / 4 + block.x - 1) / block.x, (H / 2 + block.y - 1) / block.y, C);
    maxpool2x2<<<grid, block>>>(in, out, C, H, W);
    cudaMemcpy(o.data(), out, o.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(in);
    cudaFree(out);
    return 0;
}
