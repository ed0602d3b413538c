// layernorm_thread_per_row.cu -- y = (x - mean) / sqrt(var + eps) * w + b over the rows of [rows, cols]
// (naive-kernel suite, layer norm). Written for the suite as a user's first version: one thread per row,
// two serial passes for the statistics and one for the output.
#include <cuda_runtime.h>

__global__ void layernorm_thread_per_row(const float *x, const float *w, const float *b, float *y,
                                         int rows, int cols, float eps)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float *xr = x + (size_t)row * cols;
    float *yr = y + (size_t)row * cols;
    float mean = 0.0f;
    for (int j = 0; j < cols; ++j)
        mean += xr[j];
    mean /= cols;
    float var = 0.0f;
    for (int j = 0; j < cols; ++j) {
        float d = xr[j] - mean;
        var += d * d;
    }
    var /= cols;
    float rstd = rsqrtf(var + eps);
    for (int j = 0; j < cols; ++j)
        yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
}

extern "C" void launch_layernorm(const float *x, const float *w, const float *b, float *y, int rows, int cols,
                                 float eps)
{
    const int threads = 128;
    layernorm_thread_per_row<<<(rows + threads - 1) / threads, threads>>>(x, w, b, y, rows, cols, eps);
}
