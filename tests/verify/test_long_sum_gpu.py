"""The mse_loss pair on a GPU (run by the lead; skipped without a GPU or without the pair): the naive start sums
2^25 terms with one float ``atomicAdd`` each and stagnates, so its warp-shuffle expert differs from it; checked
against the float64 reference of the start, the expert is accepted and a wrong variant of it is still refused.

The pair's folder is ``$HTAM_MSE_PAIR`` when set, else the committed
``bench/results/textbook-trial6-h100-2026-12-06/pairs/mse_loss``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from htam_core.verify.check import resolve_harness, verify_candidate
from htam_core.verify.long_sum_rule import FLOAT64_REFERENCE

pytestmark = pytest.mark.gpu

_COMMITTED = Path(__file__).resolve().parents[2] / "bench" / "results" / "textbook-trial6-h100-2026-12-06" / "pairs" \
    / "mse_loss"


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    src = Path(os.environ.get("HTAM_MSE_PAIR") or _COMMITTED)
    if not (src / "naive.cu").is_file() or not (src / "expert.cu").is_file():
        pytest.skip(f"the mse_loss pair is not at {src}")
    shutil.copy(src / "naive.cu", tmp_path / "naive.cu")
    shutil.copy(src / "expert.cu", tmp_path / "expert.cu")
    return tmp_path / "naive.cu", tmp_path / "expert.cu"


def _verify(cand: Path, start: Path):
    return verify_candidate(cand, resolve_harness(cand, kernel="mse_loss", against=str(start)), interpret=False,
                            timeout_s=600)


def test_the_expert_is_accepted_against_the_float64_reference(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    naive, expert = _pair(tmp_path)
    v = _verify(expert, naive)
    assert v.accepted and v.verified_on == "gpu", v.to_json()
    assert any(FLOAT64_REFERENCE in m for m in v.messages), v.messages


def test_a_wrong_expert_is_refused(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    naive, expert = _pair(tmp_path)
    text = expert.read_text()
    assert "atomicAdd(loss, acc / (float)n)" in text
    wrong = tmp_path / "wrong.cu"
    wrong.write_text(text.replace("atomicAdd(loss, acc / (float)n)", "atomicAdd(loss, 1.25f * acc / (float)n)"))
    v = _verify(wrong, naive)
    assert not v.accepted and "mismatch" in v.refused_by, v.to_json()
