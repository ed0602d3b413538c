// residual_relu_bf16.cu -- out = relu(x + residual) * scale on a rows x cols bf16 matrix, 2-D launch.
// The natural way to write it: row from x, column from y -- which makes each warp walk down a column.
#include <cuda_runtime.h>
#include <cuda_bf16.h>

__global__ void residual_relu_bf16(__nv_bfloat16 *out, const __nv_bfloat16 *x, const __nv_bfloat16 *residual,
                                   float scale, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        float v = __bfloat162float(x[row * cols + col]) + __bfloat162float(residual[row * cols + col]);
        out[row * cols + col] = __float2bfloat16(fmaxf(v, 0.0f) * scale);
    }
}

extern "C" void launch_residual_relu_bf16(__nv_bfloat16 *out, const __nv_bfloat16 *x,
                                          const __nv_bfloat16 *residual, float scale, int rows, int cols)
{
    dim3 block(16, 16);
    dim3 grid((rows + 15) / 16, (cols + 15) / 16);
    residual_relu_bf16<<<grid, block>>>(out, x, residual, scale, rows, cols);
}
