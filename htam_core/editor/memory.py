"""The editor's handle on the HTAM memory: knowledge base, SQLite store and ranker behind one lock, and the
Markdown summary of the HTG that ``htam.showMemory`` shows.

One SQLite connection serves the whole editor session, so every access goes through :attr:`EditorMemory.lock`
(the ranking thread, the profile thread that records outcomes, the command threads).
"""

from __future__ import annotations

import math
import threading
from typing import Any

from htam_core.source.model import Kernel, SourceModel
from htam_core.types.profile import Profile

__all__ = ["EditorMemory"]


class EditorMemory:
    """Knowledge base, store and ranker of one editor session.

    Attributes:
        kb, store, ranker: loaded by :meth:`open` (``store`` is ``None`` when it cannot be opened: the ranker
            then ranks from the priors only, and :attr:`error` says why).
        revision: increases on every write through :meth:`record` and every :meth:`open` (part of the ranking
            key; records written by other processes are picked up at the next ranking).
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.kb: Any = None
        self.store: Any = None
        self.ranker: Any = None
        self.error: str | None = None
        self.revision = 0

    def open(self, path: str | None) -> list[Any]:
        """(Re)open the store at ``path`` (``None``: ``$HTAM_MEMORY`` or the user data dir) and build the ranker
        (numpy arithmetic; torch is never loaded). Returns the stored records (to seed the history)."""
        from htam_core.memory import MemoryStoreError, Ranker, load_knowledge, open_store

        with self.lock:
            if self.kb is None:
                self.kb = load_knowledge()
            if self.store is not None:
                self.store.close()
            self.store, self.error = None, None
            try:
                self.store = open_store(path, kb=self.kb)
            except MemoryStoreError as exc:
                self.error = str(exc)
            self.ranker = Ranker(self.kb, self.store)
            self.revision += 1
            return list(self.store.records()) if self.store is not None else []

    def title(self, step_id: str) -> str:
        """Display title of a strategy id (the id itself when unknown)."""
        kb = self.kb
        return kb.strategy(step_id).title if kb is not None and kb.has_strategy(step_id) else step_id

    def strategy(self, step_id: str) -> Any:
        """The knowledge base's strategy ``step_id``.

        Raises:
            KeyError: unknown id (or the memory is not loaded).
        """
        if self.kb is None or not self.kb.has_strategy(step_id):
            raise KeyError(f"unknown strategy {step_id!r}")
        return self.kb.strategy(step_id)

    def rank(self, kernel: Kernel, profile: Profile | None, prefix: tuple[str, ...], top: int,
             model: SourceModel | None = None) -> list[Any]:
        """:meth:`htam_core.memory.Ranker.rank` for ``kernel`` of ``model`` (the file, or ``None``; blocking: call
        it off the event loop)."""
        from htam_core.memory import state_from_profile

        with self.lock:
            return self.ranker.rank(state_from_profile(profile), list(prefix), kernel.features, kernel.language,
                                    profile, top=top, kernel=kernel, model=model)

    def record(self, prefix: list[str], state: dict[str, float], step: str, outcome: Any, fingerprint: str,
               device: str) -> None:
        """Store one record; a store failure is kept in :attr:`error`, never raised."""
        with self.lock:
            if self.store is not None:
                try:
                    self.store.record(prefix, state, step, outcome, fingerprint, device)
                except Exception as exc:  # noqa: BLE001 - a store failure is reported, not raised
                    self.error = f"could not record the step in {self.store.path}: {exc}"
            self.revision += 1

    def adopt(self, uids: list[str]) -> list[Any]:
        """Make the records ``uids`` of an ``htam optimize`` run steps of their kernel's file
        (:meth:`~htam_core.memory.store.Store.adopt`: its best was applied to the file); returns the stored records
        (to seed the history again). A store failure is kept in :attr:`error`, never raised."""
        with self.lock:
            if self.store is None:
                return []
            try:
                self.store.adopt(uids)
            except Exception as exc:  # noqa: BLE001 - a store failure is reported, not raised
                self.error = f"could not mark the applied steps in {self.store.path}: {exc}"
            self.revision += 1
            return list(self.store.records())

    def close(self) -> None:
        """Close the store."""
        with self.lock:
            if self.store is not None:
                self.store.close()
                self.store = None

    def markdown(self, top: int = 10) -> str:
        """A Markdown summary of the HTG: record count, per-direction statistics and the strongest strategy
        transitions (edges with the largest mean log speedup, at least one valued record)."""
        with self.lock:
            if self.store is None:
                return f"**HTAM memory unavailable**: {self.error or 'no store'}"
            n = self.store.count()
            dirs = self.store.node_stats("direction")
            strats = self.store.node_stats("strategy")
            edges = self.store.edge_stats("strategy")
            path = self.store.path
        kb = self.kb

        def title(sid: str) -> str:
            return "start" if sid == "<start>" else self.title(sid)

        def gain(s: Any) -> str:
            return f"{math.exp(s.mean) - 1:+.0%}" if s.n_values else "not measured"

        lines = [f"## HTAM memory: {n} record{'s' if n != 1 else ''}", "", f"Store: `{path}`", "",
                 "| Direction | trials | wins | failures | mean gain |", "|---|---|---|---|---|"]
        for d in kb.directions:
            s = dirs.get(d.id)
            if s is None:
                lines.append(f"| {d.name} | 0 | 0 | 0 | prior only |")
            else:
                lines.append(f"| {d.name} | {s.count} | {s.wins} | {s.failures} | {gain(s)} |")
        valued = [(k, s) for k, s in edges.items() if s.n_values]
        valued.sort(key=lambda kv: (-kv[1].mean, -kv[1].count))
        lines += ["", "### Strongest transitions", ""]
        if not valued:
            lines.append("No measured transition yet: apply steps on a GPU machine to learn some.")
        for (src, dst), s in valued[:top]:
            lines.append(f"- after **{title(src)}**, **{title(dst)}**: {gain(s)} mean, paid off {s.wins} of "
                         f"{s.count}" + (f", failed {s.failures}" if s.failures else ""))
        worst = [kv for kv in valued if kv[1].mean < 0][-3:]
        if worst:
            lines += ["", "### Transitions that hurt", ""]
            for (src, dst), s in reversed(worst):
                lines.append(f"- after **{title(src)}**, **{title(dst)}**: {gain(s)} mean over {s.count}")
        tried = sorted(strats.items(), key=lambda kv: -kv[1].count)[:top]
        if tried:
            lines += ["", "### Most tried strategies", ""]
            lines += [f"- {title(k)}: {s.count} trials, {s.wins} wins, {gain(s)}" for k, s in tried]
        return "\n".join(lines) + "\n"
