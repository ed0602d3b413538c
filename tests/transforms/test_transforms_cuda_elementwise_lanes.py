"""``cuda.vectorize_float4``'s elementwise form where the index is used beyond ``P[idx]``: every lane of a vector
evaluates those uses (``idx / cols``, ``idx % C``, ``idx % cols == 0``) with its own element's index, and read-only
tables read at other addresses (``scale[r]``, ``wte[tok * C + c]``) stay per-lane reads. The int8 -> ``__half``
dequantize and a token + position embedding look-alike run on the CPU (:mod:`cpu_emulation`) against the original
at sizes that are not multiples of the width and on pointers off their vector alignment; each candidate compiles
with nvcc.
"""

from __future__ import annotations

import shutil

import pytest

from tests.support.nvcc_check import assert_compiles

TID = "cuda.vectorize_float4"
FILE = "elementwise_lanes.cu"

#: Host stand-ins for the device half type and its conversions (the emulation compiles for the CPU).
HALF = """struct __half { _Float16 h; };
typedef __half floatX;
static __half __float2half(float f) { return __half{(_Float16)f}; }
static float __half2float(__half v) { return (float)v.h; }
"""


@pytest.mark.parametrize("kernel,width,float4,per_lane", [
    ("dequant_int8", 8, False, ["r = idx / cols"]),
    ("dequant_int8_f32", 4, False, ["out[i] = scale[i / cols] * q[i]"]),
    ("embed_add", 4, True, ["bt = idx / C", "c = idx % C"]),
    ("embed_add_half", 8, False, ["c = idx % C", "t = (idx / C) % T", "* wte_row = wte + tokens[idx / C] * C"]),
    ("zero_first_col", 4, True, ["idx % cols == 0"]),
    ("embed_add_btc", 4, True, ["bt = idx / C", "c = idx % C"]),
    ("col_ramp_unsigned", 4, True, ["y[idx] = x[idx] + (float)(idx / cols)"]),
])
def test_the_index_is_evaluated_per_lane(cand, kernel, width, float4, per_lane):
    (c,) = cand(TID, FILE, kernel)
    assert c.params["vector_width"] == width and c.params["per_lane"] == per_lane
    assert ("float4" in c.new_text) == float4
    name = "i" if kernel == "dequant_int8_f32" else "idx"
    lane = "htam_v * 4 + 3" if float4 else "htam_v * htam_V + htam_l"
    typ = "unsigned" if kernel == "col_ramp_unsigned" else "int"
    assert f"const {typ} {name} = ({typ})({lane});" in c.new_text
    assert f"the grid shrinks {width}x" in c.description and f"with its own {name}" in c.description


def test_only_pointers_at_the_index_are_vectors(cand):
    """The tables read at a row (``wte``, ``wpe``, ``tokens``) are neither loaded as vectors nor checked for
    alignment: only ``out`` is."""
    (c,) = cand(TID, FILE, "embed_add")
    assert c.params["pointers"] == ["out"]
    assert "reinterpret_cast<unsigned long long>(out)) & 15ull" in c.new_text
    assert "reinterpret_cast<const float4 *>(wte)" not in c.new_text


def test_a_store_through_pointer_arithmetic_on_the_split_index_is_a_vector_store(cand):
    """``*out_btc`` with ``out_btc = out + b * T * C + t * C + c`` (``b``, ``t``, ``c`` split from ``idx`` by ``/``
    and ``%``) addresses ``out[idx]``: it becomes the lane's element; the tables stay per-lane reads."""
    (c,) = cand(TID, FILE, "embed_add_btc")
    assert c.params["pointers"] == ["out"] and "htam_out = *wte_tc + *wpe_tc;" in c.new_text
    assert "reinterpret_cast<float4 *>(out)[htam_v] = htam_out4;" in c.new_text


def test_an_auto_index_is_declared_by_the_type_of_its_value(cand):
    """``auto idx = blockIdx.x * blockDim.x + threadIdx.x``: a cast cannot name ``auto``; each lane and the tail
    declare the index as ``decltype`` of its value."""
    (c,) = cand(TID, FILE, "col_ramp_auto")
    typ = "decltype(blockIdx.x * blockDim.x + threadIdx.x)"
    assert f"const {typ} idx = ({typ})(htam_v * 4 + 3);" in c.new_text and f"const {typ} idx = ({typ})htam_j;" \
        in c.new_text and "(auto)" not in c.new_text


def test_the_user_file_is_vectorized_with_its_launch(cand):
    (c,) = cand(TID, "dequant_int8_user.cu", "dequant_int8")
    assert c.params["vector_width"] == 8 and "dequant_int8<<<((blocks) + 7) / 8, threads>>>" in c.new_text


@pytest.mark.parametrize("kernel,words", [
    ("row_flags", "flag is written or escapes at an address other than flag[idx]"),
    ("shift_left", "y is written as y[idx] and also used at another address"),
    ("carry_over", "writes acc, declared outside it"),
    ("embed_add_transposed", "out is written or escapes at an address other than out[idx]"),
])
def test_uses_without_a_per_lane_form_are_not_offered(refuse, kernel, words):
    assert words in refuse(TID, FILE, kernel)


