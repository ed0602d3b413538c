"""The transpose tile on batched transposes (a ``[B][R][C]`` tensor to ``[B][C][R]``): the batch offset, uniform
across the block, is the slice's base, kept on the tile's load and store, whatever its spelling (an offset in the
index, a rebased pointer, an ``int``/``size_t`` local, a 2-D grid whose y is the batch, per-slice strides of their
own, a batch check). Each candidate is run on the CPU (:func:`cpu_emulation.run_block_main`, one host thread per
CUDA thread) on slices whose sides are not multiples of 32: each output element is its transposed input element,
written exactly once, and nothing past the output is touched. The kernels are written for these tests.
"""

from __future__ import annotations

import shutil

import pytest
from cpu_emulation import compiler, run_block_main
from transform_helpers import assert_nvcc_compiles, facts_of_text

from htam_core.source import parse_text
from htam_core.transforms import registry

LAUNCH = """
void run(const float *in, float *out, int B, int R, int C) {
    dim3 block(32, 32);
    dim3 grid((C + 31) / 32, (R + 31) / 32, B);
    KERNEL<<<grid, block>>>(ARGS);
}
"""

#: name -> (kernel text, launch arguments, grid dimension of the batch)
KERNELS = {
    "index_offset": ("""__global__ void KERNEL(const float *in, float *out, int R, int C) {
    int c = blockIdx.x * 32 + threadIdx.x;
    int r = blockIdx.y * 32 + threadIdx.y;
    int b = blockIdx.z;
    if (r < R && c < C) out[b * R * C + c * R + r] = in[b * R * C + r * C + c];
}""", "in, out, R, C", "z"),
    "base_pointer": ("""__global__ void KERNEL(const float *__restrict__ in, float *__restrict__ out, int R, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    const float *src = in + (size_t)blockIdx.z * R * C;
    float *dst = out + (size_t)blockIdx.z * R * C;
    if (r < R && c < C) dst[c * R + r] = src[r * C + c];
}""", "in, out, R, C", "z"),
    "size_t_local": ("""__global__ void KERNEL(const float *in, float *out, int R, int C) {
    int c = blockIdx.x * 32 + threadIdx.x;
    int r = blockIdx.y * 32 + threadIdx.y;
    size_t b = blockIdx.z;
    if (r < R && c < C) out[b * R * C + (size_t)c * R + r] = in[b * R * C + (size_t)r * C + c];
}""", "in, out, R, C", "z"),
    "batch_check_early_exit": ("""__global__ void KERNEL(const float *in, float *out, int nb, int R, int C) {
    const int b = blockIdx.z;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (b >= nb || r >= R) return;
    if (c >= C) return;
    out[(size_t)blockIdx.z * R * C + c * R + r] = in[(size_t)blockIdx.z * R * C + r * C + c];
}""", "in, out, B, R, C", "z"),
    "own_slice_strides": ("""__global__ void KERNEL(const float *in, float *out, int R, int C, long long s_in,
                       long long s_out) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < R && c < C) out[blockIdx.z * s_out + c * R + r] = in[blockIdx.z * s_in + r * C + c];
}""", "in, out, R, C, (long long)R * C, (long long)R * C", "z"),
    "y_batch_row_loop": ("""__global__ void KERNEL(const float *in, float *out, int R, int C) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const float *slice = in + blockIdx.y * R * C;
    if (c < C)
        for (int r = threadIdx.y; r < R; r += blockDim.y)
            out[blockIdx.y * C * R + c * R + r] = slice[r * C + c];
}""", "in, out, R, C", "y"),
}

