"""How an editor auto-optimize run ends: nothing applied when cancelled, refused, or when the document changed; one
edit of the start text otherwise; the messages say what happened and where the report is."""

from __future__ import annotations

from types import SimpleNamespace

from htam_core.editor import autooptimize
from htam_core.transforms.base import apply_edits

START = "__global__ void k(float* x) { x[0] = 1.0f; }\n"
BEST = "__global__ void k(float* __restrict__ x) { x[0] = 1.0f; }\n"


def _result(**kw):
    base = dict(best_speedup=1.5, measured=True, steps=[object(), object()], report_md="/r/report.md",
                report_dir="/r", summary="Two steps.", cancelled=False, changed=True, best_text=BEST,
                best_path="/r/best.cu", apply_refusal=lambda: None)
    base.update(kw)
    return SimpleNamespace(**base)


def test_a_cancelled_run_applies_nothing_and_counts_its_steps():
    """Regression: the message printed the list of steps instead of their number."""
    end = autooptimize.conclude(_result(cancelled=True), "k", START, cancelled=False, doc_changed=False)
    assert end.edit is None and end.reply["cancelled"] and not end.reply["applied"]
    assert "cancelled after 2 step(s)" in end.message and "/r/report.md" in end.message
    assert autooptimize.conclude(_result(), "k", START, cancelled=True, doc_changed=False).reply["cancelled"]


def test_a_refused_or_overtaken_best_is_not_applied():
    refused = autooptimize.conclude(_result(apply_refusal=lambda: "nothing was measured"), "k", START,
                                    cancelled=False, doc_changed=False)
    assert refused.edit is None and "not applied: nothing was measured" in refused.message
    assert "/r/best.cu" in refused.message
    changed = autooptimize.conclude(_result(), "k", START, cancelled=False, doc_changed=True)
    assert changed.edit is None and changed.warning and "changed during auto-optimize" in changed.message


def test_the_best_is_one_edit_of_the_start_text_and_the_answer_decides_the_message():
    end = autooptimize.conclude(_result(), "k", START, cancelled=False, doc_changed=False)
    assert end.edit is not None and apply_edits(START, [end.edit]) == BEST
    done = autooptimize.after_apply(end, _result(), applied=True, failure=None)
    assert done.reply["applied"] and done.edit is None and "applied as one edit" in done.message
    refused = autooptimize.after_apply(end, _result(), applied=False, failure="read-only")
    assert not refused.reply["applied"] and refused.warning and "refused the edit (read-only)" in refused.message
    same = autooptimize.conclude(_result(changed=False, best_text=START), "k", START, cancelled=False,
                                 doc_changed=False)
    assert same.edit is None and "no better candidate; file unchanged" in same.message


def test_progress_line():
    ev = SimpleNamespace(step=1, total=4, direction="memory_access", strategy="restrict", best_speedup=None,
                         message="")
    assert autooptimize.progress_line(ev) == ("step 1/4 · memory_access → restrict · best none yet", 25)
