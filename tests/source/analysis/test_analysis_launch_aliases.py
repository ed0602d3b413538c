"""Pointer parameters given the same buffer at a launch (:mod:`htam_core.source.analysis.launch_aliases`): the same
name, through casts, parentheses or ``&p[0]``, through a host variable given one value (a declaration or an
assignment, chained), a struct member; distinct names, an offset into the buffer, a name given two values and a
kernel with no launch claim nothing."""

from __future__ import annotations

import pytest

from htam_core.source.analysis.launch_aliases import aliased_with, launch_aliases
from htam_core.source.api import parse_text

KERNEL = """__global__ void axpy(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""

ALIASED = {
    "same": "axpy<<<g, 256>>>(d_x, d_x, 2.0f, n);",
    "casts": "axpy<<<g, 256>>>((const float *)d_x, (d_x), 2.0f, n);",
    "named_cast": "axpy<<<g, 256>>>(reinterpret_cast<const float *>(d_x), &d_x[0], 2.0f, n);",
    "host_var": "float *d_out = d_x;\n  axpy<<<g, 256>>>(d_x, d_out, 2.0f, n);",
    "chain": "float *out;\n  out = d_x;\n  float *in = out;\n  axpy<<<g, 256>>>(in, out, 2.0f, n);",
    "member": "axpy<<<g, 256>>>(buf.data, buf.data, 2.0f, n);",
}
DISTINCT = {
    "names": "axpy<<<g, 256>>>(d_x, d_z, 2.0f, n);",
    "offset": "float *d_y = d_x + n;\n  axpy<<<g, 256>>>(d_x, d_y, 2.0f, n);",
    "two_values": "float *o = d_x;\n  o = d_z;\n  axpy<<<g, 256>>>(d_x, o, 2.0f, n);",
    "no_launch": "",
}


def _launch_line(text: str) -> int:
    return text[:text.index("axpy<<<")].count("\n") + 1


def _aliases(host: str):
    text = KERNEL + ("struct Buf { float *data; };\nvoid run(float *d_x, float *d_z, int n, int g, Buf buf) {\n  "
                     f"{host}\n}}\n")
    model = parse_text(text, "cuda")
    return launch_aliases(model, model.kernel("axpy")), text


@pytest.mark.parametrize("spelling", sorted(ALIASED))
def test_the_same_buffer_passed_twice_aliases(spelling):
    (al,), text = _aliases(ALIASED[spelling])
    assert (al.first, al.second, al.line) == ("x", "y", _launch_line(text))
    assert al.buffer == ("buf.data" if spelling == "member" else "d_x")
    assert aliased_with((al,), "x", {"y"}) == al and aliased_with((al,), "x", {"z"}) is None


@pytest.mark.parametrize("spelling", sorted(DISTINCT))
def test_distinct_buffers_do_not_alias(spelling):
    assert _aliases(DISTINCT[spelling])[0] == ()


def test_a_launch_from_main_and_scalars_passed_twice():
    text = KERNEL.replace("float a, int n", "int a, int n") + """int main() {
  float *d; int n = 1024;
  cudaMalloc(&d, n * sizeof(float));
  axpy<<<(n + 255) / 256, 256>>>(d, d, n, n);
  return 0;
}
"""
    model = parse_text(text, "cuda")
    assert [(a.first, a.second, a.line) for a in launch_aliases(model, model.kernel("axpy"))] == [
        ("x", "y", _launch_line(text))]


@pytest.mark.parametrize("null", ["0", "nullptr", "NULL"])
def test_null_pointers_are_no_buffer(null):
    assert _aliases(f"float *a = {null}, *b = {null};\n  axpy<<<1, 256>>>(a, b, 2.0f, 0);")[0] == ()
    assert _aliases(f"axpy<<<1, 256>>>({null}, {null}, 2.0f, 0);")[0] == ()
