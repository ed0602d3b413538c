"""A softmax that already keeps its max and sum online is refused by the online-softmax steps with that reason
(not "accumulates no max"): the analysis layer's fact :attr:`~htam_core.source.analysis.KernelFacts.online_stats`
(:mod:`htam_core.source.analysis.online`), for CUDA and Triton, written with ``m_new = max(m, x)`` or an in-place
max saved first, ``fmaxf``/``tl.maximum`` or ``?:``. A kernel the step has made online is recognized as online, so
a second application refuses the same way. ``cuda.ldg`` names only read-only inputs in its refusal, never an
output."""

from __future__ import annotations

import pytest
from transform_helpers import fixture_path

from htam_core.editor.audit import already_fixed
from htam_core.source import load, parse_text
from htam_core.source.analysis import analyze
from htam_core.transforms import registry
from htam_core.transforms.base import NotApplicable


@pytest.mark.parametrize(("file", "kernel", "tid", "line"), [
    ("tri_online_softmax.py", "softmax_online", "triton.online_softmax", 13),
    ("tri_online_softmax.py", "softmax_online_lanes", "triton.online_softmax", 30),
    ("online_softmax_variants.cu", "softmax_online_cuda", "cuda.online_softmax", 8),
])
def test_an_online_softmax_is_refused_as_already_online(refuse, file, kernel, tid, line):
    why = refuse(tid, file, kernel)
    assert f"{kernel} is already online: the loop on line {line} keeps the running max m and the sum s" in why
    assert "no separate max pass to merge" in why
    assert "accumulates no" not in why


@pytest.mark.parametrize(("file", "kernel", "tid"), [
    ("tri_rows.py", "softmax_three_pass", "triton.online_softmax"),
    ("tri_rows.py", "logsumexp_rows", "triton.online_softmax"),
    ("softmax_variants.cu", "softmax_if_double", "cuda.online_softmax"),
    ("softmax_row_per_thread.cu", "softmax_row_per_thread", "cuda.online_softmax"),
])
def test_what_the_step_makes_is_online_and_is_not_merged_twice(cand, file, kernel, tid):
    model = load(str(fixture_path(file)))
    assert analyze(model, model.kernel(kernel)).online_stats == ()  # two passes before
    (c, *_) = cand(tid, file, kernel)
    after = parse_text(c.new_text, model.file_language, model.path)
    assert analyze(after, after.kernel(kernel)).online_stats != ()
    again = registry.propose(tid, after, after.kernel(kernel))
    assert isinstance(again, NotApplicable) and "is already online" in again.reason


def test_the_audit_knows_a_triton_online_softmax_is_in_its_fixed_form():
    model = load(str(fixture_path("tri_online_softmax.py")))
    why = already_fixed(analyze(model, model.kernel("softmax_online")))
    assert why is not None and "keeps the running max m" in why and "Triton program" in why
    cuda = load(str(fixture_path("online_softmax_variants.cu")))
    # thread per row: online, but the row is not split across lanes, so warp per row is still left
    assert already_fixed(analyze(cuda, cuda.kernel("softmax_online_cuda"))) is None


def test_ldg_names_only_read_only_inputs(refuse, cand):
    (c,) = cand("cuda.ldg", "early_return_variants.cu", "mm_early_return")
    assert sorted(c.params["params"]) == ["A", "B"]  # the read-only inputs; the output C never
    assert "every pointer parameter is written (x)" in refuse("cuda.ldg", "early_return_variants.cu",
                                                               "scale_not_return")
