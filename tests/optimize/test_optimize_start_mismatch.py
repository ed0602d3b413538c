"""The optimize loop stops before any candidate when the starting kernel does not match its reference.

The fixture (tests/fixtures/harness/inout/axpby.py) computes ``y = alpha*x + beta*y``: it reads its
output. Declared ``init = "empty"`` (the sgemm_naive bug: beta = 0, reference without y), the kernel
reads the NaN poison, so the start itself fails under the Triton interpreter: no candidate is tried and
the warning says to give y another init. Declared in-out (``randn``), the start is correct and candidates
are tried. Static mode (``static=True``), so the tests mean the same with or without a GPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from htam_core.cli.main import main
from htam_core.optimize import OptimizeTask, ProgressEvent, run_optimize
from htam_core.optimize.loop import start_mismatch_warning
from tests.support.harness_copy import copy_with_harness

pytest.importorskip("triton")

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "inout"
STOPPED = "the starting kernel does not match its reference, so no candidate was tried"
HINT = 'needs init = "zeros" (or another init) instead of "empty" in htam.toml'
#: y write-only, beta = 0 and a reference without y: exactly the shape of the sgemm_naive harness bug.
EMPTY_Y = [('{ name = "y", shape = ["N"], dtype = "float32", init = "randn" }',
            '{ name = "y", shape = ["N"], dtype = "float32", init = "empty" }'),
           ('{ name = "beta", dtype = "float32", value = 0.5 }', '{ name = "beta", dtype = "float32", value = 0.0 }'),
           ('reference = "alpha * x + beta * y"', 'reference = "alpha * x"')]


def _copy(dst: Path, replace: list[tuple[str, str]] = ()) -> Path:
    """The fixture copied into ``dst`` with ``(old, new)`` replacements applied to its htam.toml."""
    return copy_with_harness(FIX, "axpby.py", dst, replace)


def _run(src: Path, tmp_path: Path, events: list[ProgressEvent] | None = None, budget: int = 2):
    return run_optimize(OptimizeTask(path=str(src), kernel="axpby_kernel", budget=budget, static=True,
                                     out_dir=str(tmp_path / "out"), memory_path=str(tmp_path / "mem.sqlite3")),
                        on_progress=events.append if events is not None else None)


def test_start_reading_the_poison_stops_before_any_candidate(tmp_path: Path) -> None:
    src = _copy(tmp_path / "src", EMPTY_Y)
    events: list[ProgressEvent] = []
    res = _run(src, tmp_path, events)
    assert res.steps == [] and not res.changed and res.best_text == src.read_text()
    assert res.warnings[0].startswith(STOPPED), res.warnings
    assert "NaN" in res.warnings[0] and HINT in res.warnings[0]
    assert "htam verify axpby.py --kernel axpby_kernel" in res.warnings[0]
    assert not [e for e in events if e.strategy is not None]  # no candidate announced
    # (.htam-origin names the original file's folder, for sibling imports: not a candidate)
    assert sorted(p.name for p in (tmp_path / "out" / "candidates").iterdir() if p.is_dir()) == ["00-start"]
    md = (tmp_path / "out" / "report.md").read_text()
    notes = md[md.index("## Notes"):]
    assert STOPPED in notes and HINT in notes
    assert not (tmp_path / "mem.sqlite3").exists() or _records(tmp_path / "mem.sqlite3") == 0


def _records(mem: Path) -> int:
    from htam_core.memory import open_store

    with open_store(mem) as st:
        return len(list(st.records()))


@pytest.mark.parametrize("init", ["randn", "zeros"])
def test_inout_start_is_correct_and_candidates_are_tried(tmp_path: Path, init: str) -> None:
    y = '{ name = "y", shape = ["N"], dtype = "float32", init = "randn" }'
    res = _run(_copy(tmp_path / "src", [(y, y.replace('"randn"', f'"{init}"'))]), tmp_path, budget=1)
    assert not any("does not match its reference" in w for w in res.warnings), res.warnings
    assert len(res.steps) == 1
    step = res.steps[0]
    assert step.correct is True and step.verified_on == "interpreter", step


def test_cli_prints_the_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                private_htam_env: None) -> None:
    src = _copy(tmp_path / "src", EMPTY_Y)
    code = main(["optimize", str(src), "--kernel", "axpby_kernel", "--static", "--budget", "2",
                 "--out", str(tmp_path / "out"), "--memory", str(tmp_path / "mem.sqlite3")])
    out = capsys.readouterr()
    text = " ".join((out.out + out.err).split())  # rich wraps long lines on stderr
    assert code == 1  # nothing was tried: the start is wrong (the notes say why)
    assert STOPPED in text and HINT in text
    assert "No candidate was tried: the starting kernel does not match its reference" in text
    assert "best kernel:" not in text and "kept chain" not in text


def test_cli_notes_keep_bracketed_text(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       private_htam_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: notes went through rich markup, which swallowed "[kernel.axpby_kernel]" from the text."""
    import htam_core.optimize as opt

    real = opt.run_optimize

    def with_note(task, **kw):
        res = real(task, **kw)
        res.warnings.append("see htam.toml [kernel.axpby_kernel] and [bold]this[/bold]")
        return res

    monkeypatch.setattr(opt, "run_optimize", with_note)
    src = _copy(tmp_path / "src")
    main(["optimize", str(src), "--kernel", "axpby_kernel", "--static", "--budget", "1",
          "--out", str(tmp_path / "out"), "--memory", str(tmp_path / "mem.sqlite3")])
    out = capsys.readouterr()
    text = " ".join((out.out + out.err).split())
    assert "htam.toml [kernel.axpby_kernel] and [bold]this[/bold]" in text


def test_warning_without_nan_has_no_init_hint() -> None:
    w = start_mismatch_warning(["seed 1, input set 0: output 0: 3 of 300 values differ beyond atol=0.0001 "
                                "rtol=0.0001 (max abs error 0.5)"], "k.py", "k")
    assert w.startswith(STOPPED) and "3 of 300 values differ" in w and "init" not in w.split("htam.toml")[-1]
    assert "htam verify k.py --kernel k" in w
    nan = start_mismatch_warning(["output 0: 9 of 9 values are NaN/Inf where the reference is finite"], "k.cu", "k")
    assert HINT in nan and "C in C = alpha*A*B + beta*C" in nan


def test_a_broken_harness_stops_the_run_instead_of_going_on_unverified(tmp_path: Path) -> None:
    """Regression: an htam.toml whose reference reads a NaN-poisoned output was treated like *no* harness,
    and the loop went on with unverified candidates. A harness that exists but is wrong must stop the run."""
    from htam_core.optimize import OptimizeError

    src = _copy(tmp_path / "src", EMPTY_Y[:1])  # y poisoned, but the reference still reads it
    with pytest.raises(OptimizeError) as err:
        _run(src, tmp_path)
    msg = str(err.value)
    assert "harness of axpby_kernel cannot be used" in msg and "reference" in msg and "htam verify" in msg
    assert not (tmp_path / "out" / "candidates").exists()
