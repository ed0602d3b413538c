"""Inferred harnesses keep every recorded call, label sizes after the real dimensions, say each note once, and
never poison a buffer the kernel accumulates into.

Cases from a user trial: a ``__main__`` that checks a launcher on four shapes (one of them square) produced
the same "assert not used" note four times and kept only some of the calls; a ``.cu`` program whose kernel
``atomicAdd``s into a buffer ``main()`` never filled got ``init = "empty"`` (poisoned: NaN + x is NaN).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.harness.infer_cuda import infer_cuda_harness
from htam_core.harness.infer_py import MAX_INTERPRET_SETS, dedupe_notes, infer
from htam_core.source import load
from htam_core.source.analysis import analyze

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "shapes"
#: the (n_rows, n_cols) of the four recorded calls of both fixtures
SHAPES = [(64, 64), (32, 96), (128, 48), (16, 200)]


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("HTAM_INFER", "1")


def _shape(spec: list, sizes: dict) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) else int(sizes[d]) for d in spec)


@pytest.mark.parametrize("name", ["row_scale.py", "row_scale_anon.py"])
def test_every_recorded_call_is_kept_with_labels_that_fit(name: str) -> None:
    h = infer(FIX / name, "row_scale_kernel").harness
    assert h is not None
    x, w = (next(i for i in h.inputs if i.name == n) for n in ("x", "w"))
    recorded = {((r, c), (c,)) for r, c in SHAPES}
    got = {(_shape(x.shape, s), _shape(w.shape, s)) for s in h.sizes}
    assert recorded <= got, (h.sizes, x.shape, w.shape)  # all four, each with labels that give its real shapes
    assert len(h.sizes) == len(SHAPES) + 1  # and the largest scaled up for a GPU, timed first
    assert {(_shape(x.shape, s), _shape(w.shape, s)) for s in h.interpret_sizes} == recorded
    assert len(h.interpret_sizes) <= MAX_INTERPRET_SETS
    assert len(h.notes) == len(set(h.notes))


def test_a_note_repeated_per_call_is_said_once() -> None:
    h = infer(FIX / "row_scale_anon.py", "row_scale_kernel").harness
    assert h is not None and h.uses_oracle
    asserts = [n for n in h.notes if "not used as the reference" in n]
    assert len(asserts) == 1 and asserts[0].endswith("(4 calls)"), h.notes


def test_dedupe_notes_keeps_order_and_distinct_notes() -> None:
    notes = ["assert at line 3 not used as the reference: err 1.5", "b", "assert at line 3 not used as the "
             "reference: err 2.5", "b", "assert at line 7 not used as the reference: err 1.5", "c"]
    assert dedupe_notes(notes) == ["assert at line 3 not used as the reference: err 1.5 (2 calls)", "b",
                                   "assert at line 7 not used as the reference: err 1.5", "c"]


_CU = '''#include <cuda_runtime.h>

__global__ void acc(const float *x, float *out, int n, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) BODY;
}

int main() {
    const int n = 1 << 16, m = 64;
    float *d_x, *d_out;
    cudaMalloc(&d_x, n * sizeof(float));
    cudaMalloc(&d_out, m * sizeof(float));
    acc<<<(n + 255) / 256, 256>>>(d_x, d_out, n, m);
    return 0;
}
'''


@pytest.mark.parametrize(("body", "init"), [
    ("atomicAdd(&out[i % m], x[i])", "zeros"),     # read-modify-write through an atomic
    ("out[i % m] += x[i]", "zeros"),               # read-modify-write through +=
    ("out[i % m] = x[i]", "empty"),                # write-only: poisoned, so an unwritten element fails
])
def test_cuda_accumulator_is_zero_initialized(tmp_path: Path, body: str, init: str) -> None:
    f = tmp_path / "acc.cu"
    f.write_text(_CU.replace("BODY", body))
    h = infer_cuda_harness(f, "acc")
    assert h.outputs == ["out"]
    assert next(i for i in h.inputs if i.name == "out").init == init


def test_triton_atomic_is_read_modify_write(tmp_path: Path) -> None:
    f = tmp_path / "k.py"
    f.write_text('''import triton
import triton.language as tl


@triton.jit
def colsum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr + offs % 8, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
''')
    model = load(str(f))
    modes = {p.name: p.mode for p in analyze(model, model.kernel("colsum")).pointers}
    assert modes["out_ptr"] == "readwrite" and modes["x_ptr"] == "read"
