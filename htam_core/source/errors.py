"""Errors raised by the source model."""

from __future__ import annotations


class SourceError(ValueError):
    """A file cannot be modelled (missing, unreadable, or not CUDA/Python).

    The message is one line that says what happened and what to do; the CLI prints it as
    ``htam: error: <message>`` with exit code 2.
    """
