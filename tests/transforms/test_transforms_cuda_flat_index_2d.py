"""``cuda.flat_index_2d``: a matmul whose row and column come from one flattened 1-D thread index (``row = idx / N;
col = idx % N`` on a 1-D launch) gets a 2-D thread index (column on x, row on y), the bounds check ``row < M && col
< N`` in the user's own names, and a 2-D launch, here or in the file that launches it; the shared-memory and
register tiles are then made after it as one step. Many spellings of the split, the bounds check and the width;
refused in one line where the form is not proved. Kernels written for these tests."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from htam_core.source import load, parse_text
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable, apply_edits
from htam_core.transforms.registry import diff_edits
from tests.support.nvcc_check import assert_compiles
from tests.support.workspace_fixtures import workspace

REMAP, SMEM, REG = "cuda.flat_index_2d", "cuda.smem_tiling_matmul", "cuda.register_tile_matmul"

_LOOP = ("    float acc = 0.f;\n    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * NCOL + col];\n"
         "    C[row * NCOL + col] = acc;\n")


def _mm(head: str, body: str, width: str, launch: str, sig: str = "int M", tparams: str = "") -> str:
    """A file with kernel ``mm`` (``head``: the split and the check; ``width``: how the body spells the row length)
    and a host function launching it (``launch``)."""
    return ("#include <cuda_runtime.h>\n#define K 64\n#define NC 64\nconstexpr int WIDTH = 48;\n"
            f"{tparams}__global__ void mm(const float *A, const float *B, float *C, {sig})\n{{\n{head}"
            + body.replace("NCOL", width) + "}\n\n"
            f"void run(const float *A, const float *B, float *C, int M, int N)\n{{\n    {launch}\n}}\n")


_IDX = "    int idx = blockIdx.x * blockDim.x + threadIdx.x;\n"
_GUARDED = "    if (row < M) {\n" + _LOOP.replace("    ", "        ") + "    }\n"
SPELLINGS = {
    "div_mod_macro_early_return": _mm(_IDX + "    int row = idx / NC, col = idx % NC;\n    if (row >= M) return;\n",
                                      _LOOP, "NC", "mm<<<(M * NC + 255) / 256, 256>>>(A, B, C, M);"),
    "param_guarded_body": _mm(_IDX + "    int row = idx / N;\n    int col = idx % N;\n", _GUARDED, "N",
                              "mm<<<(M * N + 255) / 256, 256>>>(A, B, C, M, N);", "int M, int N"),
    "minus_column_unsigned": _mm("    unsigned g = threadIdx.x + blockIdx.x * blockDim.x;\n    unsigned row = g / N;\n"
                                 "    unsigned col = g - row * N;\n    if (row >= M) return;\n", _LOOP, "N",
                                 "mm<<<(M * N + 127) / 128, 128>>>(A, B, C, M, N);", "unsigned M, unsigned N"),
    "size_t_index_flat_bound": _mm("    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
                                   "    if (i >= M * N) return;\n    size_t row = i / N, col = i % N;\n",
                                   _LOOP, "N", "mm<<<(M * N + 255) / 256, 256>>>(A, B, C, M, N);",
                                   "size_t M, size_t N"),
    "long_long_both_bounds_constexpr": _mm(
        "    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    long long row = t / WIDTH;\n    long long col = t % WIDTH;\n", "    if (row < M && col < WIDTH) {\n"
        + _LOOP.replace("    ", "        ") + "    }\n", "WIDTH",
        "mm<<<(M * WIDTH + 255) / 256, 256>>>(A, B, C, M);"),
    "template_width_flat_guard": _mm(_IDX + "    int row = idx / W;\n    int col = idx % W;\n",
                                     "    if (idx < M * W) {\n" + _LOOP.replace("    ", "        ") + "    }\n",
                                     "W", "mm<32><<<(M * 32 + 255) / 256, 256>>>(A, B, C, M);",
                                     tparams="template <int W>\n"),
    "index_read_again": _mm(_IDX + "    int row = idx / NC;\n    int col = idx % NC;\n    if (row >= M) return;\n",
                            _LOOP.replace("C[row * NCOL + col]", "C[idx]"), "NC",
                            "mm<<<(M * NC + 255) / 256, 256>>>(A, B, C, M);"),
}


def _model(text: str, name: str = "flat.cu"):
    model = parse_text(text, "cuda", f"/tmp/{name}")
    return model, model.kernel("mm")


def _nvcc(text: str, tmp_path: Path, name: str = "cand.cu") -> None:
    assert_compiles(text, flags=("-x", "cu"), tmp=tmp_path, name=name)


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_the_remap_gives_a_2d_index_check_and_launch(name):
    model, k = _model(SPELLINGS[name])
    res = registry.propose(REMAP, model, k)
    assert isinstance(res, list), res.reason
    new = res[0].new_text
    assert re.search(r"\bcol = (\(\w[\w ]*\))?blockIdx\.x \* blockDim\.x \+ threadIdx\.x;", new), new
    assert re.search(r"\brow = (\(\w[\w ]*\))?blockIdx\.y \* blockDim\.y \+ threadIdx\.y;", new), new
    body = new.split("void run")[0]
    assert ("row < " in body and "col < " in body) or ("row >= " in body and "col >= " in body), body
    assert "dim3(16, 16)" in new and "+ 15) / 16" in new
    assert "/ N" not in body.split("{", 1)[1].split("acc")[0] and "% " not in body  # the split is gone


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_the_tiles_are_made_after_the_remap(name):
    model, k = _model(SPELLINGS[name])
    for tid in (SMEM, REG):
        res = registry.propose(tid, model, k)
        if tid == REG and isinstance(res, NotApplicable):
            continue  # the register tile needs more than the remap on some spellings (its own refusal)
        assert isinstance(res, list), res.reason
        assert res[0].params.get("after") == REMAP and "then" in res[0].description
        assert "__shared__" in res[0].new_text and "dim3(" in res[0].new_text


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_the_remap_and_the_tile_compile(name, tmp_path):
    model, k = _model(SPELLINGS[name])
    _nvcc(model.text, tmp_path, "orig.cu")
    for tid in (REMAP, SMEM):
        res = registry.propose(tid, model, k)
        assert isinstance(res, list), res.reason
        _nvcc(res[0].new_text, tmp_path, f"{tid}.cu")


REFUSED = {
    # the output's row stride is LD, not the split's N: the split is not the output's own
    "other_stride": (_mm(_IDX + "    int row = idx / N;\n    int col = idx % N;\n    if (row >= M) return;\n",
                         _LOOP, "LD", "mm<<<(M * N + 255) / 256, 256>>>(A, B, C, M, N, N);",
                         "int M, int N, int LD"), "row stride"),
    "two_outputs": (_mm(_IDX + "    int row = idx / NC, col = idx % NC;\n    if (row >= M) return;\n",
                        _LOOP + "    C[row * NC + col + M * NC] = acc;\n", "NC",
                        "mm<<<(M * NC + 255) / 256, 256>>>(A, B, C, M);"), "not one output"),
    "grid_stride": (_mm("    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < M * NC; "
                        "idx += blockDim.x * gridDim.x) {\n        int row = idx / NC, col = idx % NC;\n"
                        "        float acc = 0.f;\n        for (int k = 0; k < K; ++k) acc += A[row * K + k] * "
                        "B[k * NC + col];\n        C[row * NC + col] = acc;\n    }\n", "", "NC",
                        "mm<<<120, 256>>>(A, B, C, M);"), "grid-stride"),
    "floor_grid": (_mm(_IDX + "    int row = idx / NC, col = idx % NC;\n    if (row >= M) return;\n", _LOOP, "NC",
                       "mm<<<M * NC / 256, 256>>>(A, B, C, M);"), "ceil-division"),
    "other_guard_term": (_mm(_IDX + "    int row = idx / NC, col = idx % NC;\n    if (row >= M || A[0] < 0) return;\n",
                             _LOOP, "NC", "mm<<<(M * NC + 255) / 256, 256>>>(A, B, C, M);"), "bounds check"),
    "inline_split": (_mm(_IDX + "    if (idx >= M * NC) return;\n", _LOOP.replace("row", "(idx / NC)")
                         .replace("col", "(idx % NC)"), "NC", "mm<<<(M * NC + 255) / 256, 256>>>(A, B, C, M);"),
                     "named local"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_in_one_line_where_the_form_is_not_proved(name):
    text, words = REFUSED[name]
    model, k = _model(text)
    res = registry.propose(REMAP, model, k)
    assert isinstance(res, NotApplicable), res[0].new_text
    assert words in res.reason and "\n" not in res.reason, res.reason
    tile = registry.propose(SMEM, model, k)
    assert isinstance(tile, NotApplicable) and "\n" not in tile.reason


def test_no_launch_found_is_refused_in_one_line(tmp_path):
    path = workspace(tmp_path, {"k.cu": SPELLINGS["div_mod_macro_early_return"].split("void run")[0]}) / "k.cu"
    model = load(path)
    k = model.kernel("mm")
    res = registry.propose(REMAP, model, k)
    assert isinstance(res, NotApplicable) and "no launch" in res.reason and "\n" not in res.reason


KERNEL_CU = SPELLINGS["param_guarded_body"].split("void run")[0]
MAIN_CU = ('#include <cuda_runtime.h>\n__global__ void mm(const float *A, const float *B, float *C, int M, int N);\n'
           "void run(const float *A, const float *B, float *C, int M, int N)\n{\n"
           "    mm<<<(M * N + 255) / 256, 256>>>(A, B, C, M, N);\n}\n")


def test_the_launch_in_another_file_is_edited_too(tmp_path):
    ws = workspace(tmp_path, {"k.cu": KERNEL_CU, "main.cu": MAIN_CU})
    model = load(ws / "k.cu")
    for tid in (REMAP, SMEM):
        res = registry.propose(tid, model, model.kernel("mm"))
        assert isinstance(res, list), res.reason
        (path, edits), = res[0].file_edits.items()
        launcher = apply_edits((ws / "main.cu").read_text(), edits)
        assert "dim3(16, 16)" in launcher and "dim3(((N) + 15) / 16, ((M) + 15) / 16)" in launcher, launcher
        assert "blockIdx.y" in res[0].new_text


@pytest.mark.parametrize("old,new", [("a\nb\nc\n", "a\nB\nc\n"), ("x\n", "x\ny\n"), ("é\nb\n", "é\n"),
                                     ("a\nb", "z\na\nb")])
def test_diff_edits_rebuild_the_new_text(old, new):
    assert apply_edits(old, diff_edits(old, new)) == new


#: Per spelling run on the CPU: (row length W, whether the kernel takes N).
EMULATED = {"div_mod_macro_early_return": (64, False), "param_guarded_body": (20, True),
            "minus_column_unsigned": (20, True), "size_t_index_flat_bound": (20, True),
            "long_long_both_bounds_constexpr": (48, False), "index_read_again": (64, False)}


def _emulate(text: str, width: int, takes_n: bool, two_d: bool, tmp: Path) -> list[float]:
    """C of kernel ``mm`` in ``text`` run one thread at a time on the CPU (M = 5 rows, W columns), the launch 1-D as
    the original's or 2-D as the remap's; C has a tail of sentinels, so a write past M * W shows."""
    from cpu_emulation import run_main

    args = "A.data(), B.data(), C.data(), M" + (", N" if takes_n else "")
    launch = ("HTAM_LAUNCH((N + 15) / 16, (M + 15) / 16, 16, 16, mm(" if two_d
              else "HTAM_LAUNCH((M * N + 255) / 256, 1, 256, 1, mm(") + args + "));"
    main_cpp = f"""
