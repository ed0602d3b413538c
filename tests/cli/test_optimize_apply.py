"""``htam optimize --apply`` / ``--apply-unverified``: the user's file changes only by a verified, measured kernel.

Static runs use the real loop (Triton interpreter). The measured runs replace only the GPU measurement
(``Evaluator._on_gpu``) by a fake whose verdict and time are a function of the text, so that the apply
decision is tested without a GPU; the decision itself is never faked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.cli.main import main
from htam_core.cli.optimize import APPLY_REFUSED
from htam_core.optimize.evaluate import Evaluation, Evaluator
from htam_core.types.profile import Profile, TimeStats
from tests.optimize.report_checks import check_report, copy_example

pytestmark = pytest.mark.usefixtures("private_htam_env")

STATIC_REFUSAL = ("nothing was measured (static mode: no GPU), so no candidate is verified on the GPU and timed; "
                  "run on a GPU to measure it")


def _optimize(file: Path, tmp_path: Path, *extra: str) -> int:
    return main(["optimize", str(file), "--kernel", "add_kernel", "--out", str(tmp_path / "out"),
                 "--memory", str(tmp_path / "mem.sqlite3"), "--no-ncu", *extra])


def _err_lines(err: str) -> list[str]:
    # progress lines ("[1/2] ...") and the loop's notes (the win rule) are not the --apply verdict
    return [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("[", "note: "))]


def test_apply_refuses_in_static_mode_and_leaves_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = copy_example(tmp_path / "src")
    start = src.read_bytes()
    assert _optimize(src, tmp_path, "--static", "--budget", "2", "--apply") == APPLY_REFUSED == 5
    cap = capsys.readouterr()
    best = tmp_path / "out" / "best.py"
    assert _err_lines(cap.err) == [
        f"htam: --apply refused: {STATIC_REFUSAL}; {src} is unchanged (the best candidate is in {best}; "
        "--apply-unverified writes it anyway)"]
    assert src.read_bytes() == start  # byte for byte
    data = check_report(tmp_path / "out", start.decode())
    assert data["changed"] and best.read_bytes() != start  # there was a candidate; it was not written
    assert data["apply_refusal"] == STATIC_REFUSAL
    assert "Traceback" not in cap.err


def test_apply_refusal_in_json_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = copy_example(tmp_path / "src")
    start = src.read_bytes()
    assert _optimize(src, tmp_path, "--static", "--budget", "1", "--apply", "--json") == APPLY_REFUSED
    cap = capsys.readouterr()
    out = json.loads(cap.out)
    assert out["applied"] is False and out["apply_refusal"] == STATIC_REFUSAL
    assert [ln for ln in cap.err.splitlines() if ln.strip()][-1].startswith("htam: --apply refused: ")
    assert src.read_bytes() == start


def test_apply_unverified_writes_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = copy_example(tmp_path / "src")
    start = src.read_text()
    assert _optimize(src, tmp_path, "--static", "--budget", "1", "--apply-unverified") == 0
    out = capsys.readouterr().out
    best = (tmp_path / "out" / "best.py").read_text()
    assert best != start and src.read_text() == best
    assert f"htam: --apply-unverified: wrote the best candidate into {src} UNVERIFIED: {STATIC_REFUSAL}" in out


def test_apply_flags_exclude_each_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = copy_example(tmp_path / "src")
    assert _optimize(src, tmp_path, "--apply", "--apply-unverified") == 2
    err = capsys.readouterr().err
    assert "not allowed with argument" in err and err.count("\n") == 1 and "usage:" not in err


def test_help_documents_the_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["optimize", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "5 when --apply refused to write the file" in text and "--apply-unverified" in text
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    assert "--apply-unverified" in readme and "5 when `--apply` refuses" in readme


# -- measured runs (fake GPU measurement) ----------------------------------------------------------------
@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """A GPU run whose measurement is a function of the text: ``ms_for[marker]`` when the text holds
    ``marker`` (first match), else 1.0 ms; every candidate is verified correct on the "GPU"."""
    ms_for: dict[str, float] = {}
    monkeypatch.setattr("htam_core.optimize.loop.gpu_available", lambda: True)

    def on_gpu(self, cand_path: Path, model, kernel, use_ncu: bool, lab: list[str], fp32_tol=None) -> Evaluation:
        text = Path(cand_path).read_text()
        ms = next((v for k, v in ms_for.items() if k in text), 1.0)
        prof = Profile(kernel="add_kernel", mode="gpu", device="fake GPU", time_ms=TimeStats(ms, ms, ms))
        return Evaluation(True, True, "gpu", None, ms, [ms], prof, model, ["matched the reference (fake)"], lab)

    def compare(self, parent_text: str, cand_path: Path, *, fresh: bool = False):
        """The interleaved comparison (in the search and the fresh re-timing) of the same fake times."""
        from htam_core.measure.compare import comparison_from_rounds

        def ms(text: str) -> float:
            return next((v for k, v in ms_for.items() if k in text), 1.0)
        return comparison_from_rounds([[ms(parent_text)] * 8], [[ms(Path(cand_path).read_text())] * 8]), ""

    monkeypatch.setattr(Evaluator, "_on_gpu", on_gpu)
    monkeypatch.setattr(Evaluator, "compare", compare)
    return ms_for


def test_apply_writes_a_verified_measured_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 fake_gpu: dict[str, float]) -> None:
    src = copy_example(tmp_path / "src")
    start = src.read_text()
    fake_gpu["evict_first"] = 0.5  # the cache-hint candidate is twice as fast
    assert _optimize(src, tmp_path, "--budget", "1", "--apply") == 0
    out = capsys.readouterr().out
    data = check_report(tmp_path / "out", start)
    assert data["measured"] and data["apply_refusal"] is None and data["steps"][0]["kept"] == "yes"
    assert src.read_text() == (tmp_path / "out" / "best.py").read_text() != start
    assert f"htam: --apply: wrote the best kernel into {src} (verified on the GPU, 2.00× faster than the start)" in out
    assert (tmp_path / "out" / "speedup.png").is_file()


def test_apply_refuses_when_nothing_was_faster(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               fake_gpu: dict[str, float]) -> None:
    src = copy_example(tmp_path / "src")
    start = src.read_bytes()
    fake_gpu["evict_first"] = 2.0  # slower
    assert _optimize(src, tmp_path, "--budget", "1", "--apply") == APPLY_REFUSED
    assert _err_lines(capsys.readouterr().err) == [
        f"htam: --apply: not written: no candidate to write (no candidate was measured faster than the start); "
        f"{src} is unchanged"]
    assert src.read_bytes() == start
    assert check_report(tmp_path / "out", start.decode())["steps"][0]["kept"] == "no"


def test_apply_refuses_when_the_file_changed_during_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            fake_gpu: dict[str, float],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    src = copy_example(tmp_path / "src")
    fake_gpu["evict_first"] = 0.5
    import htam_core.optimize as opt

    real = opt.run_optimize

    def run_and_edit(task, **kw):
        res = real(task, **kw)
        src.write_text(src.read_text() + "# edited by the user meanwhile\n")
        return res

    monkeypatch.setattr(opt, "run_optimize", run_and_edit)
    edited_run = _optimize(src, tmp_path, "--budget", "1", "--apply")
    edited = src.read_bytes()
    assert edited_run == APPLY_REFUSED and edited.endswith(b"# edited by the user meanwhile\n")
    assert _err_lines(capsys.readouterr().err) == [
        f"htam: --apply: not written: {src} changed on disk during the run, so it was not overwritten (the best "
        f"kernel is in {tmp_path / 'out' / 'best.py'})"]
    assert src.read_bytes() == edited  # the user's edit is kept


def test_apply_makes_only_the_written_steps_the_files_history(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # every candidate is learned from (recorded under the kernel's tried id); --apply-unverified writes the best,
    # and the steps that made it, only those, become steps of the file (its hover's "Last steps")
    from htam_core.memory import open_store  # noqa: PLC0415 - only this test reads the store
    from htam_core.memory.fingerprint import is_tried  # noqa: PLC0415

    src = copy_example(tmp_path / "src")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert _optimize(src, plain, "--static", "--budget", "2") == 0  # no --apply: the file has no new step
    with open_store(plain / "mem.sqlite3") as store:
        assert [is_tried(r.fingerprint) for r in store.records()] == [True, True]
    assert _optimize(src, tmp_path, "--static", "--budget", "2", "--apply-unverified") == 0
    capsys.readouterr()
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    by_index = {s["index"]: s["strategy"] for s in data["steps"]}
    with open_store(tmp_path / "mem.sqlite3") as store:
        recs = list(store.records())
    assert len(recs) == len(data["steps"]) == 2
    assert data["best_lineage"]
    assert [r.step for r in recs if not is_tried(r.fingerprint)] == [by_index[i] for i in data["best_lineage"]]
    assert sum(is_tried(r.fingerprint) for r in recs) == len(recs) - len(data["best_lineage"])