MAIN = """
#include <array>
int main() {
    const int B = B_, R = R_, C = C_;
    for (auto [gx, gy, gz, bx, by] : std::vector<std::array<unsigned, 5>>{LAUNCHES_}) {
        std::vector<HtamCounted> in((size_t)B * R * C + 64), out((size_t)B * R * C + 64);
        for (size_t i = 0; i < in.size(); ++i) in[i].v = (double)i;
        htam_launch3(gx, gy, gz, bx, by, [&] { KERNEL(ARGS); });
        for (const HtamCounted &o : out) std::printf("%.0f %d\\n", o.v, o.n);
    }
    return 0;
}
"""

PRELUDE = """
struct HtamCounted {  // a value and how many times it was assigned
    double v = -1; int n = 0;
    HtamCounted() = default;
    HtamCounted(const HtamCounted &o) : v(o.v), n(0) {}
    HtamCounted &operator=(const HtamCounted &o) { v = o.v; ++n; return *this; }
};
#define float HtamCounted
"""


def _text(name: str) -> str:
    kernel, args, dim = KERNELS[name]
    launch = LAUNCH.replace("ARGS", args)
    if dim == "y":
        launch = launch.replace("(R + 31) / 32, B", "B")
    return kernel.replace("KERNEL", name) + "\n" + launch.replace("KERNEL", name)


def _candidates(text: str, kernel: str) -> list:
    model = parse_text(text, "cuda")
    cs = registry.propose("cuda.transpose_smem_tile", model, model.kernel(kernel))
    assert isinstance(cs, list), cs.reason
    return cs


def _outputs(text: str, name: str, b: int, r: int, c: int, launches: list[tuple[int, ...]], tmp) -> list:
    args = KERNELS[name][1].replace("in", "in.data()").replace("out", "out.data()")
    main = MAIN.replace("B_", str(b)).replace("R_", str(r)).replace("C_", str(c)).replace(
        "KERNEL", name).replace("ARGS", args).replace(
        "LAUNCHES_", ", ".join("{" + ", ".join(map(str, la)) + "}" for la in launches))
    nums = run_block_main(text, name, main, tmp, prelude=PRELUDE)
    per = 2 * (b * r * c + 64)
    return [list(zip(nums[i:i + per:2], nums[i + 1:i + per:2], strict=True)) for i in range(0, len(nums), per)]


def _want(b: int, r: int, c: int, moved: int) -> list[tuple[float, float]]:
    """Slices ``0..moved-1`` transposed once each, the rest of the output untouched."""
    out = [(-1.0, 0.0)] * (b * r * c + 64)
    for k in range(moved):
        for j in range(c):
            for i in range(r):
                out[k * r * c + j * r + i] = (float(k * r * c + i * c + j), 1.0)
    return out


def _check(outs: list, want: list) -> None:
    for k, got in enumerate(outs):
        bad = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
        assert not bad, f"launch {k}: {len(bad)} elements wrong, first at {bad[0]}: {got[bad[0]]} != {want[bad[0]]}"


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_slice_is_transposed_once_under_any_launch(name, tmp_path):
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    b, r, c = 3, 37, 70
    text = _text(name)
    cs = _candidates(text, name)
    # the coarsened tile first (made for the 32x8 block its launch gets), then the form for any block
    assert [x.params.get("rows_per_thread") for x in cs] == [4, None] and "htam_e" in cs[1].new_text
    batch = {"z": lambda gx, gy, bx, by: (gx, gy, b, bx, by), "y": lambda gx, gy, bx, by: (gx, b, 1, bx, by)}
    shape = batch[KERNELS[name][2]]
    launches = [shape(3, 2, 32, 8), shape(1, 1, 16, 16), shape(4, 3, 7, 5)]
    _check(_outputs(cs[1].new_text, name, b, r, c, launches, tmp_path), _want(b, r, c, b))
    narrow = [shape(3, 2, 32, 8), shape(1, 1, 32, 8), shape(4, 3, 32, 8), shape(2, 5, 32, 8)]
    _check(_outputs(cs[0].new_text, name, b, r, c, narrow, tmp_path), _want(b, r, c, b))


