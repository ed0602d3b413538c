"""Errors of the profiler that the user can act on.

A :class:`ProfileError` carries a one-line message (what happened and what to do) plus the
compiler's own diagnostic lines, so that the CLI can print one line and the LSP can show the
details as diagnostics.
"""

from __future__ import annotations


class ProfileError(Exception):
    """The kernel could not be profiled (compile error, unknown kernel, missing tool ...).

    Args:
        message: one line that says what happened and what to do.
        details: the tool's own diagnostic lines (``file(12): error: expected a ";"``), at most a
            few dozen, in the order the tool printed them.
    """

    def __init__(self, message: str, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = list(details or [])

    def __str__(self) -> str:
        if not self.details:
            return self.message
        return self.message + "\n" + "\n".join(self.details)
