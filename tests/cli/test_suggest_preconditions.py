"""``htam suggest`` ranks only strategies whose preconditions hold on the analysis layer's facts.

Regression: for an autotuned fp16 Triton matmul it ranked "retune num_warps and num_stages" and "retune
BLOCK_SIZE" first although the kernel is under ``@triton.autotune``, "exp2 with a folded log2(e)" although the
kernel has no ``exp``, and "tl.dot input precision" although the operands are fp16. A counter-fixture (fixed
launch, fp32 ``tl.dot``, ``tl.exp``) shows that the same strategies are still ranked where they apply, so the
test fails if they were simply dropped.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import htam_core.profile.api as profile_api
from htam_core.cli.main import main
from htam_core.memory.facts import compute_facts
from htam_core.source import load
from htam_core.types.profile import Bottleneck, Profile

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "preconditions"
CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
WRONG_FOR_AUTOTUNED_FP16 = {"triton_warps_stages", "triton_block_size", "triton_exp2", "triton_tf32_dot"}


@pytest.fixture(autouse=True)
def occupancy_profile(monkeypatch):
    """The issue's profile (occupancy-limited, static): the launch-configuration priors are the highest."""
    monkeypatch.setattr(profile_api, "profile_kernel", lambda path, name, static=None, **kw: Profile(
        name, bottleneck=Bottleneck("occupancy-limited"), warnings=["static profile (test)"]))


def _suggest(capsys, tmp_path: Path, path: Path, kernel: str) -> list[dict]:
    assert main(["suggest", str(path), "--kernel", kernel, "--json", "--top", "40",
                 "--memory", str(tmp_path / "m.sqlite3")]) == 0
    return json.loads(capsys.readouterr().out)


def test_autotuned_fp16_matmul_ranks_no_retune_exp2_or_tf32(tmp_path: Path, capsys) -> None:
    steps = _suggest(capsys, tmp_path, FIX / "matmul_autotuned_fp16.py", "matmul_fp16_kernel")
    ranked = [s["strategy"] for s in steps]
    assert not WRONG_FOR_AUTOTUNED_FP16 & set(ranked), ranked
    assert "grouped_program_order" in ranked  # a step that does apply is still there
    for s in steps:  # each step says whether it can be made, and why not
        assert isinstance(s["makes_edit"], bool) and isinstance(s["advice"], bool)
        assert (s["refusal"] is None) == s["makes_edit"], s
        assert s["advice"] == (s["transform"] is None)


def test_the_same_strategies_rank_where_their_preconditions_hold(tmp_path: Path, capsys) -> None:
    ranked = {s["strategy"] for s in _suggest(capsys, tmp_path, FIX / "matmul_fp32_softmax.py",
                                              "scores_softmax_kernel")}
    assert WRONG_FOR_AUTOTUNED_FP16 <= ranked, sorted(ranked)


def test_preconditions_read_the_analysis_layer() -> None:
    k = load(FIX / "matmul_autotuned_fp16.py").kernel("matmul_fp16_kernel")
    f = compute_facts(k.features, k.language, None, k)
    assert (f["is_autotuned"], f["uses_exp"], f["dot_fp32_inputs"], f["dot_input_dtypes"]) == (
        True, False, False, ["float16"])
    k = load(FIX / "matmul_fp32_softmax.py").kernel("scores_softmax_kernel")
    f = compute_facts(k.features, k.language, None, k)
    assert (f["is_autotuned"], f["uses_exp"], f["dot_fp32_inputs"], f["dot_input_dtypes"]) == (
        False, True, True, ["float32"])
    # operands loaded without a cast: their dtype is the caller's, unknown here; the strategy stays rankable
    k = load(CORPUS / "matmul_autotune.py").kernel("mm_kernel")
    f = compute_facts(k.features, k.language, None, k)
    assert f["is_autotuned"] is True and f["dot_fp32_inputs"] is None and f["dot_input_dtypes"] == []
    # without the kernel the analysis facts are unknown, not false
    f = compute_facts(k.features, k.language, None, None)
    assert f["is_autotuned"] is None and f["dot_fp32_inputs"] is None


def test_json_rationale_is_whole(tmp_path: Path, capsys) -> None:
    """Regression: ``suggest --json`` cut the rationale at 110 characters ("..."), and a guidance sentence that
    holds an ellipsis was cut inside it."""
    steps = _suggest(capsys, tmp_path, CORPUS / "matmul_autotune.py", "mm_kernel")
    persistent = next(s for s in steps if s["strategy"] == "triton_persistent_tiles")
    assert persistent["rationale"].endswith("tile_id = pid, pid + NUM_SMS, ..."), persistent["rationale"]
    long = [s for s in steps if len(s["rationale"]) > 140]
    assert long, "no long rationale: the test would not see a cut"
    for s in long:
        assert not s["rationale"].endswith(("...", "..")) or s["strategy"] == "triton_persistent_tiles", s
