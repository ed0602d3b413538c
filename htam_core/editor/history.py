"""History of the steps applied to each kernel in the editor, seeded from the memory store.

A kernel's identity is its :func:`htam_core.memory.fingerprint.kernel_fingerprint` (file path relative to the
project root, and the kernel's :attr:`~htam_core.source.model.Kernel.key`: its name, or its qualified name or
signature where kernels of the file share the name), so that it survives the edits it records and a move of the project; steps recorded
under the older absolute-path id of the same file are found too (:func:`fingerprint_aliases`). The history is the
ranker's prefix (the steps applied so far) and the hover's "Last steps". Those are the steps applied to the file
(by a code action, or written into it by ``htam optimize --apply``): the candidates an ``htam optimize`` run tried on
copies (recorded under the kernel's tried id, :func:`~htam_core.memory.fingerprint.tried_fingerprint`) are kept
apart (:meth:`History.tried`): the memory learns from them, the file's history does not hold them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from htam_core.memory.fingerprint import fingerprint_aliases, is_tried, kernel_fingerprint, kernel_of

__all__ = ["AppliedStep", "History"]


@dataclass
class AppliedStep:
    """One step applied to a kernel, with its outcome once known.

    Attributes:
        step, direction, title: strategy id, direction id, display title.
        time: epoch seconds when it was applied.
        outcome: the recorded :class:`htam_core.memory.Outcome`, or ``None`` while pending.
        pending: why the outcome is not known yet (``"profiling"``, ``"waiting for save"``), or ``None``.
    """

    step: str
    direction: str
    title: str
    time: float
    outcome: Any = None
    pending: str | None = None


class History:
    """Applied steps per kernel fingerprint, oldest first, and apart from them the candidates ``htam optimize``
    tried on copies of the kernel. Thread safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: dict[str, list[AppliedStep]] = {}
        self._tried: dict[str, list[AppliedStep]] = {}
        #: increases whenever a step is added (part of the ranking key)
        self.revision = 0

    def seed(self, records: Iterable[Any], title_of: Any) -> None:
        """Replace the history with the memory store's ``records`` (``Record`` objects); ``title_of(step id)``
        gives the display title. A record under a tried id goes to :meth:`tried`, not to the history."""
        steps: dict[str, list[AppliedStep]] = {}
        tried: dict[str, list[AppliedStep]] = {}
        for r in records:
            into = tried if is_tried(r.fingerprint) else steps  # a candidate of htam optimize is not the file's
            into.setdefault(kernel_of(r.fingerprint), []).append(AppliedStep(r.step, r.direction, title_of(r.step),
                                                                             r.time, r.outcome))
        with self._lock:
            self._steps, self._tried = steps, tried
            self.revision += 1

    def of(self, path: str, kernel_key: str) -> list[AppliedStep]:
        """Applied steps of the kernel, oldest first (a copy), under any of its ids (:func:`fingerprint_aliases`)."""
        with self._lock:
            return self._of(path, kernel_key)

    def _of(self, path: str, kernel_key: str) -> list[AppliedStep]:
        found = [s for fp in fingerprint_aliases(path, kernel_key) for s in self._steps.get(fp, [])]
        return sorted(found, key=lambda s: s.time)

    def tried(self, path: str, kernel_key: str) -> list[AppliedStep]:
        """The candidates ``htam optimize`` tried on copies of the kernel and did not write into its file, oldest
        first (a copy): neither its history nor its ranking prefix."""
        with self._lock:
            found = [s for fp in fingerprint_aliases(path, kernel_key) for s in self._tried.get(fp, [])]
        return sorted(found, key=lambda s: s.time)

    def prefix(self, path: str, kernel_key: str) -> tuple[str, ...]:
        """The strategy ids applied to the kernel, oldest first (the ranker's prefix)."""
        return tuple(s.step for s in self.of(path, kernel_key))

    def add(self, path: str, kernel_key: str, step: AppliedStep) -> list[str]:
        """Append ``step``; returns the prefix before it."""
        with self._lock:
            before = [s.step for s in self._of(path, kernel_key)]
            self._steps.setdefault(kernel_fingerprint(path, kernel_key), []).append(step)
            self.revision += 1
        return before