DEQ_MAIN = """
int main() {{
    const int rows = {rows}, cols = {cols}, n = rows * cols;
    std::vector<int8_t> qv(n + 1);
    std::vector<float> sv(n + 1);
    std::vector<{out_t}> ov(n + 1);
    for (int i = 0; i <= n; ++i) qv[i] = (int8_t)((i * 37) % 255 - 127);
    for (int r = 0; r <= n; ++r) sv[r] = 0.01f * (float)(r + 1);
    HTAM_LAUNCH({grid}, 1, 64, 1, {call});
    for (int i = 0; i < n; ++i) std::printf("%.9g\\n", {show});
    return 0;
}}
"""

EMB_MAIN = """
int main() {{
    const int B = {rows}, T = 5, C = {cols}, V = 11, n = B * T * C;
    std::vector<int> tok(B * T);
    std::vector<float> wte(V * C), wpe(T * C), ov(n + 1, -1.0f);
    for (int i = 0; i < B * T; ++i) tok[i] = (i * 7 + 3) % V;
    for (int i = 0; i < V * C; ++i) wte[i] = 0.5f * (float)((i * 13) % 17);
    for (int i = 0; i < T * C; ++i) wpe[i] = 0.25f * (float)((i * 5) % 9) - 1.0f;
    HTAM_LAUNCH({grid}, 1, 64, 1, {call});
    for (int i = 0; i < n; ++i) std::printf("%.9g\\n", (double)ov[{off} + i]);
    return 0;
}}
"""

CASES = {
    "dequant_int8": (DEQ_MAIN, "__half", "dequant_int8(qv.data() + {off}, sv.data(), ov.data() + {off}, rows, cols)",
                     "(double)__half2float(ov[{off} + i])", lambda r, c: r * c),
    "dequant_int8_f32": (DEQ_MAIN, "float", "dequant_int8_f32(qv.data() + {off}, sv.data(), ov.data() + {off}, n, "
                         "cols)", "(double)ov[{off} + i]", lambda r, c: r * c),
    "embed_add": (EMB_MAIN, "", "embed_add(ov.data() + {off}, tok.data(), wte.data(), wpe.data(), B, T, C)", "",
                  lambda r, c: r * 5 * c),
    "col_ramp_auto": (DEQ_MAIN, "float", "col_ramp_auto(sv.data() + {off}, ov.data() + {off}, n, cols)",
                      "(double)ov[{off} + i]", lambda r, c: r * c),
    "col_ramp_unsigned": (DEQ_MAIN, "float", "col_ramp_unsigned(sv.data() + {off}, ov.data() + {off}, n, cols)",
                          "(double)ov[{off} + i]", lambda r, c: r * c),
    "embed_add_btc": (EMB_MAIN, "", "embed_add_btc(ov.data() + {off}, tok.data(), wte.data(), wpe.data(), B, T, C)",
                      "", lambda r, c: r * 5 * c),
}


def _emulate(text: str, kernel: str, rows: int, cols: int, off: int, grid: int, tmp) -> list[float]:
    """Run ``kernel`` of ``text`` on the CPU over ``grid`` blocks of 64 threads and return its outputs."""
    from cpu_emulation import run_main

    main, out_t, call, show, _n = CASES[kernel]
    program = main.format(rows=rows, cols=cols, out_t=out_t, grid=grid, call=call.format(off=off),
                          show=show.format(off=off), off=off)
    tmp.mkdir()
    return run_main(text, kernel, program, tmp, prelude=HALF)


@pytest.mark.parametrize("rows,cols,off", [(7, 13, 0), (3, 16, 0), (1, 5, 0), (7, 13, 1)])
@pytest.mark.parametrize("kernel", sorted(CASES))
def test_same_numbers_on_the_cpu(cand, tmp_path, kernel, rows, cols, off):
    """Ragged sizes run the scalar tail; an offset of one element misaligns the vectors, so the scalar loop does
    everything; a grid of 2 blocks of 64 threads strides over the rest (the body is a grid-stride loop)."""
    from cpu_emulation import compiler
    from transform_helpers import fixture_path

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    (c,) = cand(TID, FILE, kernel)
    n = CASES[kernel][4](rows, cols)
    want = _emulate(fixture_path(FILE).read_text(), kernel, rows, cols, off, (n + 63) // 64, tmp_path / "a")
    got = _emulate(c.new_text, kernel, rows, cols, off, 2, tmp_path / "b")
    assert got == want and len(got) == n and len(set(got)) > 2


def test_a_lane_without_its_own_index_is_caught(cand, tmp_path):
    """The check can fail: lanes that all take the vector's first index read the wrong rows of the scale."""
    from cpu_emulation import compiler
    from transform_helpers import fixture_path

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    (c,) = cand(TID, FILE, "dequant_int8")
    broken = c.new_text.replace("(int)(htam_v * htam_V + htam_l)", "(int)(htam_v * htam_V)")
    assert broken != c.new_text
    want = _emulate(fixture_path(FILE).read_text(), "dequant_int8", 7, 13, 0, 2, tmp_path / "a")
    assert _emulate(broken, "dequant_int8", 7, 13, 0, 2, tmp_path / "b") != want


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("file,kernel", [(FILE, k) for k in ("dequant_int8", "dequant_int8_f32", "embed_add",
                                                              "embed_add_half", "zero_first_col",
                                                              "embed_add_btc", "col_ramp_auto", "col_ramp_unsigned")]
                         + [("dequant_int8_user.cu", "dequant_int8")])
def test_compiles(cand, tmp_path, file, kernel):
    (c,) = cand(TID, file, kernel)
    assert_compiles(c.new_text, tmp=tmp_path, name="cand.cu")
