"""Diagnostics for profile facts worth attention, at each kernel's name: register spills, low theoretical
occupancy, Nsight Compute rules that fired, and profile failures (source ``htam``)."""

from __future__ import annotations

from lsprotocol import types

from htam_server import render
from htam_server.convert import current_name_range

_SEVERITY = {"warning": types.DiagnosticSeverity.Warning, "information": types.DiagnosticSeverity.Information}


def collect(ls, od) -> list[types.Diagnostic]:
    """Diagnostics of every kernel of ``od`` that has a profile (stale ones say so)."""
    if od.path is None or not od.served():
        return []
    model = od.snapshot_model  # the latest parse (diagnostics are published after each one)
    if model is None or model.stale:
        return []
    enc = ls.encoding()
    out: list[types.Diagnostic] = []
    for k in model.kernels:
        view = ls.session.profile_view(od.path, k)
        e = view.entry
        if e is None:
            continue
        rng = current_name_range(od.buf, k, enc)
        suffix = " (stale profile: the kernel changed since)" if view.stale else ""
        if e.profile is None:
            out.append(types.Diagnostic(range=rng, message=f"HTAM: profiling {k.name} failed: {e.error}{suffix}",
                                        severity=types.DiagnosticSeverity.Information, source="htam",
                                        code="profile-failed"))
            continue
        for sev, code, msg in render.profile_facts(e.profile):
            out.append(types.Diagnostic(range=rng, message=f"{msg}{suffix}", severity=_SEVERITY[sev],
                                        source="htam", code=code))
    return out


def publish(ls, uri: str) -> None:
    """Send ``textDocument/publishDiagnostics`` for ``uri`` (call on the event loop)."""
    od = ls.docs.get(uri)
    if od is None:
        return
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, version=od.version, diagnostics=collect(ls, od)))
