#include <cstdint>
#include <cstdio>
#include <vector>

// The framework-style helpers this code base uses everywhere.
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

// grad_in = x > 0 ? grad_out : grad_out * slope (leaky ReLU backward).
__global__ void MY_LAUNCH_BOUNDS_1(kNumThreads)
leaky_relu_backward_kernel(int64_t numel, const float* grad_out, const float* self, float* grad_in, float slope) {
    MY_KERNEL_LOOP(index, numel) {
        float x = self[index];
        float g = grad_out[index];
        grad_in[index] = x > 0.f ? g : g * slope;
    }
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
    leaky_relu_backward_kernel<<<get_blocks(numel), kNumThreads>>>(numel, g, x, r, 0.01f);
    cudaMemcpy(hr.data(), r, numel * sizeof(float), cudaMemcpyDeviceToHost);
    double sum = 0;
    for (int64_t i = 0; i < numel; ++i) sum += hr[i];
    printf("checksum = %.6f\n", sum);
    cudaFree(x);
    cudaFree(g);
    cudaFree(r);
    return 0;
}
