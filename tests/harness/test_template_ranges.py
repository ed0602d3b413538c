"""The ``htam.toml`` template written from a CSR kernel's signature (no ``main()``, no launcher): the row pointer is
an offsets array from 0 to the length of the nonzeros and the column indices lie inside ``x``
(:mod:`htam_core.harness.template_ranges`); the table parses back and the inputs drawn from it on the CPU keep every
row inside the nonzeros. A kernel without such uses keeps its entries. The roles are read from the analysis layer
and each init chosen from the template's shapes at the sizes' values before an entry is written (an unknown
length, an index stride that is not a constant, a placeholder target)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from htam_core.harness.spec import parse_kernel_table
from htam_core.harness.template import write_template
from htam_core.harness.template_ranges import integer_inits, integer_roles
from htam_core.source.api import parse_text

CSR = {
    "thread_row": "__global__ void spmv(const {t} *rp, const int *ci, const float *vals, const float *x, float *y,"
                  " int m) {{\n  int r = blockIdx.x * blockDim.x + threadIdx.x;\n  if (r < m) {{\n    float s = 0;\n"
                  "    for ({t} j = rp[r]; j < rp[r + 1]; ++j) s += vals[j] * x[ci[j]];\n    y[r] = s;\n  }}\n}}\n",
    "warp_row": "__global__ void spmv(const {t} *rp, const int *ci, const float *vals, const float *x, float *y, int m)"
                " {{\n  int w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;\n"
                "  if (w >= m) return;\n  {t} b = rp[w], e = rp[w + 1];\n  float s = 0;\n"
                "  for ({t} j = b + lane; j < e; j += 32) s += vals[j] * x[ci[j]];\n"
                "  s += __shfl_down_sync(0xffffffffu, s, 16);\n  if (lane == 0) y[w] = s;\n}}\n",
}


def _table(tmp_path: Path, text: str, kernel: str):
    p = tmp_path / "k.cu"
    p.write_text(text)
    model = parse_text(text, "cuda", str(p))
    toml = write_template(model, model.kernel(kernel))
    table = tomllib.loads(toml)["kernel"][kernel]
    table.pop("reference")  # the user's part: checked against the starting kernel instead
    table["oracle"] = True
    return toml, parse_kernel_table(table, kernel=kernel, spec_path=tmp_path / "htam.toml", file_path=p)


@pytest.mark.parametrize("which", sorted(CSR))
@pytest.mark.parametrize("itype", ["int", "long long"])
def test_the_template_of_a_csr_kernel_draws_offsets_and_indices(tmp_path, which, itype):
    toml, h = _table(tmp_path, CSR[which].format(t=itype), "spmv")
    spec = {i.name: i for i in h.inputs}
    assert spec["rp"].init == "offsets" and spec["rp"].low == 0
    assert "an offsets array" in toml and "indices into x" in toml
    assert (spec["ci"].init, spec["ci"].low) == ("randint", 0)
    torch = pytest.importorskip("torch")
    from htam_core.harness.runner import _make_spec_inputs

    got = dict(zip(spec, _make_spec_inputs(h, h.sizes[0], 3, 1.0, "cpu"), strict=True))
    rp, ci = got["rp"], got["ci"]
    assert int(rp[0]) == 0 and int(rp[-1]) == got["vals"].numel() == spec["rp"].high
    assert bool((rp[1:] >= rp[:-1]).all())
    assert int(ci.min()) >= 0 and int(ci.max()) < got["x"].numel() == spec["ci"].high
    assert int(got["m"]) + 1 <= rp.numel()  # every row the launch reaches has its two offsets
    assert torch.is_tensor(rp)


def test_a_kernel_without_offsets_or_indices_keeps_its_entries(tmp_path):
    toml, h = _table(tmp_path, "__global__ void cnt(const int *v, int *out, int n) {\n"
                               "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = v[i] > 0;\n}\n",
                     "cnt")
    assert "offsets" not in toml and {i.name: i.init for i in h.inputs}["v"] != "offsets"


def test_the_roles_and_the_inits_chosen_from_the_shapes():
    model = parse_text(CSR["thread_row"].format(t="int"), "cuda")
    roles = integer_roles(model, model.kernel("spmv"))
    assert [(r.pointer, r.kind, r.targets) for r in roles] == [
        ("rp", "offsets", ("vals", "ci")), ("ci", "indices", ("x",))]
    shapes = {"vals": ["NNZ"], "ci": ["NNZ"], "x": ["N", "2"]}
    inits = integer_inits(roles, shapes, {"NNZ": 5000, "N": 300})
    assert inits["rp"].fields == 'init = "offsets", low = 0, high = 5000' and "loop on line 5" in inits["rp"].note
    assert inits["ci"].fields == 'init = "randint", low = 0, high = 600' and "TODO" not in inits["ci"].note
    assert "TODO: its shape is a placeholder" in integer_inits(roles, shapes, {"NNZ": 5000, "N": 300}, {"x"})[
        "ci"].note
    # the shortest target bounds the offsets; an unknown length gives no init
    assert integer_inits(roles, {**shapes, "ci": ["M"]}, {"NNZ": 5000, "N": 300, "M": 70})["rp"].fields.endswith(
        "high = 70")
    assert integer_inits(roles, {"vals": ["NNZ"]}, {}) == {}


def test_an_index_stride_that_is_not_a_constant_draws_no_range():
    text = ("__global__ void emb(const int *ids, const float *table, float *out, int n, int c) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  if (i < n) for (int k = 0; k < c; ++k) out[i * c + k] = table[ids[i] * STRIDE + k];\n}\n")
    for stride, high in (("4", 250), ("c", None)):
        model = parse_text(text.replace("STRIDE", stride), "cuda")
        inits = integer_inits(integer_roles(model, model.kernel("emb")), {"table": ["1000"]}, {})
        assert (inits["ids"].fields.endswith(f"high = {high}") if high else "ids" not in inits), stride


def test_an_index_inside_a_row_of_unknown_length_says_the_range_is_not_proved(tmp_path):
    text = ("__global__ void pick(const float* x, const int* idx, float* out, int B, int V) {\n"
            "  int r = blockIdx.x * blockDim.x + threadIdx.x;\n  if (r >= B) return;\n"
            "  out[r] = x[r * V + idx[r]];\n}\n")
    toml, _h = _table(tmp_path, text, "pick")
    line = next(ln for ln in toml.splitlines() if 'name = "idx"' in ln)
    assert "cannot bound the index's other terms (`r * V + idx[r]`)" in line, line
