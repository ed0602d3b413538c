"""Apply a code action -> htam.recordApplied -> the outcome is stored in memory and the ranking changes."""

from __future__ import annotations

from htam_core.memory import open_store
from tests.lsp.support import (
    apply_save_and_record,
    apply_text_edits,
    code_actions,
    copy_corpus,
    edits_of,
    hover_until,
    open_file,
    pos_of,
    start,
    wait_for,
)


async def test_apply_record_updates_ranking(client, tmp_path):
    memory = await start(client, tmp_path)
    (path,) = copy_corpus(tmp_path, "transpose_naive.cu")
    text = path.read_text()
    uri = open_file(client, path)
    pos = pos_of(text, "transpose_naive(", offset=2)
    await hover_until(client, uri, pos, "static: compiled only")  # a (compiled static) profile before the step
    before = await code_actions(client, uri, pos)
    step = next(a for a in before if "const __restrict__" in a.title)
    ranking_before = [a.title for a in before if a.data.get("type") == "step"]
    resolved = await client.code_action_resolve_async(step)
    new_text = apply_text_edits(text, edits_of(resolved.edit, uri))
    assert "__restrict__" in new_text

    # what an editor does: apply the edit (didChange), save it, then run the action's command
    result = await apply_save_and_record(client, uri, path, new_text, resolved)
    assert result["step"] == "restrict_pointers"

    rec = await wait_for(lambda: client.recorded, 60, "htam/recorded")
    outcome = rec[0]["outcome"] if isinstance(rec[0], dict) else rec[0].outcome
    status = outcome["status"] if isinstance(outcome, dict) else outcome.status
    measured = outcome["measured"] if isinstance(outcome, dict) else outcome.measured
    assert status == "neutral" and measured is False  # no GPU here: recorded as an unmeasured trial

    with open_store(memory) as store:
        recs = list(store.records())
    assert [r.step for r in recs] == ["restrict_pointers"]
    assert recs[0].outcome.measured is False and recs[0].prefix == ()

    # the ranking changed: the history now ends with restrict_pointers, and the tried strategy carries its
    # (unmeasured) trial in its title; __ldg is no step now: the const __restrict__ inputs take the read-only path
    after = await code_actions(client, uri, pos)
    ranking_after = [a.title for a in after if a.data.get("type") == "step"]
    assert ranking_after != ranking_before
    tried = [a.title for a in after if a.data.get("step") == "restrict_pointers"]
    assert not tried or tried[0].endswith("· prior (1 unmeasured)"), tried
    ldg = [a for a in after if a.data.get("step") == "readonly_cache_loads"]
    assert not ldg, [a.title for a in after]

    md = await hover_until(client, uri, pos, "**Last steps**")
    assert "const __restrict__ pointers — neutral" in md
