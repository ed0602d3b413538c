"""Rankings: one computation per kernel version and profile, one current analysis read by hover and code
actions, and the hover's pin (a regression: hover and list disagreed after a profile landed)."""

from __future__ import annotations

from htam_core.editor.profiles import ProfileEntry
from htam_core.editor.ranking import Rankings


class _Ranker:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __call__(self, kernel, profile, prefix, top, model=None):
        self.calls.append((kernel, profile, prefix, top))
        return [f"{kernel}-{'profiled' if profile is not None else 'prior'}-{len(self.calls)}"]


def _entry(rev: int, chash: str = "h1") -> ProfileEntry:
    e = ProfileEntry("k.py", "k", chash, profile=object())  # type: ignore[arg-type]
    e.revision = rev
    return e


def test_one_computation_per_key_and_both_readers_share_it():
    rank = _Ranker()
    r = Rankings(rank)
    key = Rankings.key("h1", None, (), 5, 1)
    assert r.read("fp", key, hover=True) == (None, False)
    a = r.compute("fp", "k", "h1", None, (), 5, 1)
    again = r.compute("fp", "k", "h1", None, (), 5, 1)
    assert again is a and len(rank.calls) == 1
    hover, fresh_h = r.read("fp", key, hover=True)
    actions, fresh_a = r.read("fp", key, hover=False)
    assert hover is a and actions is a and fresh_h and fresh_a
    other = Rankings.key("h1", None, ("restrict_pointers",), 5, 1)
    assert r.read("fp", other, hover=False) == (a, False)  # stale: the latest completed, not computed


def test_profile_landing_after_a_hover_does_not_change_the_list_until_the_next_hover():
    rank = _Ranker()
    r = Rankings(rank, pin_s=60)
    shown = r.compute("fp", "k", "h1", None, (), 5, 1)
    assert r.read("fp", Rankings.key("h1", None, (), 5, 1), hover=True)[0] is shown
    landed = _entry(7)
    newer = r.compute("fp", "k", "h1", landed, (), 5, 1)  # the background profile of the same version landed
    assert newer is not shown and newer.steps != shown.steps
    want = Rankings.key("h1", landed, (), 5, 1)
    listed, fresh = r.read("fp", want, hover=False)
    assert listed is shown and fresh  # the list starts with what the hover recommended; nothing to compute
    assert r.read("fp", want, hover=True)[0] is newer  # the next hover shows the profile and its ranking
    assert r.read("fp", want, hover=False)[0] is newer  # and the list follows it


def test_pin_expires_and_never_holds_a_changed_kernel():
    r = Rankings(_Ranker(), pin_s=0.0)
    shown = r.compute("fp", "k", "h1", None, (), 5, 1)
    r.read("fp", Rankings.key("h1", None, (), 5, 1), hover=True)
    newer = r.compute("fp", "k", "h1", _entry(8), (), 5, 1)
    assert r.read("fp", newer.key, hover=False)[0] is newer  # pin of 0 s: already expired
    r2 = Rankings(_Ranker(), pin_s=60)
    r2.compute("fp", "k", "h1", None, (), 5, 1)
    r2.read("fp", Rankings.key("h1", None, (), 5, 1), hover=True)
    edited = r2.compute("fp", "k", "h2", None, (), 5, 1)  # the kernel itself changed
    assert r2.read("fp", edited.key, hover=False)[0] is edited
    assert shown.key != edited.key


def test_keys_use_profile_revisions_not_object_identity():
    a, b = _entry(1), _entry(2)
    assert Rankings.key("h", a, (), 5, 0) != Rankings.key("h", b, (), 5, 0)
    assert Rankings.key("h", None, (), 5, 0)[1] == 0


def test_an_incomplete_kernel_is_not_ranked():
    """A half-typed kernel gets an empty analysis (no code action, no recommendation), like `htam suggest`."""
    from htam_core.editor.ranking import unranked_reason
    from htam_core.source import parse_text
    from tests.support.half_typed import TRITON

    kernels = {k.name: k for k in parse_text(TRITON, "python").kernels}
    rank = _Ranker()
    r = Rankings(rank)
    assert r.compute("fp", kernels["half"], "h1", None, (), 5, 1).steps == [] and rank.calls == []
    assert unranked_reason(kernels["half"]) and unranked_reason(kernels["second"]) is None
    assert r.compute("fp2", kernels["second"], "h2", None, (), 5, 1).steps and len(rank.calls) == 1


def test_a_ranking_of_an_older_profile_that_comes_late_never_replaces_a_newer_one():
    # the editor's first request ranks with the source-only stage it just published, while the analysis after
    # the file opened was still ranking the same kernel version without a profile: that one ends last
    r = Rankings(_Ranker())
    newer = r.compute("fp", "k", "h1", _entry(7), (), 5, 1)
    late = r.compute("fp", "k", "h1", None, (), 5, 1)
    assert late is not newer
    assert r.read("fp", Rankings.key("h1", _entry(7), (), 5, 1), hover=True) == (newer, True)
    changed = r.compute("fp", "k2", "h2", None, (), 5, 1)  # another kernel version always replaces it
    assert r.read("fp", Rankings.key("h2", None, (), 5, 1), hover=True) == (changed, True)
