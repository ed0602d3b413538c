"""Without a GPU, the optimize loop prestarts the Triton interpreter's verification worker for a Triton harness.

Regression: the check read the file's language (``"python"``), never ``"triton"``, so the worker was never
prestarted; it now reads the harness's language traits.
"""

from __future__ import annotations

from typing import Any

import pytest

from htam_core.harness.base import Harness
from htam_core.optimize import evaluate


class _Pool:
    def __init__(self) -> None:
        self.started = 0

    def prestart_in_background(self) -> None:
        self.started += 1


@pytest.mark.parametrize(("language", "started"), [("triton", 1), ("cuda", 0), ("cuda-in-python", 0)])
def test_the_interpreter_worker_is_prestarted_for_a_triton_harness_only(monkeypatch: pytest.MonkeyPatch,
                                                                        language: str, started: int) -> None:
    pool = _Pool()
    asked: list[str] = []

    def get_pool(name: str, **_: Any) -> _Pool:
        asked.append(name)
        return pool

    monkeypatch.setattr(evaluate, "get_pool", get_pool)
    ev = object.__new__(evaluate.Evaluator)  # only the fields prestart reads
    ev.gpu, ev.language = False, "python"
    ev.harness = Harness(kind="spec", path="k.py", kernel="k", language=language)  # type: ignore[arg-type]
    ev.prestart()
    assert pool.started == started and asked == (["verify-interpret"] if started else [])
