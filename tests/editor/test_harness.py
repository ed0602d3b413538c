"""The harness probe never runs the finder (and so the inference, which runs the user's code) in the server's
own process: a broken or busy helper answers "not known yet", and a broken pool is replaced."""

from __future__ import annotations

from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from htam_core.editor import harness as harness_probe
from htam_core.editor.harness import HarnessProbe


class _Pool:
    def __init__(self, exc: BaseException | None) -> None:
        self.exc = exc

    def submit(self, *a, **k) -> Future:
        f: Future = Future()
        if self.exc is None:
            return f  # never answers: the timeout path
        f.set_exception(self.exc)
        return f

    def shutdown(self, **k) -> None:
        pass


@pytest.mark.parametrize("exc", [BrokenProcessPool("helper died"), None, RuntimeError("cannot pickle")])
def test_a_failing_helper_never_falls_back_to_this_process(monkeypatch: pytest.MonkeyPatch, exc) -> None:
    def here(*a, **k):
        raise AssertionError("the finder ran in the server process")

    monkeypatch.setattr(harness_probe, "harness_status", here)
    monkeypatch.setattr(harness_probe, "probe", here)
    helper = HarnessProbe()
    pool = _Pool(exc)
    helper._pool = pool  # type: ignore[assignment]
    assert helper.status("x.py", "k", None, timeout_s=0.05) is None
    assert helper._pool is (None if isinstance(exc, BrokenProcessPool) else pool)


def test_the_helper_answers_with_the_origin(tmp_path: Path) -> None:
    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "zeroconf"
    src = tmp_path / "cu_saxpy_define.cu"
    src.write_text((fixtures / "cu_saxpy_define.cu").read_text())
    helper = HarnessProbe()
    try:
        st = helper.status(str(src), "saxpy", None)
    finally:
        helper.shutdown()
    assert st is not None and st.origin == "inferred from main()" and st.line.startswith("inferred from main()")
    assert st.save_text and "[kernel.saxpy]" in st.save_text and st.spec_path == str(tmp_path / "htam.toml")
