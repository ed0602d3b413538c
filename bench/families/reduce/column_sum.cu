// column_sum.cu -- sum over the rows of a rows x cols fp32 matrix (the bias gradient of a linear layer),
// one thread per column walking down its column; 32-thread blocks.
#include <cuda_runtime.h>

__global__ void column_sum(float *dbias, const float *dout, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (int r = 0; r < rows; r++)
            s += dout[r * cols + c];
        dbias[c] = s;
    }
}

extern "C" void launch_column_sum(float *dbias, const float *dout, int rows, int cols)
{
    column_sum<<<(cols + 31) / 32, 32>>>(dbias, dout, rows, cols);
}
