"""Pointer parameters given the same buffer through a host wrapper of the launch
(:mod:`htam_core.source.analysis.host_wrappers`, read by :func:`~htam_core.source.analysis.launch_aliases.launch_aliases`):
``run(x, x, n)`` of ``void run(float *out, const float *in, int n) { k<<<g, b>>>(in, out, n); }`` in the same file
or in another file, a wrapper called twice (once in place), through a host variable or a cast at the call, two
wrappers deep; distinct buffers, a wrapper's own local that shares a caller's name, another overload and a wrapper
nobody calls claim nothing. Kernels written for these tests."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.host_wrappers import MAX_LEVELS
from htam_core.source.analysis.launch_aliases import aliased_with, launch_aliases
from htam_core.source.api import parse_text

KERNEL = """#include <cuda_runtime.h>
__global__ void axpy(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
void run(float *out, const float *in, int n) { axpy<<<(n + 255) / 256, 256>>>(in, out, 2.0f, n); }
void outer(float *p, float *q, int n) { run(p, q, n); }
"""

ALIASED = {
    "in place": "run(d, d, n);",
    "twice, once in place": "run(d, e, n);\n  run(e, e, n);",
    "host variable": "float *f = d;\n  run(d, f, n);",
    "cast": "run(d, (const float *)d, n);",
    "two wrappers deep": "outer(e, e, n);",
}
DISTINCT = {
    "distinct": "run(d, e, n);",
    "twice, distinct": "run(d, e, n);\n  run(e, d, n);",
    "offset": "run(d, d + n, n);",
    "two wrappers deep, distinct": "outer(d, e, n);",
    "no call": "",
}


def _main(body: str) -> str:
    return f"int main() {{\n  int n = 1024;\n  float *d, *e;\n  cudaMalloc(&d, 4 * n);\n  cudaMalloc(&e, 4 * n);\n  {body}\n  return 0;\n}}\n"


def _aliases(text: str, callers=None):
    model = parse_text(text, "cuda")
    return launch_aliases(model, model.kernel("axpy"), callers)


def _line(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


@pytest.mark.parametrize("spelling", sorted(ALIASED))
def test_an_in_place_call_of_the_wrapper_aliases(spelling: str) -> None:
    text = KERNEL + _main(ALIASED[spelling])
    (al,) = _aliases(text)
    assert (al.first, al.second, al.line) == ("x", "y", _line(text, "axpy<<<"))
    call = "outer(e, e" if "deep" in spelling else ("run(e, e" if "twice" in spelling else "run(d, ")
    assert al.via == f"through {call.split('(')[0]}() called on line {_line(text, call)}"
    assert al.buffer == ("e" if "deep" in spelling or "twice" in spelling else "d")
    assert aliased_with((al,), "x", {"y"}) == al


@pytest.mark.parametrize("spelling", sorted(DISTINCT))
def test_distinct_buffers_through_the_wrapper_do_not_alias(spelling: str) -> None:
    assert _aliases(KERNEL + _main(DISTINCT[spelling])) == ()


def test_a_wrapper_local_is_not_a_callers_buffer_of_the_same_name() -> None:
    text = KERNEL.replace("void outer", "void own(float *out, int n) {\n  float *in;\n  cudaMalloc(&in, 4 * n);\n"
                          "  axpy<<<1, 256>>>(in, out, 2.0f, n);\n}\nvoid outer") + \
        "int main() { float *in; cudaMalloc(&in, 64); own(in, 16); return 0; }\n"
    assert _aliases(text) == ()
    # the check can fail: the same call with a parameter instead of the local aliases
    assert len(_aliases(text.replace("float *in;\n  cudaMalloc(&in, 4 * n);\n  axpy", "axpy").replace(
        "void own(float *out, int n)", "void own(float *out, int n, float *in = 0)").replace(
        "own(in, 16)", "own(in, 16, in)"))) == 1


def test_calls_in_another_file_are_read_through_the_callers() -> None:
    other = b"void run(float *out, const float *in, int n);\nvoid run(float *o);\n" \
            b"int main() { float *buf; cudaMalloc(&buf, 64);\n  run(buf); run(buf, buf, 16); return 0; }\n"
    asked: list[str] = []

    def callers(name: str) -> list[tuple[str, bytes]]:
        asked.append(name)
        return [("/ws/main.cu", other)] if name == "run" else []

    (al,) = _aliases(KERNEL, callers)
    assert (al.first, al.second, al.buffer, al.via) == ("x", "y", "buf", "through run() called at main.cu:4")
    assert "run" in asked
    assert _aliases(KERNEL) == ()  # no caller found: nothing claimed, as before
    assert _aliases(KERNEL, lambda name: [("/ws/main.cu", other.replace(b"buf, buf", b"buf, 0"))]) == ()


def test_nesting_is_bounded() -> None:
    chain = "".join(f"void w{k}(float *p, float *q, int n) {{ {'outer' if k == 0 else f'w{k - 1}'}(p, q, n); }}\n"
                    for k in range(MAX_LEVELS + 1))
    deep = KERNEL + chain
    assert len(_aliases(deep + f"int main() {{ float *d; cudaMalloc(&d, 64); w{MAX_LEVELS - 3}(d, d, 16); }}\n")) == 1
    assert _aliases(deep + f"int main() {{ float *d; cudaMalloc(&d, 64); w{MAX_LEVELS}(d, d, 16); }}\n") == ()


@pytest.mark.parametrize("call", ["run<float>(d, d, n);", "run(d, d, n);"])
def test_a_template_wrapper(call: str) -> None:
    text = KERNEL.replace("void run(float *out, const float *in, int n)",
                          "template <typename T>\nvoid run(T *out, const T *in, int n)").replace(
        "void outer(float *p, float *q, int n) { run(p, q, n); }\n", "") + _main(call)
    (al,) = _aliases(text)
    assert (al.first, al.second, al.buffer) == ("x", "y", "d")
    assert _aliases(text.replace(call, call.replace("d, d", "d, e"))) == ()
