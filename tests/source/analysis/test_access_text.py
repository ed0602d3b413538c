"""A message that names an access names it as written (:attr:`Access.shown`): ``p[0]`` where ``p = in + ...``,
not the alias-followed ``in[0]`` the user cannot find in the file."""

from __future__ import annotations

import pytest

from htam_core.source import parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

_POOL = """__global__ void pool(const float* in, float* out, int H, int W) {{
  int q = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (q >= W / 2 || r >= H / 2) return;
  const float* {p} = in + (size_t)(2 * r) * W + 2 * q;
  out[r * (W / 2) + q] = fmaxf({p}[0], {p}[1]);
}}
"""


@pytest.mark.parametrize("p", ["p", "src_row"])
def test_accesses_keep_their_written_text(p):
    m = parse_text(_POOL.format(p=p), "cuda")
    facts = analyze(m, m.kernel("pool"))
    reads = [a for a in facts.global_accesses() if a.pointer == "in"]
    assert sorted(a.shown for a in reads) == [f"{p}[0]", f"{p}[1]"]


def test_a_refusal_names_the_access_as_written():
    m = parse_text(_POOL.format(p="p"), "cuda")
    res = registry.propose("cuda.vectorize_float4", m, m.kernel("pool"))
    assert isinstance(res, NotApplicable)
    assert "`p[0]` moves by 2 elements" in res.reason and "in[0]" not in res.reason, res.reason
