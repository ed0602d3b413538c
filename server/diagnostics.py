"""Diagnostics for profile facts worth attention, at each kernel's name: register spills, low theoretical
occupancy, Nsight Compute rules that fired, and profile failures (source ``htam``); and where a half-typed
kernel (or a file that does not parse) first fails to parse (code ``does-not-parse``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from types import MappingProxyType
from typing import TYPE_CHECKING

from lsprotocol import types

from htam_core.editor import SourceModel, incomplete_reason, problem_message, render
from htam_server.convert import current_name_range, position
from htam_server.documents import OpenDocument

if TYPE_CHECKING:
    from htam_server.server import HtamLanguageServer

_SEVERITY: Mapping[str, types.DiagnosticSeverity] = MappingProxyType(
    {"warning": types.DiagnosticSeverity.Warning, "information": types.DiagnosticSeverity.Information})


def collect(ls: HtamLanguageServer, od: OpenDocument) -> list[types.Diagnostic]:
    """Diagnostics of every kernel of ``od`` that has a profile (stale ones say so), and where it does not parse."""
    if od.path is None or not od.served():
        return []
    model = od.snapshot_model  # the latest parse (diagnostics are published after each one)
    if model is None:
        return []
    enc = ls.encoding()
    out = parse_diagnostics(od, model, enc)
    return out if model.stale else out + _profile_diagnostics(ls, od, model, enc)


def _profile_diagnostics(ls: HtamLanguageServer, od: OpenDocument, model: SourceModel, enc: str) -> list[types.Diagnostic]:
    """The profile facts of each kernel of ``model`` that has a profile."""
    out: list[types.Diagnostic] = []
    for k in model.kernels:
        view = ls.session.profile_view(od.path, k)
        e = view.entry
        if e is None:
            continue
        rng = current_name_range(od.buf, k, enc)
        suffix = " (stale profile: the kernel changed since)" if view.stale else ""
        if e.profile is None:
            out.append(types.Diagnostic(range=rng, message=f"HTAM: profiling {k.key} failed: {e.error}{suffix}",
                                        severity=types.DiagnosticSeverity.Information, source="htam",
                                        code="profile-failed"))
            continue
        for sev, code, msg in render.profile_facts(e.profile):
            out.append(types.Diagnostic(range=rng, message=f"{msg}{suffix}", severity=_SEVERITY[sev],
                                        source="htam", code=code))
    return out


def parse_diagnostics(od: OpenDocument, model: SourceModel, enc: str) -> list[types.Diagnostic]:
    """One diagnostic at the first parse problem of each half-typed kernel (the line ``htam profile`` and
    ``htam suggest`` give, :func:`htam_core.source.incomplete_reason`), or of the file when it does not parse
    well enough to model (a stale model), at the position :mod:`htam_core.source.parse_problems` gives."""
    found = [(k.parse_problem, incomplete_reason(k, "it is profiled and ranked")) for k in model.kernels
             if k.incomplete and k.parse_problem is not None]
    if model.stale and model.problems:
        name = PurePath(od.path).name if od.path else "the file"
        found.append((model.problems[0], problem_message(name, model.problems[0],
                                                          "HTAM profiles and ranks its kernels again")))
    out = []
    for p, msg in found:
        at = od.buf.to_current(p.byte)
        rng = types.Range(start=position(od.buf.index, at, enc), end=position(od.buf.index, at, enc))
        out.append(types.Diagnostic(range=rng, message=f"HTAM: {msg}", severity=types.DiagnosticSeverity.Information,
                                    source="htam", code="does-not-parse"))
    return out


def publish(ls: HtamLanguageServer, uri: str) -> None:
    """Send ``textDocument/publishDiagnostics`` for ``uri`` (call on the event loop)."""
    od = ls.docs.get(uri)
    if od is None:
        return
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, version=od.version, diagnostics=collect(ls, od)))
