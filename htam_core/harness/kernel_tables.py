"""Which ``[kernel.<key>]`` table of ``htam.toml`` describes a kernel.

A table's key is read as ``--kernel`` reads a name (:meth:`~htam_core.source.model.SourceModel.kernel`): the
kernel's plain name (``[kernel.scale]``), its qualified name (``[kernel."f64::scale"]``) or, for an overload, its
signature (``[kernel."scale(double*, double, int)"]``, spaces ignored). A table selects a kernel when its key
resolves to that kernel in the kernel's file, so a table written with a qualified name also serves a kernel
whose plain name is its own. A plain-name table on a file where kernels of several identities share that name
describes none of them: the one-line error names the keys to write instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from htam_core.harness.base import HarnessError
from htam_core.harness.spec import key_line, table_header
from htam_core.source.model import Kernel, SourceModel

__all__ = ["select_kernel_table"]


def _for_file(table: Any, spec_path: Path, file_path: Path) -> bool:
    """The table may describe a kernel of ``file_path``: it has no ``file`` key, or that key names the file."""
    fname = table.get("file") if isinstance(table, dict) else None
    if not isinstance(fname, str):
        return True
    return (spec_path.parent / fname).resolve() == file_path.resolve()


def _resolves(model: SourceModel, key: str) -> Kernel | None:
    try:
        return model.kernel(key)
    except KeyError:
        return None


def select_kernel_table(tables: Mapping[str, Any], kernel_name: str, model: SourceModel | None, *,
                        spec_path: Path, file_path: Path) -> str | None:
    """The key of the table of ``tables`` (the ``kernel`` table of ``htam.toml``) that describes ``kernel_name``
    of ``file_path``, or ``None`` when none does: the table whose key is ``kernel_name``, else one whose key
    resolves to the same kernel, else the table keyed ``kernel_name`` whose ``file`` names another file (the caller
    checks that key, and reads no table for this file).

    Args:
        tables: ``config["kernel"]``, table key to table.
        kernel_name: the kernel, as ``--kernel`` names it (its plain name, qualified name or signature).
        model: the parse of ``file_path``; ``None`` (or a name it does not resolve) falls back to the table
            whose key is ``kernel_name`` exactly.
        spec_path, file_path: the ``htam.toml`` and the kernel's file (a table whose ``file`` names another file
            describes a kernel there).

    Raises:
        HarnessError: no table selects the kernel and a plain-name table names it together with kernels of other
            identities (``[kernel.scale]`` on a file holding ``f32::scale`` and ``f64::scale``); one line.
    """
    target = _resolves(model, kernel_name) if model is not None and tables else None
    if target is None or model is None:
        return kernel_name if kernel_name in tables else None
    exact, shared = [], []
    for key, table in tables.items():
        if not _for_file(table, spec_path, file_path):
            continue
        if _resolves(model, key) is target:
            exact.append(key)
        elif key == target.name:  # the plain name, which kernels of other identities share
            shared.append(key)
    if kernel_name in exact:
        return kernel_name
    if exact:
        return exact[0]
    if kernel_name in tables:  # its `file` names another file, or a path the caller refuses with its reason
        return kernel_name
    if shared:
        choices = list(dict.fromkeys(k.identity for k in model.kernels if k.name == target.name))
        line = key_line(spec_path, ("kernel", shared[0]), "version")
        raise HarnessError(f"{spec_path}{f':{line}' if line else ''}: {table_header(shared[0])} names "
                           f"{len(choices)} kernels of {file_path.name}; write "
                           f"{' or '.join(table_header(c) for c in choices)} instead", path=str(spec_path))
    return None
