"""Packing the guidance benchmark's correct candidates for the GPU, and the per-policy speedup statistics."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _load(name: str):  # noqa: ANN202 - a module
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


pack_mod = _load("llm_guidance_pack")
gpu_mod = _load("llm_guidance_gpu")


def _run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    kb = run / "work" / "kb1__19_ReLU.py"
    kb.mkdir(parents=True)
    (kb / "p_19_ReLU.py").write_text("# start\n")
    (kb / "p_19_ReLU_ref.py").write_text("# small-size reference\n")
    cands = run / "runs" / "htam"
    cands.mkdir(parents=True)
    (cands / "a.py").write_text("# correct\n")
    (cands / "b.py").write_text("# wrong\n")
    (cands / "c.py").write_text("# correct suite\n")
    lines = [
        {"kernel": "kb1/19_ReLU.py", "kernel_name": "relu_kernel", "policy": "htam", "status": "ok", "model": "m",
         "start": "work/kb1__19_ReLU.py/p_19_ReLU.py",
         "steps": [{"strategy": "triton_block_size", "status": "neutral", "correct": True, "candidate": "runs/htam/a.py"},
                   {"strategy": "triton_autotune", "status": "incorrect", "correct": False,
                    "candidate": "runs/htam/b.py"},
                   {"strategy": "triton_exp2", "status": "endpoint_fault", "correct": None, "candidate": None}]},
        {"kernel": "suite/vector_add_small_block.py", "kernel_name": "vadd_kernel", "policy": "rules", "status": "ok",
         "start": "bench/suite/vector_add_small_block.py",
         "steps": [{"strategy": "triton_cache_hints", "status": "neutral", "correct": True,
                    "candidate": "runs/htam/c.py"}]},
        {"kernel": "kb1/20_LeakyReLU.py", "policy": "none", "status": "error", "error": "x"},
    ]
    (run / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


def test_pack_copies_only_correct_candidates_with_their_starts(tmp_path: Path) -> None:
    dest = tmp_path / "pack"
    man = pack_mod.pack(_run(tmp_path), dest, full_sizes=False)
    got = sorted((e["policy"], e["strategy"]) for e in man["entries"])
    assert got == [("htam", "triton_block_size"), ("rules", "triton_cache_hints")]
    for e in man["entries"]:
        assert (dest / e["candidate"]).is_file() and (dest / e["start"]).is_file()
    kb_start = dest / next(e["start"] for e in man["entries"] if e["policy"] == "htam")
    assert (kb_start.parent / "p_19_ReLU_ref.py").read_text() == "# small-size reference\n"
    suite_start = dest / next(e["start"] for e in man["entries"] if e["policy"] == "rules")
    assert (suite_start.parent / "htam.toml").is_file()
    assert json.loads((dest / "manifest.json").read_text()) == man


def test_a_line_resumed_from_another_machine_is_listed_not_fatal(tmp_path: Path) -> None:
    """Regression: a run resumed from committed lines has no candidate files for them; packing stopped with a
    FileNotFoundError. Those lines are now listed under ``missing`` and the rest is packed."""
    run = _run(tmp_path)
    (run / "runs" / "htam" / "a.py").unlink()
    man = pack_mod.pack(run, tmp_path / "pack", full_sizes=False)
    assert [(e["policy"], e["strategy"]) for e in man["entries"]] == [("rules", "triton_cache_hints")]
    assert man["missing"] == [f"kb1/19_ReLU.py (htam): 1 candidate file(s) not in {run}"]


def test_per_policy_speedups_and_fast_1() -> None:
    man = {"entries": [{"policy": "htam", "kernel": k} for k in ("a", "b")] + [{"policy": "rules", "kernel": "a"}]}
    rows = [{"policy": "htam", "kernel": "a", "status": "timed", "speedup": 2.0, "verdict": "win", "gpu_correct": True},
            {"policy": "htam", "kernel": "b", "status": "timed", "speedup": 0.5, "verdict": "loss",
             "gpu_correct": True},
            {"policy": "htam", "kernel": "b", "status": "incorrect on GPU", "gpu_correct": False},
            {"policy": "rules", "kernel": "a", "status": "timed", "speedup": 1.0, "verdict": "neutral",
             "gpu_correct": True}]
    s = gpu_mod.per_policy(rows, man)
    assert s["htam"]["geomean_speedup"] == 1.0 and s["htam"]["timed"] == 2 and s["htam"]["incorrect_on_gpu"] == 1
    assert (s["htam"]["wins"], s["htam"]["fast_1_kernels"], s["htam"]["kernels_with_correct"]) == (1, 1, 2)
    lo, hi = s["htam"]["geomean_ci95"]
    assert lo <= 1.0 <= hi
    assert s["rules"]["geomean_ci95"] is None and s["rules"]["fast_1_kernels"] == 0
