"""The GPU oracle check of an inferred harness, shared by the device-grid tests: the start file verified against
itself must be correct, and a copy with a wrong edit must be refused."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from htam_core.harness.infer_cuda import infer_cuda_harness


def same_and_wrong(tmp_path: Path, src: Path, kernel: str, wrong: Callable[[str], str]) -> tuple[dict[str, Any],
                                                                                                 dict[str, Any]]:
    """``(verdict of the unchanged start, verdict of the start edited by wrong)``, each from
    :func:`htam_core.verify.run.verify_harness` on the harness inferred from ``src`` (copied into ``tmp_path``).
    Needs a GPU. Raises AssertionError when ``wrong`` leaves the text as it is (the check would prove nothing)."""
    from htam_core.verify.run import verify_harness  # the worker's verification: imported by GPU tests only

    start = tmp_path / src.name
    shutil.copy(src, start)
    h = infer_cuda_harness(start, kernel)
    out = []
    for name, edit in (("same", lambda t: t), ("wrong", wrong)):
        f = tmp_path / name / src.name
        f.parent.mkdir()
        text = edit(start.read_text())
        assert name == "same" or text != start.read_text(), "the wrong edit changed nothing"
        f.write_text(text)
        out.append(verify_harness(dataclasses.replace(h, path=str(f)).to_json()))
    return out[0], out[1]
