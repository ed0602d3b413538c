"""The suite's no-fake-wins check: per run the fresh re-timing and the kept steps, and the aggregate line."""

from __future__ import annotations

from htam_core.bench import suite
from htam_core.bench.report import suite_markdown


def _outcome(kernel: str, best: float, reproduction: dict | None, measured: bool = True) -> dict:
    return {"kernel": kernel, "policy": "htam", "status": "ok", "mode": "gpu" if measured else "static",
            "measured": measured, "start_ms": 2.0 if measured else None,
            "best_ms": 2.0 / best if measured else None, "best_speedup": best if measured else None,
            "steps": [], "reproduction": reproduction}


def _rep(status: str, fresh: float | None, ratio: float | None, kept: bool | None = True) -> dict:
    return {"status": status, "reported": 2.0, "fresh": fresh, "fresh_spread": 0.02, "ratio": ratio,
            "tolerance": 0.05, "kept_steps": 1, "kept_beyond_spread": kept, "reason": "r"}


KS = [suite.SuiteKernel(n, f"{n}.py", "triton", 4e9, None) for n in ("a", "b", "c", "d")]


def test_rows_and_aggregate_count_only_confirmed_wins() -> None:
    res = [_outcome("a", 2.0, _rep("reproduced", 1.98, 0.99)),
           _outcome("b", 2.0, _rep("not reproduced", 1.01, 0.505)),
           _outcome("c", 1.0, _rep("not measured", None, None, None)),  # no win claimed: nothing to fake
           _outcome("d", 1.5, _rep("reproduced", 1.5, 1.0, kept=False))]  # a kept step inside its spread
    doc = suite.summarize(KS, ["htam"], res, None)
    rows = {r["kernel"]: r for r in doc["rows"]}
    assert rows["a"]["no_fake_win"] is True and rows["a"]["speedup"] == 2.0 and rows["a"]["fresh_ratio"] == 0.99
    assert rows["b"]["no_fake_win"] is False and rows["b"]["speedup"] == 1.0 and rows["b"]["search_speedup"] == 2.0
    assert rows["c"]["no_fake_win"] is True and rows["d"]["no_fake_win"] is False
    assert doc["no_fake_wins"] == {"clean": 2, "kernels": 4, "line": "no fake wins: 2 of 4 kernels"}
    assert doc["aggregates"]["htam"]["no_fake_wins"] == [2, 4]
    md = suite_markdown(doc)
    assert "no fake wins: 2 of 4 kernels" in md
    assert "| not reproduced (1.010x, ratio 0.505) | yes |" in md and "| reproduced (1.500x, ratio 1.000) | no |" in md


def test_static_suite_says_not_measured() -> None:
    doc = suite.summarize(KS[:1], ["htam"], [_outcome("a", 1.0, _rep("not measured", None, None, None),
                                                      measured=False)], None)
    assert doc["rows"][0]["no_fake_win"] is None
    assert doc["no_fake_wins"]["line"] == "no fake wins: not measured (static mode: nothing was timed)"
    assert "no fake wins: not measured" in suite_markdown(doc)
