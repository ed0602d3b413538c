"""Two-stage profiles in the editor's profile cache: each stage is published, the hover shows the first stage at
once and the second when it lands, a change of the kernel cancels the running profile, a save debounce
coalesces requests. The stage function is injected (:data:`htam_core.editor.profiles.StagesFn`)."""

from __future__ import annotations

import threading
import time

from htam_core.editor import ProfileView, render
from htam_core.editor.profiles import ProfileCache, ProfileEntry, Stage
from htam_core.source import parse_text
from htam_core.types.profile import Bottleneck, Profile, TimeStats

SRC = "__global__ void k(float* x, int n) {{ int i = threadIdx.x; if (i < n) x[i] = {c} * x[i]; }}\n"


def _kernel(c: int = 2):
    return parse_text(SRC.format(c=c), "cuda").kernels[0]


def _timed(stage: str, **extra) -> Profile:
    return Profile("k", mode="gpu", device="NVIDIA H200", bottleneck=Bottleneck("memory-bound"),
                   time_ms=TimeStats(0.010, 0.011, 0.013), harness="htam.toml [k]",
                   extra={"timing": {"method": "cuda-graph", "cupti_ms": 0.0108, "agreement": 0.018}, "stage": stage,
                          **extra})


class _TwoStages:
    """A stage function whose second stage waits for ``release`` (an ncu run, say) and records what ran."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.ran: list[tuple[str, str]] = []
        self.second_started = threading.Event()

    def __call__(self, path, name, text, lang, cancelled):
        self.ran.append(("timer", text))
        yield Stage("timer", _timed("timer"), "disk", pending="Nsight Compute counters")
        self.second_started.set()
        self.release.wait(10)
        self.ran.append(("counters", text))
        p = _timed("counters")
        p.sol = {"memory_pct": 81.0}
        yield Stage("counters", p, "disk")


def _collect(cache: ProfileCache) -> list[ProfileEntry]:
    got: list[ProfileEntry] = []
    cache.subscribe(got.append)
    return got


def _wait(cond, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_first_stage_is_published_at_once_and_the_second_updates_it():
    fn = _TwoStages()
    cache = ProfileCache(stages=fn)
    got = _collect(cache)
    firsts: list[ProfileEntry] = []
    done: list[ProfileEntry] = []
    k = _kernel()
    assert cache.start("/f.cu", k, SRC.format(c=2), "cuda", on_first=firsts.append, on_done=done.append)
    fn.second_started.wait(5)
    _wait(lambda: len(got) == 1)
    first = got[0]
    assert (first.stage, first.pending) == ("timer", "Nsight Compute counters") and firsts == [first]
    view = cache.view("/f.cu", k)
    assert view.running and view.entry is first and not done
    md = "\n".join(render.profile_lines(view))
    assert "Nsight Compute counters follow…" in md
    assert "timer: cuda-graph · CUPTI 0.0108 ms (+1.8%)" in md and "| harness | htam.toml [k] |" in md
    fn.release.set()
    _wait(lambda: len(got) == 2 and not cache.busy)
    second = got[1]
    assert second.stage == "counters" and second.pending is None and second.revision > first.revision
    assert done == [second] and firsts == [first]
    md = "\n".join(render.profile_lines(cache.view("/f.cu", k)))
    assert "follow" not in md and "SOL memory 81%" in md
    cache.close()


def test_listeners_see_the_kernel_still_profiling_until_its_last_stage():
    fn = _TwoStages()
    fn.release.set()
    cache = ProfileCache(stages=fn)
    busy: list[tuple[str, bool]] = []
    cache.subscribe(lambda e: busy.append((e.stage, cache.busy)))  # the status bar reads ``busy`` here
    cache.start("/f.cu", _kernel(), SRC.format(c=2), "cuda")
    _wait(lambda: len(busy) == 2)
    assert busy == [("timer", True), ("counters", False)]
    cache.close()


def test_a_changed_kernel_cancels_the_running_profile_and_its_later_stage():
    fn = _TwoStages()
    cache = ProfileCache(stages=fn)
    got = _collect(cache)
    old, new = _kernel(2), _kernel(3)
    cache.start("/f.cu", old, SRC.format(c=2), "cuda")
    fn.second_started.wait(5)
    assert cache.cancel_changed("/f.cu", [new]) == 1  # the edit replaced the version being profiled
    assert cache.cancel_changed("/f.cu", [new]) == 0
    fn.release.set()
    _wait(lambda: not cache.busy)
    assert [e.stage for e in got] == ["timer"]  # the counters of the old version are dropped
    assert fn.ran == [("timer", SRC.format(c=2)), ("counters", SRC.format(c=2))]
    assert cache.view("/f.cu", new).stale
    cache.close()


def test_a_new_version_supersedes_the_running_one_and_its_waiters_get_the_new_profile():
    fn = _TwoStages()
    cache = ProfileCache(stages=fn)
    got = _collect(cache)
    done: list[ProfileEntry] = []
    cache.start("/f.cu", _kernel(2), SRC.format(c=2), "cuda", on_done=done.append)
    fn.second_started.wait(5)
    assert cache.start("/f.cu", _kernel(3), SRC.format(c=3), "cuda")
    fn.release.set()
    _wait(lambda: not cache.busy and len(done) == 1)
    texts = [t for _, t in fn.ran]
    assert texts.count(SRC.format(c=3)) == 2  # both stages of the new version ran
    assert done[0].stage == "counters" and done[0].content_hash == got[-1].content_hash
    assert all(e.content_hash == got[-1].content_hash for e in got[1:])
    cache.close()


def test_save_debounce_runs_only_the_last_request():
    ran: list[str] = []

    def stages(path, name, text, lang, cancelled):
        ran.append(text)
        yield Stage("compiled", Profile("k", mode="static"), "disk")

    cache = ProfileCache(stages=stages)
    for c in (2, 3, 4):
        assert cache.start("/f.cu", _kernel(c), SRC.format(c=c), "cuda", delay=0.3)
        assert cache.busy and not ran  # waiting out the debounce
    _wait(lambda: not cache.busy)
    assert ran == [SRC.format(c=4)]
    cache.close()


def test_a_failed_later_stage_keeps_the_first_with_the_reason():
    def stages(path, name, text, lang, cancelled):
        yield Stage("timer", _timed("timer"), "disk", pending="Nsight Compute counters")
        raise RuntimeError("ncu: ERR_NVGPUCTRPERM")

    cache = ProfileCache(stages=stages)
    got = _collect(cache)
    cache.start("/f.cu", _kernel(), SRC.format(c=2), "cuda")
    _wait(lambda: not cache.busy and len(got) == 2)
    last = got[1]
    assert last.error is None and last.pending is None and last.profile.time_ms is not None
    assert last.profile.warnings[0] == "Nsight Compute counters not collected: ncu: ERR_NVGPUCTRPERM"
    cache.close()


def test_one_stage_functions_still_work():
    cache = ProfileCache(lambda path, name, text, lang: (Profile("k", mode="static"), "buffer"))
    got = _collect(cache)
    cache.start("/f.cu", _kernel(), SRC.format(c=2), "cuda")
    _wait(lambda: not cache.busy and got)
    assert (got[0].stage, got[0].pending, got[0].source) == ("profile", None, "buffer")
    cache.close()


def test_source_only_stage_is_labelled_honestly():
    p = Profile("k", mode="static", device="sm_90 (source only)", bottleneck=Bottleneck("memory-bound"),
                extra={"stage": "source"}, warnings=["source-only profile: not compiled yet (...)"])
    e = ProfileEntry("/f.cu", "k", "h", profile=p, stage="source", pending="compile (registers, spills, occupancy)")
    md = "\n".join(render.profile_lines(ProfileView(e, False, True)))
    assert "static: from the source only, not compiled yet" in md
    assert "compile (registers, spills, occupancy) follow…" in md and "registers | unknown" in md
    # regression (new-user trial): a just-opened file's first hover said "re-profiling…" beside the stage that
    # follows, although nothing had been profiled before
    assert "re-profiling" not in md
