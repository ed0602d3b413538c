"""The Python function that launches a kernel (its "wrapper" or launcher): the top-level ``def`` holding one of
the kernel's launch sites.

Read by the template writer (:mod:`htam_core.harness.template`) and the Python/Triton inference
(:mod:`htam_core.harness.infer_py`); it imports neither, so both import it at load time.
"""

from __future__ import annotations

import ast

from htam_core.source.model import Kernel, SourceModel
from htam_core.source.workspace import find_launches
from htam_core.types.language import traits


def wrapper_function(model: SourceModel, kernel: Kernel) -> tuple[str, list[str]] | None:
    """The top-level Python function that launches ``kernel``, a cupy launcher included: ``(name, parameter
    names)``, or ``None`` (:func:`wrapper_def`)."""
    found = wrapper_def(model, kernel, cupy=True)
    return (found.name, [a.arg for a in found.args.args]) if found is not None else None


def wrapper_def(model: SourceModel, kernel: Kernel, *, cupy: bool = False) -> ast.FunctionDef | None:
    """The ``def`` of the top-level function holding a launch site of ``kernel`` (from its model's launch sites;
    with ``cupy``, for a kernel in a Python string, also the cupy calls of its file,
    :func:`~htam_core.source.workspace.find_launches`: the recording runs such a launcher, while the template
    launches the kernel itself with the call's grid and block, a cupy launcher taking cupy arrays), or ``None``:
    not a Python file, no launch site, or a file Python cannot parse (never raises)."""
    if model.file_language != "python":
        return None
    lines = {s.line for s in kernel.launch_sites}
    if cupy and not lines and traits(kernel.language).embedded and model.path:
        lines = {la.line for la in find_launches(model, kernel) if la.style == "cupy" and la.path == model.path}
    if not lines:
        return None
    try:
        tree = ast.parse(model.text)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name != kernel.name:
            end = node.end_lineno or node.lineno
            if any(node.lineno <= ln <= end for ln in lines):
                return node
    return None