int main() {{
    const int M = 5, N = {width};
    std::vector<float> A(M * K), B(K * N), C(M * N + 40, 1234.5f);
    for (size_t i = 0; i < A.size(); ++i) A[i] = 0.25f * (float)((i * 7) % 13) - 1.0f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = 0.5f * (float)((i * 3) % 11) - 2.0f;
    {launch}
    for (float v : C) std::printf("%.9g\\n", v);
    return 0;
}}
"""
    return run_main(text, "mm", main_cpp, tmp, prelude="#define K 64\n#define NC 64\nconstexpr int WIDTH = 48;\n")


@pytest.mark.parametrize("name", list(EMULATED))
def test_the_remapped_kernel_computes_what_the_flat_one_did(name, tmp_path):
    from cpu_emulation import compiler

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    model, k = _model(SPELLINGS[name])
    res = registry.propose(REMAP, model, k)
    assert isinstance(res, list), res.reason
    width, takes_n = EMULATED[name]
    before = _emulate(model.text, width, takes_n, False, tmp_path)
    after = _emulate(res[0].new_text, width, takes_n, True, tmp_path)
    assert before == after and before[5 * width:] == [1234.5] * 40 and 1234.5 not in before[: 5 * width]


@pytest.mark.parametrize("name", ["div_mod_macro_early_return", "param_guarded_body", "size_t_index_flat_bound"])
def test_the_tile_made_after_the_remap_computes_what_the_flat_kernel_did(name, tmp_path):
    from cpu_emulation import compiler, run_block_main

    if compiler() is None:
        pytest.skip("no host C++ compiler")
    model, k = _model(SPELLINGS[name])
    res = registry.propose(SMEM, model, k)
    assert isinstance(res, list), res.reason
    width, takes_n = EMULATED[name]
    before = _emulate(model.text, width, takes_n, False, tmp_path)
    tile = res[0].params["tile"]
    args = "A.data(), B.data(), C.data(), M" + (", N" if takes_n else "")
    main_cpp = f"""
int main() {{
    const int M = 5, N = {width};
    std::vector<float> A(M * K), B(K * N), C(M * N + 40, 1234.5f);
    for (size_t i = 0; i < A.size(); ++i) A[i] = 0.25f * (float)((i * 7) % 13) - 1.0f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = 0.5f * (float)((i * 3) % 11) - 2.0f;
    htam_launch2((N + {tile - 1}) / {tile}, (M + {tile - 1}) / {tile}, {tile}, {tile}, [&] {{ mm({args}); }});
    for (float v : C) std::printf("%.9g\\n", v);
    return 0;
}}
"""
    after = run_block_main(res[0].new_text, "mm", main_cpp, tmp_path,
                           prelude="#include <vector>\n#define K 64\n#define NC 64\nconstexpr int WIDTH = 48;\n")
    assert after == pytest.approx(before, rel=1e-5)
