"""An elementwise kernel launched from another file (``c[idx] = a[idx] + b[idx]`` under ``if (idx < N)``, no launch
in its own file) gets the launch-independent forms instead of a refusal: the grid-stride loop alone and the float4
body with its scalar tail, both correct for any grid (and the float4 one for any alignment, checked at run time);
their titles say so. The forms with a launch site keep resizing the grid."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from transform_helpers import assert_nvcc_compiles, candidates, facts_of_text

from htam_core.source import parse_text
from htam_core.transforms import registry

FILE = "elementwise_no_launch.cu"
KERNEL = "vec_add_extern"


def test_grid_stride_is_launch_independent():
    (c,) = candidates("cuda.grid_stride", FILE, KERNEL)
    assert "launch-independent: correct for any grid" in c.description
    assert c.title_note == "launch not found: correct for any grid"
    assert "gridDim.x" in c.new_text and "htam_sm_grid" not in c.new_text
    facts = facts_of_text(c.new_text, KERNEL)
    assert any(lp.grid_stride for lp in facts.loops)


def test_float4_is_launch_independent():
    (c,) = candidates("cuda.vectorize_float4", FILE, KERNEL)
    assert "launch-independent: correct for any grid" in c.description
    assert c.title_note == "launch not found: correct for any grid"
    text = c.new_text
    assert "float4" in text and "& 15ull" in text  # the alignment check
    facts = facts_of_text(text, KERNEL)
    assert sum(lp.grid_stride for lp in facts.loops) == 2  # the vector loop and the scalar tail, any grid


def test_with_a_launch_site_the_grid_is_still_sized():
    text = (Path(__file__).resolve().parents[1] / "fixtures" / "transforms" / FILE).read_text()
    text += ("\nvoid run(const float *a, const float *b, float *c, int N) {\n"
             "    vec_add_extern<<<(N + 255) / 256, 256>>>(a, b, c, N);\n}\n")
    model = parse_text(text, "cuda")
    res = registry.propose("cuda.grid_stride", model, model.kernel(KERNEL))
    assert len(res) == 2 and all("launch-independent" not in c.description for c in res)
    res = registry.propose("cuda.vectorize_float4", model, model.kernel(KERNEL))
    assert "the grid shrinks 4x" in res[0].description


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("tid", ["cuda.grid_stride", "cuda.vectorize_float4"])
def test_launch_independent_forms_compile(tid, tmp_path):
    (c,) = candidates(tid, FILE, KERNEL)
    assert_nvcc_compiles(c.new_text, tmp_path)
