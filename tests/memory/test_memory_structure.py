"""v9: the kernel's structure block in the state the memory stores and compares (docs/MEMORY-LOG.md, v9).

The block holds pattern flags read off the analysis layer's facts (stencil, reduction, matmul, transpose, row
loop, shared memory, vector loads, language ...). Records older than v9 lack it and compare on the profile state
alone, so an old store ranks exactly as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.memory import Outcome, Ranker, load_knowledge, open_store, state_from_profile, state_of_kernel
from htam_core.memory.facts import compute_facts
from htam_core.memory.features import STATE_KEYS, STRUCT_KEYS, has_structure, structure_from_facts
from htam_core.memory.ranker import RankerConfig
from htam_core.source.api import parse_text
from htam_core.types.profile import Bottleneck, Profile

KB = load_knowledge()
PROFILE = Profile("k", bottleneck=Bottleneck("latency-bound"))
STATE = state_from_profile(PROFILE)

STENCIL_CU = """
__global__ void jacobi(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 1 && i < n - 1) out[i] = 0.5f * (in[i - 1] + in[i + 1]);
}
"""
WINDOW_CU = """
__global__ void window(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < 7; k++) acc += in[i + k];
    out[i] = acc;
}
"""
ELEMENTWISE_CU = """
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""
STENCIL_TRITON = '''
import triton
import triton.language as tl

@triton.jit
def stencil3(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(x_ptr + offs - 1, mask=offs >= 1, other=0.0)
    right = tl.load(x_ptr + offs + 1, mask=offs + 1 < n, other=0.0)
    tl.store(y_ptr + offs, left + right, mask=offs < n)
'''
TWO_PASS_TRITON = '''
import triton
import triton.language as tl

@triton.jit
def rms(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
        acc += x * x
    r = tl.sqrt(tl.sum(acc) / n)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
        tl.store(y_ptr + row * n + cols, x / r, mask=cols < n)
'''


def _kernel(text: str):
    lang = "python" if "triton" in text else "cuda"
    return parse_text(text, lang).kernels[0]


def _facts(text: str) -> dict:
    k = _kernel(text)
    return compute_facts(k.features, k.language, None, k)


@pytest.mark.parametrize(("text", "expected"), [(STENCIL_CU, True), (WINDOW_CU, True), (ELEMENTWISE_CU, False),
                                                (STENCIL_TRITON, True), (TWO_PASS_TRITON, False)])
def test_stencil_like_from_the_analysis_layer(text: str, expected: bool) -> None:
    assert _facts(text)["stencil_like"] is expected


def test_stencil_like_is_unknown_without_the_kernel() -> None:
    k = _kernel(STENCIL_CU)
    assert compute_facts(k.features, k.language)["stencil_like"] is None


def test_the_stored_state_carries_the_structure_block() -> None:
    state = state_of_kernel(PROFILE, _kernel(STENCIL_CU))
    assert set(state) == set(STATE_KEYS) | set(STRUCT_KEYS)
    assert {k: state[k] for k in STATE_KEYS} == STATE  # the profile part is unchanged
    assert has_structure(state) and state["stencil_like"] == 1.0 and state["lang=cuda"] == 1.0
    assert state["lang=triton"] == 0.0 and state["matmul_like"] == 0.0
    assert not has_structure(STATE)  # a state before v9 (and an old record) has no block


def test_unknown_facts_encode_as_zero() -> None:
    k = _kernel(STENCIL_CU)
    block = structure_from_facts(compute_facts(k.features, k.language))  # no kernel: pattern facts unknown
    assert block["struct"] == 1.0 and block["stencil_like"] == 0.0 and block["matmul_like"] == 0.0


@pytest.fixture
def store(tmp_path: Path):
    st = open_store(tmp_path / "m.sqlite3")
    yield st
    st.close()


def _record(store, state, speedup: float, n: int, fp: str) -> None:
    for i in range(n):
        status = "win" if speedup > 1.02 else "loss"
        store.record([], state, "launch_bounds", Outcome(speedup, True, True, status), f"{fp}{i}", "H200")


def _gain(store, structure: bool, text: str = STENCIL_CU) -> float:
    k = _kernel(text)
    steps = Ranker(KB, store, config=RankerConfig(structure=structure)).rank(
        STATE, [], k.features, k.language, PROFILE, top=60, kernel=k)
    return next(s for s in steps if s.strategy == "launch_bounds").expected_gain


def test_structure_separates_kernels_of_one_bottleneck_class(store) -> None:
    """``launch_bounds`` paid on stencils and lost on elementwise kernels of the same profile state: with the
    structure block a stencil attends to the stencils (a gain), without it to both alike (a loss)."""
    _record(store, state_of_kernel(PROFILE, _kernel(STENCIL_CU)), 1.4, 6, "st")
    _record(store, state_of_kernel(PROFILE, _kernel(ELEMENTWISE_CU)), 0.6, 6, "ew")
    assert _gain(store, structure=True) > 0.0
    assert _gain(store, structure=False) < 0.0
    assert _gain(store, structure=True, text=ELEMENTWISE_CU) < _gain(store, structure=False, text=ELEMENTWISE_CU)


def test_records_before_v9_compare_on_the_state_alone(store) -> None:
    """An old store (states without the block) ranks exactly as it did before v9."""
    _record(store, STATE, 1.4, 4, "old")
    _record(store, state_from_profile(Profile("k", bottleneck=Bottleneck("memory-bound"))), 0.6, 4, "older")
    k = _kernel(STENCIL_CU)

    def ranking(structure: bool):
        steps = Ranker(KB, store, config=RankerConfig(structure=structure)).rank(
            STATE, [], k.features, k.language, PROFILE, top=60, kernel=k)
        return [(s.strategy, round(s.score, 12)) for s in steps]

    assert ranking(True) == ranking(False)
