"""``Harness.oracle_launcher``: another version of an operation is checked against the naive one on the same
inputs; the oracle runs through the naive launcher, the candidate through its own. The GPU binding is
replaced here (no GPU): what is checked is which file and launcher each side is bound to."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import htam_core.harness.runner as runner  # noqa: E402
from htam_core.harness.base import Harness, InputSpec  # noqa: E402


def _harness(tmp_path: Path) -> Harness:
    naive, expert = tmp_path / "v1.cu", tmp_path / "v2.cu"
    for p in (naive, expert):
        p.write_text("void run1(float* out, int n) {}\nvoid run2(float* out, int n) {}\n", encoding="utf-8")
    return Harness(kind="inferred", path=str(expert), kernel="k2", language="cuda", launcher="run2",
                   inputs=[InputSpec(name="out", shape=[4], dtype="float32", init="empty"),
                           InputSpec(name="n", dtype="int32", value=4)],
                   outputs=["out"], oracle_path=str(naive), oracle_launcher="run1")


def test_the_oracle_runs_the_naive_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bound: list[tuple[str, str]] = []

    def fake_host_launcher(path, launcher, arch, dtypes, pointees=None):  # noqa: ANN001, ANN202
        bound.append((Path(path).name, launcher))
        value = 1.0 if launcher == "run1" else 2.0

        def bind(inputs):  # noqa: ANN001, ANN202
            return lambda: inputs[0].fill_(value)
        return bind

    monkeypatch.setattr(runner, "host_launcher", fake_host_launcher)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    h = _harness(tmp_path)
    assert h.uses_oracle and Harness.from_json(h.to_json()).oracle_launcher == "run1"
    p = runner.prepare_spec(h, "cuda")
    assert ("v2.cu", "run2") in bound and ("v1.cu", "run1") in bound
    ins = [torch.empty(4), 4]
    assert float(p.trial.run_reference(list(ins))[0][0]) == 1.0  # the naive version
    assert float(p.trial.run_candidate(list(ins))[0][0]) == 2.0  # the expert


def test_without_it_the_oracle_runs_the_candidates_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bound: list[tuple[str, str]] = []
    monkeypatch.setattr(runner, "host_launcher",
                        lambda path, launcher, *a, **k: bound.append((Path(path).name, launcher)) or (lambda i: None))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    h = _harness(tmp_path)
    h.oracle_launcher = None
    runner.prepare_spec(h, "cuda")
    assert bound == [("v2.cu", "run2"), ("v1.cu", "run2")]
