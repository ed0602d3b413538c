"""Reading a data file that may be stored gzip-compressed (``x.jsonl`` or ``x.jsonl.gz``).

The repository keeps its large result files (measured-space tables, replay documents, logs) gzip-compressed
under ``bench/results/``; every reader of such a file goes through :func:`read_data_text`, so a path given
with or without the ``.gz`` suffix reads the same text. The compression is the standard library's
:mod:`gzip` (RFC 1952), so ``zcat`` and ``gzip -d`` read the files too.
"""

from __future__ import annotations

import gzip
from pathlib import Path

__all__ = ["data_path", "read_data_text"]

_GZ = ".gz"


def data_path(path: str | Path) -> Path:
    """The file that holds the data of ``path``: ``path`` itself when it exists, else ``path + ".gz"`` when that
    exists, else ``path`` unchanged (the caller's read then fails with the name the user gave).

    Args:
        path: a file path as the user or a document gives it, with or without the ``.gz`` suffix.
    """
    p = Path(path)
    if p.exists() or p.name.endswith(_GZ):
        return p
    gz = p.with_name(p.name + _GZ)
    return gz if gz.is_file() else p


def read_data_text(path: str | Path, *, encoding: str = "utf-8", errors: str = "strict") -> str:
    """The text of a data file, decompressed when it is stored gzip-compressed (see :func:`data_path`).

    Args:
        path: the file, with or without ``.gz``; encoding, errors: as for :meth:`bytes.decode`.

    Raises:
        OSError: the file cannot be read, or a ``.gz`` file is not gzip data (:class:`gzip.BadGzipFile`,
            an ``OSError``) or is cut short (``EOFError`` is raised as ``OSError``).
        UnicodeDecodeError: the (decompressed) bytes are not text in ``encoding``.
    """
    p = data_path(path)
    if not p.name.endswith(_GZ):
        return p.read_text(encoding=encoding, errors=errors)
    try:
        raw = gzip.decompress(p.read_bytes())
    except EOFError as exc:
        raise OSError(f"{p} is cut short: {exc}") from None
    return raw.decode(encoding, errors)
