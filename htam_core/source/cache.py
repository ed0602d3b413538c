"""Content-keyed cache of built kernels and launch sites, so that re-building the model after a
keystroke only re-does the work for definitions whose text changed.

Entries are stored with the file position they were built at; a hit returns a copy shifted to
the new position (bytes and lines). Only frames that map linearly onto the file use the cache
(not CUDA decoded from Python strings with escapes). The cache is process-wide and bounded (LRU).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from typing import Any

from htam_core.source.model import ByteSpan, Kernel, LaunchSite

_MAX = 8192
_kernels: OrderedDict[Any, tuple[Kernel, int, int]] = OrderedDict()
_launches: OrderedDict[Any, tuple[LaunchSite, int, int]] = OrderedDict()


def _sh(span: ByteSpan | None, d: int) -> ByteSpan | None:
    return None if span is None or d == 0 else ByteSpan(span.start + d, span.end + d)


def shift_kernel(k: Kernel, dbyte: int, dline: int) -> Kernel:
    """A copy of ``k`` moved by ``dbyte`` bytes and ``dline`` lines, with no launch sites."""
    if dbyte == 0 and dline == 0:
        return replace(k, launch_sites=[])
    params = [replace(p, span=_sh(p.span, dbyte) or p.span) for p in k.params]
    loops = [replace(lp, line=lp.line + dline, span=_sh(lp.span, dbyte) or lp.span) for lp in k.features.loops]
    return replace(
        k,
        start_line=k.start_line + dline,
        end_line=k.end_line + dline,
        span=_sh(k.span, dbyte) or k.span,
        name_span=_sh(k.name_span, dbyte) or k.name_span,
        body_span=_sh(k.body_span, dbyte) or k.body_span,
        params=params,
        features=replace(k.features, loops=loops),
        launch_sites=[],
    )


def get_kernel(key: Any, start_byte: int, start_line: int) -> Kernel | None:
    """Cached kernel for ``key`` moved to ``start_byte``/``start_line`` (file), or None."""
    hit = _kernels.get(key)
    if hit is None:
        return None
    _kernels.move_to_end(key)
    k, b0, l0 = hit
    return shift_kernel(k, start_byte - b0, start_line - l0)


def put_kernel(key: Any, k: Kernel) -> None:
    """Remember kernel ``k`` (built without launch sites) under ``key``."""
    _kernels[key] = (shift_kernel(k, 0, 0), k.span.start, k.start_line)
    if len(_kernels) > _MAX:
        _kernels.popitem(last=False)


def get_launch(key: Any, start_byte: int, line: int) -> LaunchSite | None:
    """Cached launch site for ``key`` moved to ``start_byte``/``line`` (file), or None."""
    hit = _launches.get(key)
    if hit is None:
        return None
    _launches.move_to_end(key)
    s, b0, l0 = hit
    d = start_byte - b0
    if d == 0 and line == l0:
        return replace(s)
    return replace(s, line=s.line + line - l0, span=_sh(s.span, d) or s.span,
                   config_spans={k: _sh(v, d) or v for k, v in s.config_spans.items()})


def put_launch(key: Any, s: LaunchSite) -> None:
    """Remember launch site ``s`` under ``key``."""
    if s.span is None:
        return
    _launches[key] = (s, s.span.start, s.line)
    if len(_launches) > _MAX:
        _launches.popitem(last=False)


def clear() -> None:
    """Empty both caches (tests)."""
    _kernels.clear()
    _launches.clear()
