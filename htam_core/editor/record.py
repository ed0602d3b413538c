"""Recording an applied code action: the kernel is re-profiled in the background and the outcome goes into the
memory as a transition (measured on a GPU; unmeasured when only a static profile exists).

The outcome of the two profiles follows the one rule of :mod:`htam_core.memory.outcome`, shared with the
auto-optimize loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from htam_core.editor.history import AppliedStep, History
from htam_core.editor.memory import EditorMemory
from htam_core.editor.profiles import ProfileCache, ProfileEntry
from htam_core.memory.fingerprint import kernel_fingerprint
from htam_core.memory.outcome import outcome_of
from htam_core.source.model import Kernel
from htam_core.types.profile import Profile

__all__ = ["Recorder", "outcome_from_profiles"]


def outcome_from_profiles(before: Profile | None, after: Profile | None, error: str | None) -> Any:
    """The :class:`htam_core.memory.Outcome` of one applied step from the profiles before and after it.

    * the new kernel failed to compile or run (``error``, or no profile after): ``failed``;
    * the GPU check found it incorrect (``after.extra["correctness"]["correct"]`` false): ``incorrect``;
    * both profiles measured on a GPU: the speedup ``before.median / after.median`` under
      :func:`htam_core.memory.outcome.outcome_of` (win, loss or neutral);
    * otherwise: ``neutral``, not measured (a trial, not evidence).
    """
    if error is not None or after is None:
        return outcome_of(None, failed=True, note=error or "no profile after the step")
    corr = after.extra.get("correctness") if isinstance(after.extra, dict) else None
    if isinstance(corr, dict) and corr.get("correct") is False:
        return outcome_of(None, incorrect=True, note="the GPU check against the reference failed")
    if (before is not None and before.mode == "gpu" and before.time_ms is not None and after.mode == "gpu"
            and after.time_ms is not None and after.time_ms.median > 0 and before.time_ms.median > 0):
        note = f"{before.time_ms.median:.4g} ms -> {after.time_ms.median:.4g} ms on {after.device}"
        if corr is None:
            note += "; correctness not checked (no reference)"
        return outcome_of(before.time_ms.median / after.time_ms.median, note=note)
    why = "no GPU profile before the step" if before is None or before.mode != "gpu" else "static profile after"
    return outcome_of(None, note=f"not measured ({why}); correctness not checked")


class Recorder:
    """Records applied steps (history now, outcome after the re-profile).

    Args:
        profiles, history, memory: the session's parts.
        has_gpu: ``has_gpu()`` says whether profiles are measured on a GPU (then unsaved text waits for a save).
        static_device: the device name of static profiles (``"sm_90 (static)"``).
    """

    def __init__(self, profiles: ProfileCache, history: History, memory: EditorMemory,
                 has_gpu: Callable[[], bool], static_device: Callable[[], str]) -> None:
        self._profiles, self._history, self._memory = profiles, history, memory
        self._has_gpu, self._static_device = has_gpu, static_device
        self._lock = threading.Lock()
        self._pending_save: dict[str, list[Callable[[], None]]] = {}

    def record_applied(self, path: str, kernel: Kernel, step_id: str, text: str, file_language: str, *,
                       before_hash: str | None = None, saved: bool = True,
                       on_done: Callable[[AppliedStep, ProfileEntry | None], None] | None = None) -> AppliedStep:
        """Note that ``step_id`` was applied to ``kernel`` (``text``: the file after the edit) and record the
        outcome in memory once the kernel is re-profiled in the background.

        The profile before the step is the cached one whose content hash is ``before_hash`` (the kernel as the
        code action saw it); without it the outcome is unmeasured. With a GPU and unsaved text (``saved=False``)
        the re-profile waits for :meth:`saved`; without a GPU the editor text is profiled statically right away.

        Raises:
            KeyError: unknown strategy id.
        """
        from htam_core.memory import state_from_profile

        strat = self._memory.strategy(step_id)
        fp = kernel_fingerprint(path, kernel.key)
        entry = self._profiles.entry(path, kernel.key)
        before = entry.profile if entry is not None and before_hash and entry.content_hash == before_hash else None
        applied = AppliedStep(step_id, strat.direction, strat.title, time.time(), None, "profiling")
        prefix = self._history.add(path, kernel.key, applied)
        state = state_from_profile(before)

        def record(new: ProfileEntry) -> None:
            outcome = outcome_from_profiles(before, new.profile, new.error)
            device = (new.profile.device if new.profile is not None else None) or (
                before.device if before is not None else self._static_device())
            self._memory.record(prefix, state, step_id, outcome, fp, device)
            applied.outcome, applied.pending = outcome, None
            if on_done is not None:
                on_done(applied, new)

        def go() -> None:
            self._profiles.start(path, kernel, text, file_language, after=record)

        if self._has_gpu() and not saved:
            applied.pending = "waiting for save (the GPU measures the saved file)"
            with self._lock:
                self._pending_save.setdefault(path, []).append(go)
        else:
            go()
        return applied

    def saved(self, path: str) -> int:
        """The file was saved: start the re-profiles that waited for it. Returns how many started."""
        with self._lock:
            waiting = self._pending_save.pop(path, [])
        for go in waiting:
            go()
        return len(waiting)
