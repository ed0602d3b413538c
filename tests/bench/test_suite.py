"""The naive-kernel suite: its kernels and harnesses, the summary on synthetic outcomes, and a static CPU run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.bench import suite
from htam_core.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "bench" / "suite"


def test_suite_has_at_least_12_kernels_with_roofline_bounds() -> None:
    ks = suite.load_suite(SUITE)
    assert len(ks) >= 12
    assert {k.language for k in ks} == {"triton", "cuda"}
    assert all(k.bytes_moved and k.bytes_moved > 0 for k in ks)
    names = {k.name for k in ks}
    for want in ("vadd_kernel", "row_softmax_kernel", "mm_kernel", "ln_fwd_kernel", "bias_gelu_residual_kernel",
                 "transpose_naive", "sgemm_naive", "block_sum_interleaved", "softmax_row_per_thread"):
        assert want in names
    sg = next(k for k in ks if k.name == "sgemm_naive")
    assert sg.flops == 2 * 2048**3


def test_suite_cuda_kernels_have_a_launch_in_their_file() -> None:
    from htam_core.source import load

    for k in suite.load_suite(SUITE):
        if k.language == "cuda":
            assert load(k.path).kernel(k.name).launch_sites, k.name


def test_bad_names_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(suite.SuiteError, match="unknown suite kernel"):
        suite.load_suite(SUITE, ["nope"])
    with pytest.raises(suite.SuiteError, match="unknown policy"):
        suite.parse_policies("htam,greedy")
    with pytest.raises(suite.SuiteError, match="no htam.toml"):
        suite.load_suite(tmp_path)
    assert suite.parse_policies("all") == list(suite.POLICY_SPECS)
    assert main(["bench", "suite", "--suite", str(tmp_path), "--static"]) == 2


def _outcome(kernel: str, policy: str, start: float, speedups: list[float | None], best: float) -> dict:
    return {"kernel": kernel, "policy": policy, "status": "ok", "mode": "gpu", "measured": True, "start_ms": start,
            "best_ms": start / best, "best_speedup": best,
            "steps": [{"speedup_vs_start": s} for s in speedups], "memory_records_imported": 3}


def test_summarize_on_synthetic_outcomes() -> None:
    ks = [suite.SuiteKernel("a", "a.py", "triton", 4e9, None), suite.SuiteKernel("b", "b.cu", "cuda", 1e6, 1e12)]
    res = [_outcome("a", "exhaustive", 2.0, [1.5, 4.0], 4.0), _outcome("a", "htam", 2.02, [4.0], 4.0),
           _outcome("a", "random", 2.0, [1.1, 1.2, 3.7], 3.7),
           _outcome("b", "exhaustive", 10.0, [2.0], 2.0), _outcome("b", "htam", 10.0, [1.0, 1.9], 1.9),
           _outcome("b", "random", 10.0, [None, None], 1.0)]
    peaks = {"dram_bytes_per_s": 4e12, "fp32_flops_per_s": 5e13}
    doc = suite.summarize(ks, ["htam", "random", "exhaustive"], res, peaks)
    rows = {(r["kernel"], r["policy"]): r for r in doc["rows"]}
    assert rows[("a", "htam")]["trials_to_90"] == 1
    assert rows[("a", "random")]["trials_to_90"] == 3
    assert rows[("b", "htam")]["trials_to_90"] == 2
    assert rows[("b", "random")]["trials_to_90"] is None  # never reached 1.8x
    assert rows[("a", "htam")]["bound"] == "memory" and rows[("b", "htam")]["bound"] == "compute"
    # a: 4 GB at 4 TB/s = 1 ms; best 0.5 ms would be above roofline: 2.02/4 ms -> ~1.98
    assert rows[("a", "htam")]["roofline_fraction"] == pytest.approx(1e-3 / (2.02 / 4 / 1000))
    agg = doc["aggregates"]
    assert agg["htam"]["geomean_speedup"] == pytest.approx((4.0 * 1.9) ** 0.5)
    assert agg["htam"]["median_trials_to_90"] == pytest.approx(1.5)
    assert agg["random"]["median_trials_to_90"] == float("inf")
    assert doc["repeatability"]["per_kernel_pct"]["a"] == pytest.approx(1.0)
    # pairs of runs of a: (2.0, 2.02) 1%, (2.0, 2.0) 0%, (2.02, 2.0) 1% -> median 1%; b: all 0%
    assert doc["repeatability"]["per_kernel_pair_pct"] == pytest.approx({"a": 1.0, "b": 0.0})
    assert doc["repeatability"]["median_pair_pct"] == pytest.approx(0.5)


def test_static_suite_run_two_kernels_two_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CPU: 2 kernels x 2 policies x budget 2; runs end to end, says "not measured", warm start is leave-one-out."""
    out = tmp_path / "out"
    rc = main(["bench", "suite", "--suite", str(SUITE), "--kernels", "vadd_kernel,axpy_tiny_block",
               "--policies", "htam,random", "--budget", "2", "--static", "--out", str(out)])
    assert rc == 0
    md = next(out.glob("*-static-suite.md")).read_text()
    assert "not measured" in md and "Nothing was measured" in md
    doc = json.loads(next(out.glob("*-static-suite.json")).read_text())
    assert {(r["kernel"], r["policy"]) for r in doc["rows"]} == {
        (k, p) for k in ("vadd_kernel", "axpy_tiny_block") for p in ("htam", "random", "htam-cold")}
    assert all(r["speedup"] is None and r["start_ms"] is None for r in doc["rows"])
    by = {(r["kernel"], r["policy"]): r for r in doc["results"]}
    assert all(r["status"] == "ok" and len(r["steps"]) >= 1 for r in doc["results"])
    work = out / "suite-work" / "exports"
    n_vadd = len(json.loads((work / "vadd_kernel.json").read_text())["records"])
    n_axpy = len(json.loads((work / "axpy_tiny_block.json").read_text())["records"])
    assert n_vadd >= 1 and n_axpy >= 1
    # leave one out: each kernel's htam run imported exactly the other kernel's warm-up records
    assert by[("vadd_kernel", "htam")]["memory_records_imported"] == n_axpy
    assert by[("axpy_tiny_block", "htam")]["memory_records_imported"] == n_vadd
    assert by[("vadd_kernel", "random")]["memory_records_imported"] == 0
    # streamed results, the pooled memory, and a rerun that resumes every task
    log = (out / "suite-work" / "results.jsonl").read_text().splitlines()
    assert len(log) == 6
    pooled = doc["memory"]
    assert pooled["stores"] == 6 and pooled["conflicts"] == 0
    from htam_core.memory.store import read_records

    uids = {r.uid for r in read_records(pooled["path"])}
    warm = {r["uid"] for k in ("vadd_kernel", "axpy_tiny_block")
            for r in json.loads((work / f"{k}.json").read_text())["records"]}
    assert warm <= uids and pooled["added"] == len(uids)
    # each phase counts its own tasks and is named (regression: "[1/2 done]" then "[1/4 done]", unnamed)
    first = capsys.readouterr().err
    assert "[warm-up 1/2 done, ETA after the next task]" in first and "[warm-up 2/2 done]" in first
    assert "[policies 1/4 done, ETA after the next task]" in first and "[policies 4/4 done]" in first
    assert main(["bench", "suite", "--suite", str(SUITE), "--kernels", "vadd_kernel,axpy_tiny_block",
                 "--policies", "htam,random", "--budget", "2", "--static", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "6/6 done" not in err and len((out / "suite-work" / "results.jsonl").read_text().splitlines()) == 6
    again = json.loads(next(out.glob("*-static-suite.json")).read_text())
    assert again["results"] == doc["results"]
    # regression: --fresh deleted the results but merged the new stores on top of the old pooled memory
    assert main(["bench", "suite", "--suite", str(SUITE), "--kernels", "vadd_kernel,axpy_tiny_block",
                 "--policies", "htam,random", "--budget", "2", "--static", "--out", str(out), "--fresh"]) == 0
    fresh = json.loads(next(out.glob("*-static-suite.json")).read_text())["memory"]
    assert len(read_records(fresh["path"])) == len(uids) == fresh["added"]


def test_a_triton_dot_on_fp32_is_bounded_by_the_tf32_peak(tmp_path):
    """mm_kernel (tl.dot on float32) gets the TF32 tensor-core peak, an elementwise kernel the fp32 one."""
    from pathlib import Path

    from htam_core.bench.suite import load_suite, summarize

    suite = Path(__file__).resolve().parents[2] / "bench" / "suite"
    ks = {k.name: k for k in load_suite(suite, ["mm_kernel", "vadd_kernel"])}
    assert ks["mm_kernel"].compute_dtype == "tf32" and ks["vadd_kernel"].compute_dtype == "float32"
    peaks = {"dram_bytes_per_s": 4e12, "fp32_flops_per_s": 5e13, "tf32_flops_per_s": 4e14}
    res = [{"kernel": "mm_kernel", "policy": "htam", "status": "ok", "measured": True, "start_ms": 2.0,
            "best_ms": 1.0, "best_speedup": 2.0, "steps": []}]
    row = summarize([ks["mm_kernel"]], ["htam"], res, peaks)["rows"][0]
    flops = 2 * 4096 ** 3
    assert row["bound"] == "compute"
    assert abs(row["roofline_fraction"] - (flops / 4e14) / 1e-3) < 1e-9


def _one_kernel_suite(folder: Path) -> Path:
    """A suite folder with only vadd_kernel (a copy: the test edits it)."""
    import re
    import shutil

    folder.mkdir()
    shutil.copy(SUITE / "vector_add_small_block.py", folder)
    toml = (SUITE / "htam.toml").read_text()
    table = re.search(r"\[kernel\.vadd_kernel\].*?(?=\n\[)", toml, re.S)
    assert table is not None
    (folder / "htam.toml").write_text(table.group(0) + "\n")
    return folder


def test_an_edited_kernel_or_harness_reruns_and_an_unchanged_rerun_says_it_resumed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (new-user trial): after BLOCK_SIZE = 64 -> 128 a rerun with the same --out silently reused the
    old result. Now the key covers the kernel file and its harness table, and the report counts resumed tasks.
    The optimization itself is replaced by a static-mode outcome that counts its calls (the run above covers
    the real one)."""
    ran: list[str] = []

    def fake_task(task: dict) -> dict:
        ran.append(Path(task["path"]).read_text())
        return {"kernel": task["kernel"], "policy": task["policy_name"], "status": "ok", "mode": "static",
                "measured": False, "steps": [{"speedup_vs_start": None}]}

    monkeypatch.setattr(suite, "run_suite_task", fake_task)
    folder = _one_kernel_suite(tmp_path / "suite")
    out = tmp_path / "out"
    argv = ["bench", "suite", "--suite", str(folder), "--policies", "random", "--budget", "1", "--static",
            "--out", str(out)]

    def run() -> tuple[str, dict, str]:
        capsys.readouterr()
        assert main(argv) == 0
        err = capsys.readouterr().err
        return err, json.loads(next(out.glob("*-static-suite.json")).read_text()), \
            next(out.glob("*-static-suite.md")).read_text()

    err, doc, md = run()
    assert doc["resumed"]["tasks"] == 0 and "1/1 done" in err and "resumed" not in err and len(ran) == 1
    err, doc, md = run()  # unchanged: resumed, and it says so
    assert len(ran) == 1
    assert doc["resumed"] == {"tasks": 1, "total": 1, "line": doc["resumed"]["line"]}
    assert "1/1 done (1 resumed)" in err
    assert "1 of 1 task resumed from an earlier run in this folder" in md
    kernel = folder / "vector_add_small_block.py"
    kernel.write_text(kernel.read_text().replace("BLOCK_SIZE = 64", "BLOCK_SIZE = 128"))
    err, doc, md = run()  # the kernel file changed: it runs again, on the edited file
    assert len(ran) == 2 and "BLOCK_SIZE = 128" in ran[-1]
    assert doc["resumed"]["tasks"] == 0 and "resumed" not in err and "0 tasks resumed" in md
    spec = folder / "htam.toml"
    spec.write_text(spec.read_text().replace('reference = "a + b"', 'reference = "b + a"'))
    err, doc, _ = run()  # the harness table changed: it runs again
    assert len(ran) == 3 and doc["resumed"]["tasks"] == 0 and "resumed" not in err
    argv[argv.index("--budget") + 1] = "2"
    err, doc, _ = run()  # --budget changed: it runs again
    assert len(ran) == 4 and doc["resumed"]["tasks"] == 0
    assert len((out / "suite-work" / "results.jsonl").read_text().splitlines()) == 4
