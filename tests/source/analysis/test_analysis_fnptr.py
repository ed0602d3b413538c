"""Launches through function pointers (``kernel = &k; kernel<<<g, b>>>``) and tables of kernels
(``ops[k]<<<g, b>>>``): each is a launch site of every kernel the pointer is given, with its configuration; a
launch that runs other kernels too is a shared launch (htam_core.source.analysis.fnptr, unit.shared_launches)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.source import load, parse_text
from htam_core.source.analysis.launch import launch_calls
from htam_core.source.analysis.syntax import parse_cuda
from htam_core.source.analysis.unit import shared_launches

TRANSPOSE = (Path(__file__).resolve().parents[2] / "fixtures" / "sample_projects" / "transpose" / "Samples"
             / "transpose" / "transpose.cu")

KERNELS = """
__global__ void scale(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
__global__ void shift(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
typedef void (*Op)(const float *, float *, int);
"""


def _host(body: str) -> str:
    return KERNELS + "void run(const float *x, float *y, int n) {\n  int threads = 256;\n" \
        "  int blocks = (n + threads - 1) / threads;\n" + body + "}\n"


def _sites(text: str) -> dict[str, list[tuple[int, str, tuple[str, ...]]]]:
    model = parse_text(text, "cuda", "k.cu")
    return {k.name: [(s.line, s.config["block"], s.pointer_kernels) for s in k.launch_sites] for k in model.kernels}


def test_the_samples_pointer_assigned_in_a_switch_launches_each_kernel() -> None:
    model = load(TRANSPOSE)
    by_name = {k.name: k for k in model.kernels}
    naive = by_name["transposeNaive"]
    assert [s.line for s in naive.launch_sites] == [84, 86]
    site = naive.launch_sites[0]
    assert site.kernel_name == "transposeNaive"
    assert site.config["grid"] == "grid" and site.config["block"] == "threads"
    assert set(site.pointer_kernels) == {"copySharedMem", "transposeNaive", "transposeCoalesced",
                                         "transposeNoBankConflicts"}
    assert all(len(k.launch_sites) == 2 for k in model.kernels)


@pytest.mark.parametrize("body,expect", [
    ("  Op ops[] = {&scale, shift};\n  for (int k = 0; k < 2; ++k) ops[k]<<<blocks, threads>>>(x, y, n);\n",
     {"scale": ("scale", "shift"), "shift": ("scale", "shift")}),
    ("  void (*ops[2])(const float *, float *, int) = {scale, &shift};\n  ops[1]<<<blocks, threads>>>(x, y, n);\n",
     {"scale": ("scale", "shift"), "shift": ("scale", "shift")}),
    ("  Op f = &scale;\n  f<<<blocks, threads>>>(x, y, n);\n", {"scale": ("scale",), "shift": None}),
    ("  void (*f)(const float *, float *, int);\n  f = shift;\n  (*f)<<<blocks, threads>>>(x, y, n);\n",
     {"scale": None, "shift": ("shift",)}),
], ids=["table", "array-declarator", "typedef-init", "deref-call"])
def test_a_table_or_a_pointer_gives_its_kernels_the_launch(body: str, expect: dict) -> None:
    sites = _sites(_host(body))
    for name, kernels in expect.items():
        if kernels is None:
            assert sites[name] == []
        else:
            assert [(b, p) for _, b, p in sites[name]] == [("threads", kernels)]


def test_a_pointer_from_elsewhere_names_no_kernel() -> None:
    text = _host("  Op f = pick(n);\n  f<<<blocks, threads>>>(x, y, n);\n")
    assert _sites(text) == {"scale": [], "shift": []}


def test_a_file_scope_table_counts() -> None:
    text = KERNELS + "static Op table[] = {scale, shift};\n" + \
        "void run(const float *x, float *y, int n) { table[0]<<<(n + 255) / 256, 256>>>(x, y, n); }\n"
    assert _sites(text)["shift"] == [(12, "256", ("scale", "shift"))]


def test_launch_calls_reads_the_pointer_launch_for_each_kernel() -> None:
    src = _host("  Op ops[] = {&scale, shift};\n  ops[0]<<<blocks, threads>>>(x, y, n);\n").encode()
    root = parse_cuda(src).root_node
    for name in ("scale", "shift"):
        calls = launch_calls(root, src, name)
        assert [c.pointer_kernels for c in calls] == [("scale", "shift")]
    assert launch_calls(root, src, "other") == []


def test_a_shared_launch_is_a_fact_and_a_lone_pointer_is_not() -> None:
    model = parse_text(_host("  Op ops[] = {&scale, shift};\n  ops[0]<<<blocks, threads>>>(x, y, n);\n"),
                       "cuda", "k.cu")
    scale = next(k for k in model.kernels if k.name == "scale")
    shared = shared_launches(model, scale)
    assert [(s.pointer, s.kernels) for s in shared] == [("ops[0]", ("scale", "shift"))]
    start, end = shared[0].host
    assert model.text.encode()[start:end].startswith(b"void run(")
    lone = parse_text(_host("  Op f = &scale;\n  f<<<blocks, threads>>>(x, y, n);\n"), "cuda", "k.cu")
    assert shared_launches(lone, lone.kernels[0]) == ()
