"""``cuda.vectorize_float4``'s elementwise form on elements other than float: ``__half`` and ``__nv_bfloat16``
take 8 elements per 16-byte vector, ``double`` 2, a ``uint8_t`` input read beside a float output 4 (the widest
element sets the width), each pointer through its own ``alignas`` struct, the grid divided by the width.

The double and uint8 kernels run on the CPU (:mod:`cpu_emulation`) against the original at sizes that are not a
multiple of the width and with a misaligned pointer (the scalar loop then does everything); the compile test
(``test_transforms_cuda_compile``) builds every candidate of the fixture with nvcc.
"""

from __future__ import annotations

import pytest

TID = "cuda.vectorize_float4"
FILE = "elementwise_typed.cu"


@pytest.mark.parametrize("kernel,width,elem,launch", [
    ("axpby_half", 8, "__half", "axpby_half<<<(((n + 255) / 256) + 7) / 8, 256>>>"),
    ("bias_relu_bf16", 8, "__nv_bfloat16", "bias_relu_bf16<<<(((n + 127) / 128) + 7) / 8, 128>>>"),
    ("scale_f64", 2, "double", "scale_f64<<<(((n + 255) / 256) + 1) / 2, 256>>>"),
    ("widen_u8", 4, "uint8_t", "widen_u8<<<(((n + 255) / 256) + 3) / 4, 256>>>"),
])
def test_the_width_follows_the_widest_element(cand, kernel, width, elem, launch):
    (c,) = cand(TID, FILE, kernel)
    assert f"constexpr int htam_V = {width};" in c.new_text and c.params["vector_width"] == width
    assert f"{{ {elem} v[htam_V]; }};" in c.new_text
    assert launch in c.new_text
    assert f"the grid shrinks {width}x" in c.description and "float4" not in c.description


def test_float_keeps_the_float4_form(cand):
    (c,) = cand(TID, "elementwise_variants.cu", "sigmoid_poly")
    assert "float4" in c.new_text and "htam_V" not in c.new_text and "16-byte aligned" in c.description


MAIN = """
#include <cstdint>
#include <vector>
#include <cstdio>
int main() {{
    const int n = {n};
    std::vector<{src_t}> in(n + 1);
    std::vector<{dst_t}> out(n + 1, 0);
    for (int i = 0; i <= n; ++i) in[i] = ({src_t})((i * 37) % 251);
    const {src_t} *src = in.data() + {off};
    {dst_t} *dst = out.data() + {off};
    HTAM_LAUNCH({grid}, 1, 64, 1, {call});
    for (int i = 0; i < n; ++i) std::printf("%.17g\\n", (double)dst[i]);
    return 0;
}}
"""


@pytest.mark.parametrize("n,off", [(1000, 0), (1003, 0), (7, 0), (1003, 1)])
@pytest.mark.parametrize("kernel,src_t,dst_t,call", [
    ("scale_f64", "double", "double", "scale_f64(dst, src, 3.0, n)"),
    ("widen_u8", "uint8_t", "float", "widen_u8(dst, src, n)"),
])
def test_same_numbers_on_the_cpu(cand, tmp_path, n, off, kernel, src_t, dst_t, call):
    """Ragged sizes run the scalar tail; an offset of one element misaligns the vectors, so the scalar loop does
    everything; a grid of 3 blocks of 64 threads strides over the rest (the body is a grid-stride loop)."""
    from cpu_emulation import compiler, run_main

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    from transform_helpers import fixture_path

    (c,) = cand(TID, FILE, kernel)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    main = MAIN.format(n=n, src_t=src_t, dst_t=dst_t, off=off, grid=3, call=call)
    want = run_main(fixture_path(FILE).read_text(), kernel, main.replace("HTAM_LAUNCH(3,", f"HTAM_LAUNCH({(n + 63) // 64},"), tmp_path / "a")
    got = run_main(c.new_text, kernel, main, tmp_path / "b")
    assert got == want and len(got) == n


def test_a_broken_lane_loop_is_caught(cand, tmp_path):
    """The check can fail: a vector loop that moves one element fewer per vector leaves elements unwritten."""
    from cpu_emulation import compiler, run_main

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    from transform_helpers import fixture_path

    (c,) = cand(TID, FILE, "scale_f64")
    broken = c.new_text.replace("htam_l < htam_V;", "htam_l < htam_V - 1;")
    assert broken != c.new_text
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    main = MAIN.format(n=1000, src_t="double", dst_t="double", off=0, grid=3, call="scale_f64(dst, src, 3.0, n)")
    want = run_main(fixture_path(FILE).read_text(), "scale_f64", main.replace("HTAM_LAUNCH(3,", "HTAM_LAUNCH(16,"),
                    tmp_path / "a")
    assert run_main(broken, "scale_f64", main, tmp_path / "b") != want


@pytest.mark.gpu
@pytest.mark.parametrize("n,off", [(1 << 20, 0), (100_003, 0), (100_003, 1)])
def test_half_and_bf16_equal_on_gpu(cand, tmp_path, n, off):
    """The 8-element ``__half`` and ``__nv_bfloat16`` forms give the start's outputs bit for bit (the same
    element operations), on a ragged size and on pointers one element off 16-byte alignment."""
    from gpu_equivalence import call_host, torch_cuda
    from transform_helpers import fixture_path

    torch = torch_cuda()
    g = torch.Generator(device="cuda").manual_seed(n + off)
    x = torch.randn(n + 1, device="cuda", generator=g).half()
    y0 = torch.randn(n + 1, device="cuda", generator=g).half()
    xb, bb = x.bfloat16(), y0.bfloat16()
    ys, os = [], []
    for i, text in enumerate([fixture_path(FILE).read_text(), cand(TID, FILE, "axpby_half")[0].new_text]):
        y = y0.clone()
        call_host(text, "const __half *x, __half *y, float a, float b, int n",
                  "axpby_half<<<(((n + 255) / 256) + 7) / 8, 256>>>(x, y, a, b, n)" if i else
                  "axpby_half<<<(n + 255) / 256, 256>>>(x, y, a, b, n)", [x[off:], y[off:], 2.0, 0.5, n], tmp_path,
                  f"h{i}")
        ys.append(y)
    for i, text in enumerate([fixture_path(FILE).read_text(), cand(TID, FILE, "bias_relu_bf16")[0].new_text]):
        o = torch.zeros(n + 1, device="cuda", dtype=torch.bfloat16)
        call_host(text, "__nv_bfloat16 *o, const __nv_bfloat16 *in, const __nv_bfloat16 *bias, int n",
                  "bias_relu_bf16<<<(n + 127) / 128, 128>>>(o, in, bias, (long long)n)", [o[off:], xb[off:],
                  bb[off:], n], tmp_path, f"b{i}")
        os.append(o)
    assert torch.equal(ys[1], ys[0]) and not torch.equal(ys[0], y0)
    assert torch.equal(os[1], os[0]) and bool((os[0][off:] >= 0).all())
