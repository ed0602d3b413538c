"""Valid CUDA whose macros or preprocessor branches tree-sitter cannot read as written (qualifier macros,
``#if __CUDA_ARCH__`` branches that split a header or a block): every kernel is found complete, with
positions in the user's raw text. The fixtures compile with ``nvcc -arch=sm_90``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from htam_core.source import load, parse_text
from htam_core.source.analysis.unit import cuda_source
from htam_core.source.preproc import (
    bounds_call_macros,
    branch_view,
    parse_view,
    qualifier_macros,
    qualifier_view,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "preproc"
FILES = ["restrict_macro.cu", "macro_forms.cu", "arch_branches.cu", "namespace_macros.cu"]


def test_restrict_macro_kernels_are_complete_and_read_as_written() -> None:
    m = load(FIX / "restrict_macro.cu")
    ks = {k.name: k for k in m.kernels}
    assert sorted(ks) == ["add", "scale"]
    assert not any(k.incomplete for k in m.kernels)
    assert m.errors == [] and m.problems == []
    data = m.text.encode()
    for k in m.kernels:  # spans are in the raw text, where the macro's name stands
        assert data[k.name_span.start : k.name_span.end].decode() == k.name
        assert all(p.is_restrict for p in k.params if p.is_pointer)
    assert [(p.name, p.type) for p in ks["scale"].params] == [("x", "const float* RESTRICT"),
                                                            ("y", "float* RESTRICT"), ("n", "int")]
    assert (ks["scale"].start_line, ks["scale"].end_line, ks["add"].start_line) == (3, 6, 8)
    assert ks["scale"].launch_sites and ks["scale"].launch_sites[0].line == 15
    unit = cuda_source(m, ks["add"])  # the analysis layer reads the same parameters
    assert not isinstance(unit, str)
    names = []
    for p in unit.params:
        d = p.child_by_field_name("declarator")
        while d is not None and d.type != "identifier":
            d = d.child_by_field_name("declarator")
        names.append(unit.t(d))
    assert names == ["a", "b", "c", "n"]


def test_device_inline_function_like_and_tile_macros() -> None:
    m = load(FIX / "macro_forms.cu")
    assert [(k.name, k.incomplete) for k in m.kernels] == [("copy4", False), ("tiled", False)]
    assert [d.name for d in m.device_functions] == ["sq"]
    assert m.problems == []


def test_arch_branches_that_split_a_header_or_a_block() -> None:
    m = load(FIX / "arch_branches.cu")
    got = [(k.name, k.incomplete, k.start_line, k.end_line, [p.name for p in k.params]) for k in m.kernels]
    assert got == [("k1", False, 2, 11, ["x", "n"]), ("k2", False, 14, 20, ["x", "n", "s"]),
                   ("k3", False, 22, 22, ["x"]), ("k4", False, 24, 30, ["x", "width", "n"])]
    assert m.problems == []


CORPUS = Path("/work/shared/corpus/public/cuda-samples/Samples")


@pytest.mark.skipif(not CORPUS.is_dir(), reason="public corpus absent")
def test_cuda_samples_conditionals_inside_parameter_lists() -> None:
    for rel, names in [("2_Concepts_and_Techniques/FunctionPointers/FunctionPointers_kernels.cu",
                        ["SobelShared", "SobelCopyImage", "SobelTex"]),
                       ("5_Domain_Specific/convolutionFFT2D/convolutionFFT2D.cuh",
                        ["padKernel_kernel", "padDataClampToBorder_kernel", "modulateAndNormalize_kernel",
                         "spPostprocess2D_kernel", "spPreprocess2D_kernel", "spProcess2D_kernel"])]:
        m = load(CORPUS / rel)
        assert [(k.name, k.incomplete) for k in m.kernels] == [(n, False) for n in names], rel


def test_namespace_macros_do_not_unbalance_the_file() -> None:
    m = load(FIX / "namespace_macros.cu")
    assert [(k.name, k.incomplete, k.start_line, k.end_line) for k in m.kernels] == [("fill", False, 6, 8)]
    assert m.problems == [] and m.kernels[0].params[0].is_restrict


def test_views_keep_every_offset_and_line_break() -> None:
    for name in FILES:
        src = (FIX / name).read_bytes()
        view = parse_view(src)
        assert len(view) == len(src)
        assert [i for i, b in enumerate(view) if b == 10] == [i for i, b in enumerate(src) if b == 10]


def test_qualifier_macros_only_take_qualifier_expansions() -> None:
    src = (b"#define R __restrict__\n#define HD __host__ __device__\n#define TILE 32\n#define E\n"
           b"#define F(v) (v)\n#define K extern \"C\" __global__\n#define B __restrict__ // note\n")
    assert qualifier_macros(src) == {"R": "__restrict__", "HD": "__host__ __device__", "E": "", "B": "__restrict__"}
    assert qualifier_view(b"#define RESTRICT __restrict__\nfloat* RESTRICT p;") == \
        b"#define RESTRICT __restrict__\nfloat* restrict p;"
    assert qualifier_view(b"int x;") == b"int x;"


def test_balanced_branches_are_left_for_the_parser() -> None:
    src = b"#ifdef FAST\n__global__ void a(float* x) { x[0] = 1; }\n#else\n__global__ void b(float* x) { x[0] = 2; }\n#endif\n"
    assert branch_view(src) == src
    assert [k.name for k in parse_text(src.decode(), "cuda").kernels] == ["a", "b"]


def test_short_device_macro_still_marks_a_device_function() -> None:
    m = parse_text("#define HD __host__ __device__\nHD float sq(float v) { return v * v; }\n"
                   "__global__ void k(float* x) { x[0] = sq(x[0]); }\n", "cuda")
    assert [d.name for d in m.device_functions] == ["sq"]
    assert [(k.name, k.incomplete) for k in m.kernels] == [("k", False)]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_fixtures_compile_with_nvcc(tmp_path: Path) -> None:
    for name in FILES:
        proc = subprocess.run(["nvcc", "-arch=sm_90", "-ptx", str(FIX / name), "-o", str(tmp_path / "o.ptx")],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr


def test_function_like_launch_bounds_macros_read_as_blanks() -> None:
    src = (b"#define MAXT(v) (((v) <= 1024) ? (v) : 1024)\n"
           b"#define LB_1(t) __launch_bounds__((MAXT((t))))\n#define LB(t) LB_1(t)\n#define SQ(x) ((x) * (x))\n"
           b"__global__ void LB(kThreads)\nk(float* y) { y[0] = SQ(2.f); }\n")
    assert bounds_call_macros(src) == {"LB_1", "LB"}
    view = qualifier_view(src)
    assert len(view) == len(src) and view.count(b"\n") == src.count(b"\n")
    assert b"void " + b" " * len("LB(kThreads)") + b"\nk(float" in view and b"SQ(2.f)" in view
    model = parse_text(src.decode(), "cuda")
    assert [k.name for k in model.kernels] == ["k"] and not model.problems
