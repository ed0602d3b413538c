"""``cuda.vectorize_float4`` on element types spelled through a ``typedef``/``using`` alias that the build's
preprocessor branch makes ``float`` (``real_t`` under ``typedef float real_t;``), and its refusal when the branch
makes the alias another type. The ``gpu`` test builds the file and compares on ragged sizes."""

from __future__ import annotations

import pytest
from gpu_equivalence import call_host, torch_cuda
from transform_helpers import facts_of_text, fixture_path

from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable

TID = "cuda.vectorize_float4"
FILE = "typedef_elementwise.cu"


def test_an_alias_of_float_is_vectorized(cand):
    (c,) = cand(TID, FILE, "scale_add")
    assert c.params == {"vector_width": 4, "pointers": ["out", "a", "b"]}
    text = c.new_text
    assert "const float4 htam_a4 = reinterpret_cast<const float4 *>(a)[htam_v];" in text
    assert "const float4 htam_b4 = reinterpret_cast<const float4 *>(b)[htam_v];" in text
    assert "reinterpret_cast<float4 *>(out)[htam_v] = htam_out4;" in text
    assert "out[idx] = (real_t)(alpha * (float)a[idx] + (float)b[idx]);  // scale and add" in text  # the scalar tail
    assert "scale_add<<<((grid) + 3) / 4, block_size>>>(out, a, b, alpha, n);" in text  # the grid shrinks 4x
    f = facts_of_text(text, "scale_add")
    assert f.pointer("b").element_type == "acc_t" and f.pointer("b").value_type == "float"


def test_comments_in_the_lane_code_are_dropped_not_joined_into_it(cand):
    # regression: the lanes are written on one line, where a `//` comment swallowed the rest (a syntax error)
    (c,) = cand(TID, FILE, "scale_add")
    lane = next(ln for ln in c.new_text.splitlines() if "htam_out4.x = htam_out;" in ln)
    assert "//" not in lane and "scale and add" not in lane
    (lp,) = cand(TID, FILE, "axpy_strided")
    lane = next(ln for ln in lp.new_text.splitlines() if "4.x;" in ln)
    assert "//" not in lane and "alpha *" in lane


def test_an_alias_of_half_is_refused(refuse):
    assert "out points to wide_t (__half), not float" in refuse(TID, FILE, "half_copy")


def test_defining_the_half_switch_refuses_the_kernel(tmp_path):
    path = tmp_path / "h.cu"
    path.write_text("#define USE_HALF\n" + fixture_path(FILE).read_text())
    model = load(str(path))
    res = registry.propose(TID, model, model.kernel("scale_add"))
    assert isinstance(res, NotApplicable) and "out points to real_t (__half), not float" in res.reason


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 7, 4096, 100_003])
def test_equivalence_on_gpu(n, tmp_path, cand):
    torch = torch_cuda()
    g = torch.Generator(device="cuda").manual_seed(n)
    a, b = torch.randn(n, device="cuda", generator=g), torch.randn(n, device="cuda", generator=g)
    outs = []
    for i, text in enumerate([fixture_path(FILE).read_text(), cand(TID, FILE, "scale_add")[0].new_text]):
        out = torch.zeros(n, device="cuda")
        call_host(text, "float *out, const float *a, const float *b, float alpha, int n, int block",
                  "run_scale_add(out, a, b, alpha, n, block)", [out, a, b, 1.5, n, 128], tmp_path, f"ta{i}")
        outs.append(out)
    assert torch.equal(outs[1], outs[0])
    torch.testing.assert_close(outs[0], 1.5 * a + b)
    ys = []
    for i, text in enumerate([fixture_path(FILE).read_text(), cand(TID, FILE, "axpy_strided")[0].new_text]):
        y = b.clone()
        call_host(text, "float *y, const float *x, float alpha, int n", "run_axpy(y, x, alpha, n)",
                  [y, a, 0.5, n], tmp_path, f"ax{i}")
        ys.append(y)
    assert torch.equal(ys[1], ys[0])
