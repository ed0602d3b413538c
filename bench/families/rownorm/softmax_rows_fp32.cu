// softmax_rows_fp32.cu -- row softmax, one thread per row, three passes (max, sum of exp, normalize).
#include <cuda_runtime.h>

__global__ void softmax_rows_fp32(float *out, const float *in, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float *x = in + row * cols;
    float *y = out + row * cols;
    float maxval = -INFINITY;
    for (int j = 0; j < cols; j++) {
        maxval = fmaxf(maxval, x[j]);
    }
    float sum = 0.0f;
    for (int j = 0; j < cols; j++) {
        sum += expf(x[j] - maxval);
    }
    for (int j = 0; j < cols; j++) {
        y[j] = expf(x[j] - maxval) / sum;
    }
}

extern "C" void launch_softmax_rows_fp32(float *out, const float *in, int rows, int cols)
{
    int block = 64;
    softmax_rows_fp32<<<(rows + block - 1) / block, block>>>(out, in, rows, cols);
}
