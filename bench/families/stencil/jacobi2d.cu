// jacobi2d.cu -- one Jacobi sweep of the 5-point Laplace stencil on an ny x nx fp32 grid (boundary copied),
// with i (the row) taken from threadIdx.x as in the math's a[i][j] -- so a warp walks down a column.
#include <cuda_runtime.h>

__global__ void jacobi2d(float *out, const float *in, int ny, int nx)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < ny && j < nx) {
        if (i == 0 || j == 0 || i == ny - 1 || j == nx - 1) {
            out[i * nx + j] = in[i * nx + j];
        } else {
            out[i * nx + j] = 0.25f * (in[(i - 1) * nx + j] + in[(i + 1) * nx + j] +
                                       in[i * nx + j - 1] + in[i * nx + j + 1]);
        }
    }
}

extern "C" void launch_jacobi2d(float *out, const float *in, int ny, int nx)
{
    dim3 block(16, 16);
    dim3 grid((ny + 15) / 16, (nx + 15) / 16);
    jacobi2d<<<grid, block>>>(out, in, ny, nx);
}
