#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA_CHECK(call)                                                          \
    do {                                                                          \
        cudaError_t err_ = (call);                                                \
        if (err_ != cudaSuccess) {                                                \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

// loss[r] = logsumexp(logits[r, :]) - logits[r, target[r]]; one thread per row.
__global__ void xent_fwd(const float* logits, const int* target, float* loss, int B, int V) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= B) return;
    const float* row = logits + (size_t)r * V;
    float m = -INFINITY;
    for (int c = 0; c < V; ++c) m = fmaxf(m, row[c]);
    float s = 0.f;
    for (int c = 0; c < V; ++c) s += expf(row[c] - m);
    loss[r] = logf(s) + m - row[target[r]];
}

int main() {
    const int B = 8192, V = 1024;
    std::vector<float> h((size_t)B * V), out(B);
    std::vector<int> t(B);
    for (size_t i = 0; i < h.size(); ++i) h[i] = (float)((i * 31) % 997) * 0.01f;
    for (int r = 0; r < B; ++r) t[r] = (r * 13) % V;
    float *logits, *loss;
    int* target;
    CUDA_CHECK(cudaMalloc(&logits, h.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&target, B * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&loss, B * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(logits, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(target, t.data(), B * sizeof(int), cudaMemcpyHostToDevice));
    dim3 block(128);
    dim3 grid((B + block.x - 1) / block.x);
    xent_fwd<<<grid, block>>>(logits, target, loss, B, V);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(out.data(), loss, B * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(logits));
    CUDA_CHECK(cudaFree(target));
    CUDA_CHECK(cudaFree(loss));
    return 0;
}
