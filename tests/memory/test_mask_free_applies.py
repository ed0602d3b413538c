"""``mask_free_interior`` (the ``EVEN_K`` specialization) applies to a Triton kernel whose tile loop over K holds
masked loads, read off the analysis layer (:meth:`KernelFacts.masked_tile_loops`), never to an elementwise
kernel with masks and no K loop (the case: the bundled vector add was offered ``EVEN_K`` mask-free loads)."""

from __future__ import annotations

from pathlib import Path

from htam_core.memory import load_knowledge
from htam_core.memory.facts import compute_facts
from htam_core.source import load, parse_text
from htam_core.source.analysis import analyze

ROOT = Path(__file__).resolve().parents[2]

_ROWSUM = '''
import triton
import triton.language as tl

@triton.jit
def row_sum(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
'''


def _applies(model, name: str):
    k = model.kernel(name)
    facts = compute_facts(k.features, k.language, None, k, model)
    return facts["masked_tile_loop"], load_knowledge().strategy("mask_free_interior").applies.evaluate(facts)


def test_the_vector_add_has_masks_but_no_k_loop():
    model = load(str(ROOT / "examples" / "vector_add.py"))
    assert analyze(model, model.kernel("add_kernel")).masked_tile_loops() == ()
    assert _applies(model, "add_kernel") == (False, False)


def test_a_matmul_k_loop_with_masked_loads_applies():
    model = load(str(ROOT / "tests" / "fixtures" / "profile" / "matmul_too_much_shared.py"))
    (lp,) = analyze(model, model.kernel("matmul_kernel")).masked_tile_loops()
    assert lp.var == "k"
    assert _applies(model, "matmul_kernel") == (True, True)


def test_any_masked_tile_loop_counts_and_cuda_is_false():
    model = parse_text(_ROWSUM, "python", "rowsum.py")
    assert _applies(model, "row_sum") == (True, True)
    cuda = parse_text("__global__ void k(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] = 0; }",
                      "cuda", "k.cu")
    k = cuda.kernel("k")
    assert compute_facts(k.features, k.language, None, k, cuda)["masked_tile_loop"] is False
