#include <cstdint>
#include <cstdio>
#include <vector>

#define MY_MAX_THREADS_PER_BLOCK(val) (((val) <= 1024) ? (val) : 1024)
#define MY_LAUNCH_BOUNDS_1(max_threads) __launch_bounds__((MY_MAX_THREADS_PER_BLOCK((max_threads))))
#define MY_KERNEL_LOOP_TYPE(i, n, index_type)                                             \
    int64_t _i_n_d_e_x = blockIdx.x * blockDim.x + threadIdx.x;                           \
    for (index_type i = _i_n_d_e_x; _i_n_d_e_x < (n);                                     \
         _i_n_d_e_x += blockDim.x * gridDim.x, i = _i_n_d_e_x)
#define MY_KERNEL_LOOP(i, n) MY_KERNEL_LOOP_TYPE(i, n, int64_t)

constexpr int kNumThreads = 512;

inline int64_t get_blocks(int64_t numel, int64_t threads = kNumThreads) {
    int64_t b = (numel + threads - 1) / threads;
    return b < 4096 ? b : 4096;
}

__device__ __forceinline__ float leaky_grad(float x, float g, float slope) { return x > 0.f ? g : g * slope; }

// Same result: float4 groups over the grid-stride loop, then a scalar tail for numel % 4.
__global__ void MY_LAUNCH_BOUNDS_1(kNumThreads)
leaky_relu_backward_kernel(int64_t numel, const float* __restrict__ grad_out, const float* __restrict__ self,
                           float* __restrict__ grad_in, float slope) {
    const int64_t nvec = numel / 4;
    const float4* g4 = reinterpret_cast<const float4*>(grad_out);
    const float4* x4 = reinterpret_cast<const float4*>(self);
    float4* r4 = reinterpret_cast<float4*>(grad_in);
    MY_KERNEL_LOOP(v, nvec) {
        float4 x = x4[v];
        float4 g = g4[v];
        float4 r;
        r.x = leaky_grad(x.x, g.x, slope);
        r.y = leaky_grad(x.y, g.y, slope);
        r.z = leaky_grad(x.z, g.z, slope);
        r.w = leaky_grad(x.w, g.w, slope);
        r4[v] = r;
    }
    int64_t tail = nvec * 4 + blockIdx.x * blockDim.x + threadIdx.x;
    if (tail < numel) grad_in[tail] = leaky_grad(self[tail], grad_out[tail], slope);
}

int main() {
    const int64_t numel = (int64_t(1) << 24) + 3;
    std::vector<float> hx(numel), hg(numel), hr(numel);
    for (int64_t i = 0; i < numel; ++i) {
        hx[i] = (float)((i * 37) % 201) - 100.f;
        hg[i] = (float)(i % 17) * 0.25f;
    }
    float *x, *g, *r;
    cudaMalloc(&x, numel * sizeof(float));
    cudaMalloc(&g, numel * sizeof(float));
    cudaMalloc(&r, numel * sizeof(float));
    cudaMemcpy(x, hx.data(), numel * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(g, hg.data(), numel * sizeof(float), cudaMemcpyHostToDevice);
    leaky_relu_backward_kernel<<<get_blocks(numel / 4), kNumThreads>>>(numel, g, x, r, 0.01f);
    cudaMemcpy(hr.data(), r, numel * sizeof(float), cudaMemcpyDeviceToHost);
    double sum = 0;
    for (int64_t i = 0; i < numel; ++i) sum += hr[i];
    printf("checksum = %.6f\n", sum);
    cudaFree(x);
    cudaFree(g);
    cudaFree(r);
    return 0;
}
