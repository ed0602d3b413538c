"""Errors raised by the source model."""

from __future__ import annotations


class SourceError(ValueError):
    """A file cannot be modelled (missing, unreadable, or not CUDA/Python).

    The message is one line that says what happened and what to do; the CLI prints it as
    ``htam: error: <message>`` with exit code 2.
    """


#: Largest source text htam reads, in bytes of UTF-8 (1 MiB): files, editor documents and local headers alike.
#: Parsing time and memory grow with the text (tree-sitter's error recovery costs about 4 s per MB of text
#: it cannot read; a 50 MB file of 407,000 kernels took 145 s and 3.9 GB), and no hand-written kernel source
#: comes near it. A larger text is refused before it is read, with :func:`too_large`.
MAX_SOURCE_BYTES = 1 << 20


def too_large(name: str, size: int) -> str | None:
    """The one line that says why a text of ``size`` bytes is not read, or ``None`` when it is within
    :data:`MAX_SOURCE_BYTES`.

    Args:
        name: the file's name or path as the user knows it.
        size: its size in bytes.
    """
    if size <= MAX_SOURCE_BYTES:
        return None
    return (f"{name} is {size / (1 << 20):.1f} MB; htam reads source files of up to "
            f"{MAX_SOURCE_BYTES >> 20} MB, so it did not read this one (split the kernels you work on "
            "into a smaller file)")
