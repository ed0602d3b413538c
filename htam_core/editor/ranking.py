"""One ranking per kernel version and profile, read by both the hover and the code-action list.

An :class:`Analysis` is the HTAM ranking of one *kernel version* (:func:`~htam_core.editor.profiles.content_hash`)
with one profile entry (its revision), one history prefix and one memory revision: its :attr:`Analysis.key`.
:class:`Rankings` computes each key once (off the event loop) and keeps, per kernel, the **current** analysis:
the hover and the code-action list both read it, so that they cannot disagree because each ranked on its own.

Requests never rank: :meth:`Rankings.read` answers from the current analysis at once and says whether it is
*fresh* (its key is the one the request would compute now); a stale answer is the latest completed analysis,
and the caller schedules :meth:`Rankings.compute` in a thread.

The hover pins what it showed: when a newer analysis of the *same kernel version* arrives (a profile landed)
within :data:`PIN_S` seconds after a hover showed the current one, it is held back until the next hover, so that
the code-action list the user opens right after reading a hover starts with the step that hover recommended.
An analysis of a changed kernel is never held back. An analysis ranked from an older profile entry of the same
kernel version than the current (or held) one is dropped: it was computed concurrently and came late.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from htam_core.editor.profiles import ProfileEntry
from htam_core.source import incomplete_reason

__all__ = ["PIN_S", "Analysis", "Rankings", "unranked_reason"]

#: How long a hover's analysis stays what the code-action list of the same kernel version shows, at most (s): the
#: next hover, or an edit of the kernel, ends the pin sooner. Long enough for a GPU profile to land in between.
PIN_S = 120.0

def unranked_reason(kernel: Any) -> str | None:
    """Why ``kernel`` gets no ranking, or ``None`` when it is ranked: a half-typed (incomplete) kernel is not
    ranked, since its facts (loops, loads, launch) are those of a partial source and would rank steps for a
    kernel that does not exist yet. One sentence, shared by the hover, the code actions and ``htam suggest``."""
    return incomplete_reason(kernel, "steps are ranked")


#: ``(kernel hash, profile revision, prefix, top, memory revision)``
Key = tuple[str, int, tuple[str, ...], int, int]


@dataclass(frozen=True)
class Analysis:
    """The ranking of one kernel version with one profile.

    Attributes:
        key: see :data:`Key`.
        kernel_hash: the kernel version ranked.
        entry: the profile entry the ranking used (``None``: no profile; the priors and the static
            features decide).
        steps: :class:`htam_core.memory.RankedStep` list, best first.
        made: ``time.monotonic()`` when it was computed.
    """

    key: Key
    kernel_hash: str
    entry: ProfileEntry | None
    steps: list[Any]
    made: float


class Rankings:
    """The analyses of every kernel of an editor session (keyed by kernel fingerprint). Thread safe.

    Args:
        rank: ``rank(kernel, profile, prefix, top, model) -> list[RankedStep]`` (blocking; ``model`` the file or
            ``None``).
        pin_s: see :data:`PIN_S`.
    """

    def __init__(self, rank: Callable[[Any, Any, tuple[str, ...], int, Any], list[Any]],
                 pin_s: float = PIN_S) -> None:
        self._rank = rank
        self.pin_s = pin_s
        self._lock = threading.Lock()
        self._by_key: OrderedDict[tuple[str, Key], Analysis] = OrderedDict()
        self._current: dict[str, Analysis] = {}
        self._held: dict[str, Analysis] = {}
        self._shown: dict[str, tuple[Analysis, float]] = {}

    @staticmethod
    def key(kernel_hash: str, entry: ProfileEntry | None, prefix: tuple[str, ...], top: int,
            memory_revision: int) -> Key:
        """The :data:`Key` of a ranking."""
        return (kernel_hash, entry.revision if entry is not None else 0, tuple(prefix), top, memory_revision)

    def read(self, fingerprint: str, key: Key, *, hover: bool) -> tuple[Analysis | None, bool]:
        """``(current analysis or None, fresh)`` of the kernel, never computing.

        ``hover=True`` adopts an analysis held back by the pin and pins the one returned; the code-action list
        (``hover=False``) reads the pinned one while the pin holds. ``fresh``: nothing newer is needed for
        ``key`` (the analysis of ``key`` is current or held back).
        """
        now = time.monotonic()
        with self._lock:
            held = self._held.get(fingerprint)
            shown = self._shown.get(fingerprint)
            pinned = shown is not None and now - shown[1] < self.pin_s
            if held is not None and (hover or not pinned):
                self._current[fingerprint] = held
                del self._held[fingerprint]
                held = None
            cur = self._current.get(fingerprint)
            if hover and cur is not None:
                self._shown[fingerprint] = (cur, now)
            fresh = cur is not None and (cur.key == key or (held is not None and held.key == key))
            return cur, fresh

    def compute(self, fingerprint: str, kernel: Any, kernel_hash: str, entry: ProfileEntry | None,
                prefix: tuple[str, ...], top: int, memory_revision: int, model: Any = None) -> Analysis:
        """Rank ``kernel`` (blocking; call it off the event loop) unless that key was ranked before, and make it
        the kernel's analysis (held back while a hover's pin holds, see the module docstring). ``model``: the
        file the kernel belongs to, passed to the rank function (the facts of the functions the kernel calls)."""
        key = self.key(kernel_hash, entry, prefix, top, memory_revision)
        with self._lock:
            a = self._by_key.get((fingerprint, key))
        if a is None:
            steps = [] if unranked_reason(kernel) else self._rank(kernel, entry.profile if entry is not None
                                                                   else None, prefix, top, model)
            a = Analysis(key, kernel_hash, entry, steps, time.monotonic())
        with self._lock:
            self._by_key[(fingerprint, key)] = a
            self._by_key.move_to_end((fingerprint, key))
            while len(self._by_key) > 512:
                self._by_key.popitem(last=False)
            self._publish(fingerprint, a)
        return a

    def _publish(self, fingerprint: str, a: Analysis) -> None:
        cur = self._current.get(fingerprint)
        if cur is a:
            return
        newest = self._held.get(fingerprint) or cur
        if newest is not None and newest.kernel_hash == a.kernel_hash and a.key[1] < newest.key[1]:
            return  # ranked from an older profile of this kernel version than one already ranked: it came late
        shown = self._shown.get(fingerprint)
        if (cur is not None and shown is not None and shown[0] is cur and cur.kernel_hash == a.kernel_hash
                and time.monotonic() - shown[1] < self.pin_s):
            self._held[fingerprint] = a
            return
        self._current[fingerprint] = a
        self._held.pop(fingerprint, None)

    def clear(self) -> None:
        """Forget every analysis (the memory was reopened)."""
        with self._lock:
            self._by_key.clear()
            self._current.clear()
            self._held.clear()
            self._shown.clear()
