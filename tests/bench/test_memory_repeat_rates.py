"""bench/memory_repeat_rates.py and bench/memory_split_kernels.py on small hand-made replays."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from memory_repeat_rates import repeat_rates  # noqa: E402
from memory_split_kernels import per_kernel  # noqa: E402


def _run(work: Path, folder: str, steps: list[tuple[str, object, str]]) -> None:
    d = work / "runs" / folder
    d.mkdir(parents=True)
    rows = [{"strategy": s, "parent": p, "status": st} for s, p, st in steps]
    (d / "report.json").write_text(json.dumps({"steps": rows}))


def test_repeat_rates_count_tries_of_one_step_at_one_node(tmp_path):
    _run(tmp_path, "bench_a.cu-k-htam-s0", [
        ("bs", "start", "loss"), ("bs", "start", "loss"), ("bs", "start", "win"),  # 1st, 2nd, 3rd at the start
        ("vec", 3, "win"), ("bs", 3, "neutral"),                                     # first tries at node 3
        ("bs", 3, "not_in_table")])                                                  # never measured: left out
    _run(tmp_path, "bench_a.cu-k-random-s1", [("bs", "start", "win")])
    r = repeat_rates(tmp_path)
    assert r["htam"]["1"] == {"trials": 3, "wins": 1, "win_rate": pytest.approx(1 / 3, abs=1e-4)}
    assert r["htam"]["2"]["trials"] == 1 and r["htam"]["2"]["wins"] == 0
    assert r["htam"]["3+"] == {"trials": 1, "wins": 1, "win_rate": 1.0}
    assert r["random"]["1"]["wins"] == 1


def test_repeat_rates_without_runs_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match="holds no replay runs"):
        repeat_rates(tmp_path)


def _replay(path: Path) -> Path:
    rows = [{"kernel": "a.cu::ka", "policy": "htam", "target": 2.0, "trials_to_90": 1},
            {"kernel": "a.cu::ka", "policy": "random", "target": 2.0, "trials_to_90": None},
            {"kernel": "a.cu::ka", "policy": "random", "target": 2.0, "trials_to_90": 3},
            {"kernel": "b.cu::kb", "policy": "htam", "target": 2.0, "trials_to_90": 4},
            {"kernel": "c.cu::kc", "policy": "htam", "target": None, "trials_to_90": None}]  # not measured
    path.write_text(json.dumps({"rows": rows}))
    return path


def test_per_kernel_means_seeds_and_counts_never_as_nine(tmp_path):
    t = per_kernel(_replay(tmp_path / "r.json"))
    assert t == {"ka": {"htam": 1.0, "random": 6.0}, "kb": {"htam": 4.0}}


@pytest.mark.parametrize("names", ["ka,kb", ",", "nope"])
def test_split_cli_on_edge_sets(tmp_path, names):
    p = subprocess.run([sys.executable, str(REPO / "bench" / "memory_split_kernels.py"), str(_replay(tmp_path / "r.json")),
                        names, "--policies", "htam"], capture_output=True, text=True, cwd=REPO)
    if names == "ka,kb":
        assert p.returncode == 0 and "mean over the 2 named** | 2.50" in p.stdout and "other" not in p.stdout
    else:
        assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
