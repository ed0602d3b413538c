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


def test_an_alias_of_half_takes_eight_element_vectors_of_the_alias(cand):
    (c,) = cand(TID, FILE, "half_copy")
    assert "constexpr int htam_V = 8;" in c.new_text  # the alias resolves to __half: 2 bytes
    assert "struct alignas(htam_V * sizeof(wide_t)) htam_in_t { wide_t v[htam_V]; };" in c.new_text


def test_defining_the_half_switch_changes_the_width(tmp_path):
    path = tmp_path / "h.cu"
    path.write_text("#define USE_HALF\n" + fixture_path(FILE).read_text())
    model = load(str(path))
    res = registry.propose(TID, model, model.kernel("scale_add"))
    assert not isinstance(res, NotApplicable) and "constexpr int htam_V = 8;" in res[0].new_text
    plain = load(str(fixture_path(FILE)))
    (c,) = registry.propose(TID, plain, plain.kernel("scale_add"))
    assert "float4" in c.new_text  # real_t is float in this build


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


# ---------------------------------------------------------------- cooperative-groups lanes
CG = "cg_rows.cu"


def test_a_warp_loop_written_with_cooperative_groups_takes_float4(cand):
    (c,) = cand(TID, CG, "scale_rows_cg")
    text = c.new_text
    assert "for (int htam_v4 = warp.thread_rank(); htam_v4 < htam_n4; htam_v4 += warp.size())" in text
    assert "float4 htam_q14 = reinterpret_cast<const float4 *>(x + (0))[htam_v4];" in text
    assert "for (int i = htam_tail + warp.thread_rank(); i < cols; i += warp.size())" in text


def test_a_tile_lane_in_a_2d_block_is_refused(refuse):
    # the linear rank mod 16 is not proven to partition the row in a 2-D block: refused, not guessed
    assert "the loop on line 27 is not a loop that splits a range among its threads" in refuse(TID, CG, "scale_rows_tile16_2d")


@pytest.mark.gpu
@pytest.mark.parametrize(("cols", "block"), [(64, 128), (77, 64), (1000, 256), (3, 32)])
def test_cooperative_groups_equivalence_on_gpu(cols, block, tmp_path, cand):
    torch = torch_cuda()
    rows = 301
    g = torch.Generator(device="cuda").manual_seed(cols)
    x, scale = torch.randn(rows, cols, device="cuda", generator=g), torch.randn(cols, device="cuda", generator=g)
    outs = []
    for i, text in enumerate([fixture_path(CG).read_text(), cand(TID, CG, "scale_rows_cg")[0].new_text]):
        out = torch.zeros(rows, cols, device="cuda")
        call_host(text, "float *out, const float *inp, const float *scale, int rows, int cols, int block",
                  "scale_rows(out, inp, scale, rows, cols, block)", [out, x, scale, rows, cols, block], tmp_path,
                  f"cg{i}")
        outs.append(out)
    assert torch.equal(outs[1], outs[0]) and torch.equal(outs[0], x * scale)


def test_value_uses_invariant_loads_and_a_pointer_declared_in_the_loop(cand):
    (c,) = cand(TID, CG, "onehot_grad_rows")
    t = c.new_text
    # lane c of float4 index htam_v4 is element 4 * htam_v4 + c
    for lane in range(4):
        assert f"float hot = ((int)(htam_v4 * 4 + {lane})) == targets[row] ? 1.0f : 0.0f;" in t
    assert "(htam_q1 - hot) * dscale[row];" in t  # the invariant load stays scalar
    # the row pointer declared in the loop is used through its initializer outside it
    assert "reinterpret_cast<float4 *>((grad + row * cols) + (0))[htam_v4] = htam_q04;" in t
    assert "float hot = j == targets[row] ? 1.0f : 0.0f;" in t  # the scalar tail is the original body


@pytest.mark.parametrize(("kernel", "needle"), [
    ("moving_pointer_rows", "the pointer of `o[j]` is set inside the loop on line 62 from values that change there"),
    ("reads_what_it_writes", "`buf[row * cols]` in the loop on line 73 is not a stride-1 access in j"),
    # regression: a jump in the body used to be copied into each lane, where it skipped the other lanes
    ("skips_zeros", "the loop on line 92 has `continue;`, which in a float4 step would skip the other lanes"),
])
def test_loop_refusals(refuse, kernel, needle):
    assert needle in refuse(TID, CG, kernel)


@pytest.mark.gpu
@pytest.mark.parametrize("cols", [3, 64, 77, 1000])
def test_onehot_equivalence_on_gpu(cols, tmp_path, cand):
    torch = torch_cuda()
    rows = 203
    g = torch.Generator(device="cuda").manual_seed(cols)
    prob, dscale = torch.rand(rows, cols, device="cuda", generator=g), torch.rand(rows, device="cuda", generator=g)
    targets = torch.randint(0, cols, (rows,), device="cuda", generator=g, dtype=torch.int32)
    outs = []
    for i, text in enumerate([fixture_path(CG).read_text(), cand(TID, CG, "onehot_grad_rows")[0].new_text]):
        grad = torch.zeros(rows, cols, device="cuda")
        call_host(text, "float *grad, const float *prob, const float *dscale, const int *targets, int rows, int cols",
                  "onehot_grad(grad, prob, dscale, targets, rows, cols)", [grad, prob, dscale, targets, rows, cols],
                  tmp_path, f"oh{i}")
        outs.append(grad)
    hot = torch.nn.functional.one_hot(targets.long(), cols).float()
    assert torch.equal(outs[1], outs[0]) and torch.equal(outs[0], (prob - hot) * dscale[:, None])
