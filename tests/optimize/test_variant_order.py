"""The variants of one step: the transform's order (the textbook 32x8 transpose tile, 4 rows a thread, first
whenever the launch's block can be changed) and the loop trying the other variants of a step that improved before
any step on it.

The static run is real (nvcc compile-only). The GPU runs fake the GPU layer as ``test_loop_speed.py`` does
(``Evaluator._on_gpu`` and ``Evaluator.compare``), with times given by what the kernel text holds, so they mean
the same with or without a GPU.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from htam_core.measure.compare import comparison_from_rounds
from htam_core.optimize import OptimizeTask, run_optimize
from htam_core.optimize.evaluate import Evaluation, Evaluator
from htam_core.optimize.loop import _Loop, _Node
from htam_core.optimize.policy import Choice
from tests.optimize.report_checks import SUITE
from tests.optimize.test_measure_cache import _profile

KERNEL = "transpose_naive"
NARROW = "dim3 threads(32, 8);"  # the 32x8 variant's launch (the family kernel's dim3 threads(TILE, TILE))
TILE = "__shared__ float htam_tile[32][33];"


def _suite_copy(root: Path) -> Path:
    root.mkdir(parents=True)
    for name in ("transpose_naive.cu", "htam.toml"):
        (root / name).write_bytes((SUITE / name).read_bytes())
    return root / "transpose_naive.cu"


def _texts(res) -> list[str]:
    return [Path(s.candidate_path).read_text() for s in res.steps]


def test_the_static_run_with_budget_4_tries_the_32x8_tile(tmp_path: Path) -> None:
    src = _suite_copy(tmp_path / "suite")
    res = run_optimize(OptimizeTask(path=str(src), kernel=KERNEL, budget=4, static=True,
                                    out_dir=str(tmp_path / "o"), memory_path=str(tmp_path / "m.sqlite3")))
    texts = _texts(res)
    tiled = [i for i, t in enumerate(texts) if TILE in t]
    assert tiled, [s.strategy for s in res.steps]
    first = texts[tiled[0]]  # the tile step's first variant: the textbook tile, 32x8 threads moving 4 rows each
    assert NARROW in first and "for (int htam_k = 0; htam_k < 32; htam_k += 8)" in first and "htam_e" not in first
    assert res.steps[tiled[0]].params["block"] == [32, 8] and res.steps[tiled[0]].params["rows_per_thread"] == 4


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Times by text: the start 1 ms, a 32x8 tile ``times["narrow"]``, any other tile ``times["wide"]``, every
    later step on a tile the same time as its tile. Comparisons are made from those times."""
    times = {"narrow": 0.5, "wide": 0.25}

    def ms(text: str) -> float:
        if TILE not in text:
            return 1.0
        return times["narrow"] if NARROW in text else times["wide"]

    def on_gpu(self, cand_path: Path, model, kernel, use_ncu: bool, lab: list[str], fp32_tol=None) -> Evaluation:
        t = ms(Path(cand_path).read_text())
        return Evaluation(True, True, "gpu", None, t, [t], _profile(KERNEL, ms=t), model, ["ok"], lab)

    def compare(self, parent_text: str, cand_path: Path, *, fresh: bool = False):
        p, c = ms(parent_text), ms(Path(cand_path).read_text())
        return comparison_from_rounds([[p, p * 1.001, p * 0.999, p] * 2], [[c, c * 1.001, c * 0.999, c] * 2]), ""

    monkeypatch.setattr(Evaluator, "_on_gpu", on_gpu)
    monkeypatch.setattr(Evaluator, "compare", compare)
    monkeypatch.setattr(Evaluator, "prefetch", lambda self, text: False)  # no nvcc in the background
    monkeypatch.setattr("htam_core.optimize.loop.gpu_available", lambda: True)
    return times


def _gpu_run(tmp_path: Path, name: str):
    src = _suite_copy(tmp_path / name)
    return run_optimize(OptimizeTask(path=str(src), kernel=KERNEL, budget=4, static=None, use_ncu=False,
                                     out_dir=str(tmp_path / f"o-{name}"),
                                     memory_path=str(tmp_path / f"{name}.sqlite3")))


def _tile_steps(res) -> list[int]:
    return [s.index for s in res.steps if s.strategy.endswith("transpose_smem_tile")]


def test_a_faster_sibling_variant_is_tried_next_and_followed(tmp_path: Path, fake_gpu: dict) -> None:
    res = _gpu_run(tmp_path, "follow")  # the 32x8 tile (tried first) 2x, the launch's 32x32 tile 4x
    s1, s2 = res.steps[0], res.steps[1]
    assert _tile_steps(res)[:2] == [1, 2], [s.strategy for s in res.steps]
    assert s1.accepted and s1.params["block"] == [32, 8]
    assert s2.parent == "start" and s2.accepted and s2.params["block"] == [32, 32]  # the sibling, from the start
    assert all(s.parent == 2 for s in res.steps[2:]), [s.parent for s in res.steps]  # the loop went on from it
    assert res.best_lineage[0] == 2 and 1 not in res.best_lineage


def test_a_slower_sibling_variant_is_not_followed(tmp_path: Path, fake_gpu: dict) -> None:
    fake_gpu.update(narrow=0.25, wide=0.5)  # the 32x8 tile 4x, the 32x32 tile 2x: a win over the start, slower
    res = _gpu_run(tmp_path, "stay")
    s2 = res.steps[1]
    assert _tile_steps(res)[:2] == [1, 2] and s2.parent == "start" and s2.status == "win"
    assert not s2.accepted and any("not faster than candidate 1" in m for m in s2.messages)
    assert all(s.parent == 1 for s in res.steps[2:]), [s.parent for s in res.steps]
    assert res.best_lineage[0] == 1


def _choice(strategy: str, score: float | None, transform: str | None = "t") -> Choice:
    return Choice("d", strategy, transform, score, "", "")


@pytest.mark.parametrize(("ahead", "first"), [
    ([_choice("tile", 0.9), _choice("launch_bounds", 0.5)], True),    # only lower-ranked steps wait: variants first
    ([_choice("register_tile", 0.95), _choice("tile", 0.9)], False),  # a higher-ranked step waits: it goes first
    ([_choice("advice", 0.99, None), _choice("restrict", 0.6)], True),  # a step the rules engine cannot make
    ([_choice("kept", 0.99), _choice("restrict", 0.6)], True),        # a step the loop already kept
    ([], True),
    ([_choice("restrict", None)], True),                              # no scores (exhaustive policy)
])
def test_the_variants_of_an_improving_step_wait_only_for_a_higher_ranked_step(ahead, first) -> None:
    fake = SimpleNamespace(_choices=lambda ev, prefix: ahead, kept_strategies={"kept"}, gpu=True,
                           task=SimpleNamespace(policy="htam"))
    cur = _Node("text", Evaluation(True, True, "gpu"), ["tile"], [1])
    variants = (_choice("tile", 0.9), ["the other variant"])
    assert _Loop._siblings_first(fake, _choice("tile", 0.9), cur, variants) is first
    assert _Loop._siblings_first(fake, _choice("tile", 0.9), cur, (variants[0], [])) is False  # none left
    fake.gpu = False  # static mode: nothing was measured, no variant improved anything
    assert _Loop._siblings_first(fake, _choice("tile", 0.9), cur, variants) is False
