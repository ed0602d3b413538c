"""Pointer parameters given the same buffer at a launch (:mod:`htam_core.source.analysis.launch_aliases`): the same
name, through casts, parentheses, ``&p[0]`` or ``p + 0``, through a host variable's reaching value (a declaration
or an assignment, chained), a struct member; a value given on some paths only (a branch, a loop, a conditional)
may alias and is claimed, not certain; distinct names, an offset into the buffer, a name whose nearest definition
is another buffer, a value given after the launch and a kernel with no launch claim nothing."""

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
    "const_cast": "axpy<<<g, 256>>>(d_x, const_cast<float *>(static_cast<const float *>(d_x)), 2.0f, n);",
    "plus_zero": "axpy<<<g, 256>>>(d_x + 0, &(d_x)[0u], 2.0f, n);",
    "cast_var": "const float *in = reinterpret_cast<const float *>(&d_x[0]);\n  axpy<<<g, 256>>>(in, d_x, 2.0f, n);",
    "pointer_const": "float *const out = (d_x);\n  axpy<<<g, 256>>>(d_x, out, 2.0f, n);",
    "nearest": "float *o = d_z;\n  o = d_x;\n  axpy<<<g, 256>>>(d_x, o, 2.0f, n);",
    "member_copy": "Buf b2 = buf;\n  axpy<<<g, 256>>>(buf.data, b2.data, 2.0f, n);",
}
#: A value given on some paths only: the argument MAY be the written buffer.
MAY_ALIAS = {
    "if_branch": "float *o = d_z;\n  if (n > 4) o = d_x;\n  axpy<<<g, 256>>>(d_x, o, 2.0f, n);",
    "if_else": "float *o;\n  if (n > 4) { o = d_x; } else { o = d_z; }\n  axpy<<<g, 256>>>(o, d_x, 2.0f, n);",
    "loop": "float *o = d_z;\n  for (int k = 0; k < 2; ++k) {\n    axpy<<<g, 256>>>(d_x, o, 2.0f, n);\n"
            "    o = d_x;\n  }",
    "conditional": "axpy<<<g, 256>>>(n > 4 ? d_x : d_z, d_x, 2.0f, n);",
    "member_set": "if (n > 4) buf.data = d_x;\n  axpy<<<g, 256>>>(buf.data, d_x, 2.0f, n);",
}
DISTINCT = {
    "names": "axpy<<<g, 256>>>(d_x, d_z, 2.0f, n);",
    "offset": "float *d_y = d_x + n;\n  axpy<<<g, 256>>>(d_x, d_y, 2.0f, n);",
    "two_values": "float *o = d_x;\n  o = d_z;\n  axpy<<<g, 256>>>(d_x, o, 2.0f, n);",
    "after_launch": "float *o = d_z;\n  axpy<<<g, 256>>>(d_x, o, 2.0f, n);\n  o = d_x;",
    "if_other": "float *o = d_z;\n  if (n > 4) o = d_z + n;\n  axpy<<<g, 256>>>(d_x, o, 2.0f, n);",
    "members": "axpy<<<g, 256>>>(buf.data, buf.next, 2.0f, n);",
    "no_launch": "",
}


def _launch_line(text: str) -> int:
    return text[:text.index("axpy<<<")].count("\n") + 1


def _aliases(host: str):
    text = KERNEL + ("struct Buf { float *data; float *next; };\nvoid run(float *d_x, float *d_z, int n, int g, Buf buf) {\n  "
                     f"{host}\n}}\n")
    model = parse_text(text, "cuda")
    return launch_aliases(model, model.kernel("axpy")), text


@pytest.mark.parametrize("spelling", sorted(ALIASED))
def test_the_same_buffer_passed_twice_aliases(spelling):
    (al,), text = _aliases(ALIASED[spelling])
    assert (al.first, al.second, al.line) == ("x", "y", _launch_line(text))
    assert al.buffer == ("buf.data" if spelling.startswith("member") else "d_x") and al.certain
    assert aliased_with((al,), "x", {"y"}) == al and aliased_with((al,), "x", {"z"}) is None


@pytest.mark.parametrize("spelling", sorted(MAY_ALIAS))
def test_a_buffer_given_on_some_paths_may_alias(spelling):
    (al,), text = _aliases(MAY_ALIAS[spelling])
    assert (al.first, al.second, al.line, al.buffer) == ("x", "y", _launch_line(text), "d_x")
    assert not al.certain


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
