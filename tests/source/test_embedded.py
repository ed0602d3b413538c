"""CUDA held in Python strings (KernelBench style): parsing, mapping back to the file, kernel_at."""

from __future__ import annotations

from htam_core.source import Document, kernel_at, parse_text

NON_RAW = (
    'import torch\n'
    'from torch.utils.cpp_extension import load_inline\n'
    '\n'
    'src = "#include <torch/extension.h>\\n\\t// \\u00e9t\\u00e9 \\x41\\n"\\\n'
    '      "x"  # keeps going\n'
    'cuda_src = "__global__ void scale(float* x, int n) {\\n    int i = threadIdx.x;\\n    if (i < n) x[i] *= 2.0f;\\n}\\n\\n__global__ void other(float* y) { y[0] = 1.0f; }\\nvoid go(float* x, int n) { scale<<<1, 32>>>(x, n); }\\n"\n'
    'mod = load_inline(name="m", cpp_sources="", cuda_sources=cuda_src)\n'
)

RAW = '''import torch

cuda_sources = r"""
// a comment with a backslash \\n that stays two characters in a raw string
__global__ void raw_kernel(const float* __restrict__ x,
                           float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}

void launch(const float* x, float* y, int n) {
    const int threads = 128;
    raw_kernel<<<(n + threads - 1) / threads, threads>>>(x, y, n);
}
"""
'''


def test_raw_string_lines_map_one_to_one() -> None:
    m = parse_text(RAW, "python", "kb.py")
    assert [k.name for k in m.kernels] == ["raw_kernel"]
    k = m.kernels[0]
    assert k.language == "cuda-in-python"
    assert (k.start_line, k.end_line) == (5, 10)
    assert [p.name for p in k.params] == ["x", "y", "n"]
    assert [s.line for s in k.launch_sites] == [14]
    assert k.launch_sites[0].resolved_config["block"] == "128"
    offset = k.attributes["cuda_source_offset"]
    assert RAW.encode()[offset:].startswith(k.attributes["cuda_source"].encode())
    assert RAW.encode()[k.name_span.start : k.name_span.end] == b"raw_kernel"
    assert kernel_at(m, 8, 10).name == "raw_kernel"  # inside the body (0-based line 8)
    assert kernel_at(m, 1, 0) is None


def test_non_raw_string_with_escapes_maps_bytes_back() -> None:
    m = parse_text(NON_RAW, "python")
    ks = {k.name: k for k in m.kernels}
    assert sorted(ks) == ["other", "scale"]
    data = NON_RAW.encode()
    for k in ks.values():
        assert data[k.name_span.start : k.name_span.end] == k.name.encode()
        assert (k.start_line, k.end_line) == (6, 6)  # the whole string sits on line 6
        assert "\n" in k.attributes["cuda_source"]  # decoded: real newlines, not backslash-n
    s = ks["scale"]
    assert [p.name for p in s.params] == ["x", "n"] and s.params[0].written
    assert [site.line for site in s.launch_sites] == [6]
    col = data.splitlines()[5].index(b"x[i] *=")
    assert kernel_at(m, 5, col, "utf-8").name == "scale"
    body = data[s.body_span.start : s.body_span.end]
    assert body.startswith(b"{") and body.endswith(b"}")


def test_strings_without_kernels_are_ignored_and_document_works() -> None:
    doc = Document('x = "no kernels here"\n', "python")
    assert doc.model.kernels == []
    doc.apply_change(None, None, None, None, RAW)
    assert [k.name for k in doc.model.kernels] == ["raw_kernel"]