def test_the_batch_check_keeps_the_slices_past_it_untouched(tmp_path):
    """``nb`` slices of the 4 launched: the block's uniform check leaves the fourth slice's output alone."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    name = "batch_check_early_exit"
    cs = _candidates(_text(name), name)
    b, r, c = 4, 37, 40
    for x in cs:
        assert "return;  // the same for the whole block" in x.new_text
        text = x.new_text.replace(f"{name}(const float *in, float *out, int nb,",
                                  f"{name}(const float *in, float *out, int nb_all,")
        text = text.replace("{\n", "{\n    const int nb = nb_all - 1;\n", 1)
        _check(_outputs(text, name, b, r, c, [(3, 2, b, 32, 8)], tmp_path), _want(b, r, c, b - 1))


def test_a_tile_that_drops_the_batch_offset_is_caught(tmp_path):
    """The check can fail: the store without its slice's base writes every slice over the first."""
    if compiler() is None:
        pytest.skip("no host C++ compiler")
    name = "index_offset"
    (x, *_) = _candidates(_text(name), name)
    broken = x.new_text.replace("out[htam_wb + ", "out[")
    assert broken != x.new_text
    with pytest.raises(AssertionError, match="elements wrong"):
        _check(_outputs(broken, name, 3, 37, 70, [(3, 2, 3, 32, 8)], tmp_path), _want(3, 37, 70, 3))


def test_a_square_slice_base_spells_its_square_as_a_product():
    text = """__global__ void sq(const double *a, double *t, int n) {
    int j = blockIdx.x * 32 + threadIdx.x, i = blockIdx.y * 32 + threadIdx.y;
    if (i < n && j < n) t[blockIdx.z * n * n + j * n + i] = a[blockIdx.z * n * n + i * n + j];
}
void run(const double *a, double *t, int batch, int n) {
    sq<<<dim3((n + 31) / 32, (n + 31) / 32, batch), dim3(32, 32)>>>(a, t, n);
}
"""
    (c, *_) = _candidates(text, "sq")
    assert "const long long htam_rb = ((long long)blockIdx.z) * ((long long)n) * ((long long)n);" in c.new_text


def test_a_batched_transpose_without_both_checks_is_refused_in_one_line():
    """Unchecked, the grid alone decides what each slice moves (its rows could be split over the batch
    dimension); the tile loop moves whole slices, so the step is refused, saying why."""
    text = """__global__ void tb(const float *in, float *out, int R, int C, int K) {
    int c = blockIdx.x * 32 + threadIdx.x, r = blockIdx.y * 32 + threadIdx.y;
    out[blockIdx.z * K + c * R + r] = in[blockIdx.z * K * C + r * C + c];
}
void run(const float *in, float *out, int R, int C) {
    tb<<<dim3(C / 32, 2, R / 64), dim3(32, 32)>>>(in, out, R, C, 64);
}
"""
    (tp,) = facts_of_text(text, "tb").transposes
    assert tp.batch == ("z",)
    model = parse_text(text, "cuda")
    r = registry.propose("cuda.transpose_smem_tile", model, model.kernel("tb"))
    assert not isinstance(r, list)
    assert "without both checks" in r.reason and "\n" not in r.reason


def test_a_thread_dependent_batch_is_not_a_base():
    """``b`` read from ``threadIdx.z`` differs within the block: not a slice's base, so not a transpose."""
    text = KERNELS["index_offset"][0].replace("int b = blockIdx.z;", "int b = blockIdx.z * blockDim.z + threadIdx.z;")
    assert facts_of_text(text.replace("KERNEL", "k"), "k").transposes == ()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_the_batched_tiles_compile_with_nvcc(tmp_path):
    for name in ("base_pointer", "size_t_local", "batch_check_early_exit", "y_batch_row_loop"):
        for k, x in enumerate(_candidates(_text(name), name)):
            assert_nvcc_compiles(x.new_text, tmp_path, f"{name}_{k}.cu")
