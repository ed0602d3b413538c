"""Pinned rankings: the ranker's output on fixed memories, kept equal to the recorded golden file.

The golden file (``fixtures/ranker_pinned.json``) was written by the ranker as it was when its arithmetic ran
on torch; the numpy ranker must give the same order and the same values (1e-9 relative). A deliberate change
of the ranking rewrites it: ``HTAM_REGEN_PINNED=1 pytest tests/memory/test_ranker_pinned.py``.

The memories mix what the ranker distinguishes: several bottleneck states (with and without the structure
block), prefixes of several lengths, wins, losses, neutral, incorrect and unmeasured records, several kernels,
two GPU models (same-GPU weight) and variant keys (the variant order); every ablation ranks each of them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
from pathlib import Path
from typing import Any

import pytest

from htam_core.memory import ABLATIONS, Outcome, Ranker, load_knowledge, open_store, state_from_profile
from htam_core.memory.ranker import RankedStep
from htam_core.memory.store import Store
from htam_core.source import load
from htam_core.source.model import KernelFeatures, Loop
from htam_core.types.profile import Bottleneck, Profile

GOLDEN = Path(__file__).parent / "fixtures" / "ranker_pinned.json"
CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
KB = load_knowledge()
CLASSES = ("memory-bound", "compute-bound", "latency-bound", "unknown")
STEPS = ("vectorize_loads", "launch_bounds", "cuda_block_size", "smem_tiling", "unroll_loops", "grid_stride_loop",
         "register_blocking", "thread_coarsening")
GPUS = ("NVIDIA H200", "NVIDIA A100", "sm_90 (static)")


def _profile(cls: str, device: str = "NVIDIA H200") -> Profile:
    return Profile("k", mode="gpu" if not device.endswith("(static)") else "static", device=device,
                   bottleneck=Bottleneck(cls))


def _state(rng: random.Random, structured: bool) -> dict[str, float]:
    state = state_from_profile(_profile(rng.choice(CLASSES)))
    state["sol_memory"] = round(rng.random(), 3)
    state["theoretical_occupancy"] = round(rng.random(), 3)
    if structured:
        state["struct"] = 1.0
        for k in ("lang=cuda", "matmul_like", "has_loop", "uses_shared", "row_loop"):
            state[k] = float(rng.random() < 0.5)
    return state


def _fill(store: Store, seed: int, n: int) -> None:
    """``n`` reproducible records of mixed outcomes over the strategies of :data:`STEPS` that exist."""
    rng = random.Random(seed)
    steps = [s for s in STEPS if KB.has_strategy(s)]
    for i in range(n):
        prefix = [rng.choice(steps) for _ in range(rng.randrange(0, 5))]
        step = rng.choice(steps)
        kind = rng.random()
        if kind < 0.1:
            outcome = Outcome(None, False, False, "incorrect")
        elif kind < 0.2:
            outcome = Outcome(None, True, False, "neutral")
        else:
            sp = round(math.exp(rng.gauss(0.05, 0.3)), 4)
            outcome = Outcome(sp, True, True, "win" if sp > 1.02 else "loss" if sp < 0.98 else "neutral")
        variant = rng.choice([None, "block=128", "block=256", "vec=4"])
        store.record(prefix, _state(rng, structured=i % 3 != 0), step, outcome, f"fp{rng.randrange(4)}",
                     rng.choice(GPUS), variant=variant)


def _queries() -> list[tuple[str, dict[str, Any]]]:
    """(name, rank keyword arguments) of the queries each memory answers."""
    sgemm = load(CORPUS / "sgemm_naive.cu").kernel("sgemm_naive")
    vadd = load(CORPUS / "vector_add_small_block.py").kernel("vadd_kernel")
    elementwise = KernelFeatures(loads=2, stores=1)
    matmul = KernelFeatures(loops=[Loop(line=5, kind="for")], loads=3, stores=1, uses_2d_index=True)
    out: list[tuple[str, dict[str, Any]]] = []
    for cls, device in (("memory-bound", "NVIDIA H200"), ("compute-bound", "sm_90 (static)")):
        p = _profile(cls, device)
        for prefix in ([], ["vectorize_loads"], ["cuda_block_size", "launch_bounds", "vectorize_loads"]):
            tag = f"{cls}/{device}/{'+'.join(prefix) or 'start'}"
            out.append((f"ew/{tag}", {"state": state_from_profile(p), "prefix": prefix,
                                      "features": elementwise, "language": "cuda", "profile": p}))
            out.append((f"mm/{tag}", {"state": state_from_profile(p), "prefix": prefix, "features": matmul,
                                      "language": "cuda", "profile": p, "fingerprint": "fp1"}))
    p = _profile("memory-bound")
    out.append(("sgemm", {"state": state_from_profile(p), "prefix": [], "features": sgemm.features,
                          "language": sgemm.language, "profile": p, "kernel": sgemm, "fingerprint": "fp0"}))
    out.append(("vadd", {"state": state_from_profile(None), "prefix": ["vectorize_loads"], "features": vadd.features,
                         "language": vadd.language, "profile": None, "kernel": vadd}))
    return out


def _step(s: RankedStep) -> list[Any]:
    """A ranked step, compact: ids, unrounded score and parts, gain, counts and a digest of its texts."""
    text = hashlib.sha1(f"{s.evidence}|{s.rationale}".encode()).hexdigest()[:10]
    return [s.strategy, s.score, [s.parts[k] for k in sorted(s.parts)], s.expected_gain, s.wins, s.trials, text]


def _snapshot(tmp: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    queries = _queries()
    memories = (("empty", 0, 0, (None,)), ("small", 1, 12, (None, "random")), ("mixed", 2, 160, (None, *ABLATIONS)))
    for mem_name, seed, n, ablations in memories:
        store = open_store(tmp / f"{mem_name}.sqlite3")
        try:
            _fill(store, seed, n)
            for ablation in ablations:
                for rseed in ((0, 5) if ablation == "random" else (0,)):
                    ranker = Ranker(KB, store, seed=rseed, ablation=ablation)
                    for qname, kw in queries:
                        key = f"{mem_name}/{ablation}/{rseed}/{qname}"
                        out[key] = [_step(s) for s in ranker.rank(top=10, **kw)]
                        kw2 = {k: v for k, v in kw.items() if k != "fingerprint"}
                        for strategy in ("cuda_block_size", "vectorize_loads"):
                            out[f"{key}/variants/{strategy}"] = ranker.rank_variants(
                                strategy=strategy, variants=[None, "block=128", "block=256", "vec=4", "x"], **kw2)
        finally:
            store.close()
    return out


def _close(a: Any, b: Any, where: str) -> None:
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)), where
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), where
        for k in a:
            _close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def test_rankings_match_the_pinned_golden_file(tmp_path: Path) -> None:
    got = json.loads(json.dumps(_snapshot(tmp_path)))
    if os.environ.get("HTAM_REGEN_PINNED") == "1":
        GOLDEN.write_text(json.dumps(got, indent=None, sort_keys=True) + "\n")
    want = json.loads(GOLDEN.read_text())
    assert sorted(got) == sorted(want)
    assert len(want) > 300
    # the memories are not trivial: some ranking carries memory evidence and some variant scores differ
    rankings = {k: v for k, v in want.items() if "/variants/" not in k}
    assert any(s[5] > 0 and s[3] is not None for r in rankings.values() for s in r)
    assert any(len(set(v)) > 1 for k, v in want.items() if "/variants/" in k)
    for key in sorted(want):
        if key in rankings:  # the order, exactly
            assert [s[0] for s in got[key]] == [s[0] for s in want[key]], key
        _close(got[key], want[key], key)
