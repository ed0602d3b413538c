"""v13: the kernel's own records at the node being ranked (``RankerConfig.own_parent``, docs/MEMORY-LOG.md v13).

Other kernels say ``cuda_block_size`` pays (x1.5 on four kernels); this kernel has already tried variants of it
from this very node, without a win. From the second such record on, the kernel's own outcomes are pooled into the
step's value, so one more variant of it falls in the ranking; one own record, another node's records, another
kernel's records, ``no-local`` and ``own_parent=False`` change nothing.
"""

from __future__ import annotations

import math

import pytest

from htam_core.memory import Outcome, Ranker, load_knowledge, open_store
from htam_core.memory.ranker import RankerConfig
from tests.memory.test_memory_ranker import ELEMENTWISE, PROFILE, STATE, _by_id

FP = "proj/k.cu::k"
STEP = "cuda_block_size"


def _fill(store, own: int, own_prefix: list[str], own_fp: str = FP) -> None:
    for i in range(4):
        store.record([], STATE, STEP, Outcome(1.5, True, True, "win"), f"other{i}.cu::k", "H200")
    for _ in range(own):
        store.record(list(own_prefix), STATE, STEP, Outcome(0.6, True, True, "loss"), own_fp, "H200")


def _local(store, prefix: list[str], fingerprint: str | None, **kw) -> float:
    ranker = Ranker(load_knowledge(), store, config=RankerConfig(**kw.pop("config", {})), **kw)
    steps = _by_id(ranker.rank(STATE, prefix, ELEMENTWISE, "cuda", PROFILE, top=40, fingerprint=fingerprint))
    return steps[STEP].parts["local_transition"]


@pytest.fixture
def store(tmp_path):
    st = open_store(tmp_path / "m.sqlite3")
    yield st
    st.close()


def test_two_failed_variants_here_lower_the_step(store):
    _fill(store, own=3, own_prefix=[])
    without = _local(store, [], None)
    with_own = _local(store, [], FP)
    assert without > 0.1  # the other kernels' gains (and the own losses, as three similar records)
    # pooled with the two own records beyond the first: (2 * ln 0.6 + 2 * L) / 4
    assert with_own == pytest.approx(0.5 * without + 0.5 * math.log(0.6), abs=1e-9)
    assert with_own < without


def test_one_own_record_changes_nothing(store):
    _fill(store, own=1, own_prefix=[])
    assert _local(store, [], FP) == pytest.approx(_local(store, [], None))


@pytest.mark.parametrize("case", ["other node", "other kernel", "no-local", "switched off"])
def test_only_this_kernel_at_this_node(store, case):
    own_prefix = ["vectorize_loads"] if case == "other node" else []
    own_fp = "proj/other.cu::k" if case == "other kernel" else FP
    _fill(store, own=3, own_prefix=own_prefix, own_fp=own_fp)
    kw: dict = {"ablation": "no-local"} if case == "no-local" else {}
    if case == "switched off":
        kw["config"] = {"own_parent": False}
    assert _local(store, [], FP, **dict(kw)) == pytest.approx(_local(store, [], None, **dict(kw)))


def test_no_prefix_pools_every_record_of_the_kernel(store):
    """``no-prefix`` ignores the history, so the kernel's records at any node are its own evidence."""
    _fill(store, own=3, own_prefix=["vectorize_loads"])
    assert _local(store, [], FP, ablation="no-prefix") < _local(store, [], None, ablation="no-prefix")
