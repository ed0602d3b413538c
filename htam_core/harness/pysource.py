"""Facts about a Python kernel file that harness discovery needs, read with :mod:`ast`.

Only top-level definitions are read; nothing is imported or executed (discovery runs in the
caller's process, kernel code only ever runs in a worker).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from htam_core.source.parse_problems import ParseProblem, first_problem, problem_message


@dataclass
class PyFacts:
    """Top-level names of a Python file.

    Attributes:
        classes: top-level class names.
        functions: top-level function names.
        triton_kernels: functions decorated with ``triton.jit``/``jit``/``triton.autotune``...
        uses_load_inline: the file calls ``load_inline`` (``torch.utils.cpp_extension``).
        has_cuda_string: a string constant contains ``__global__`` (CUDA held in Python).
        uses_cupy_raw: the file uses ``RawKernel``/``RawModule`` (CuPy).
        syntax_error: ``"line N: msg"`` when the file does not parse, else ``None``.
    """

    classes: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)
    triton_kernels: set[str] = field(default_factory=set)
    uses_load_inline: bool = False
    has_cuda_string: bool = False
    uses_cupy_raw: bool = False
    syntax_error: str | None = None

    @property
    def is_kernelbench_candidate(self) -> bool:
        """Defines ``ModelNew``."""
        return "ModelNew" in self.classes

    @property
    def is_kernelbench_reference(self) -> bool:
        """Defines ``Model``, ``get_inputs`` and ``get_init_inputs``."""
        return {"get_inputs", "get_init_inputs"} <= self.functions and "Model" in self.classes


def _decorator_name(d: ast.expr) -> str:
    if isinstance(d, ast.Call):
        d = d.func
    parts: list[str] = []
    while isinstance(d, ast.Attribute):
        parts.append(d.attr)
        d = d.value
    if isinstance(d, ast.Name):
        parts.append(d.id)
    return ".".join(reversed(parts))


def parse_failure(name: str, text: str, then: str = "run the command again") -> str | None:
    """One line saying that the Python file ``name`` (text ``text``) does not parse, where, and what to do
    (``"k.py:19:12: syntax error: cannot parse `(x,` (Python: '(' was never closed); fix it there, then
    <then>"``), or ``None`` when it parses. Every harness path that reads a Python file reports a syntax error
    with it, so that the cause is never mistaken for a missing launcher or ``__main__`` block. The position is
    tree-sitter's first ERROR/MISSING node, as everywhere (:mod:`htam_core.source.parse_problems`); Python's
    own words follow in parentheses."""
    try:
        ast.parse(text)
    except SyntaxError as e:
        p = first_problem(text, "python")
        if p is None:  # Python refuses what tree-sitter reads (``return`` outside a function, ...): its position
            return problem_message(name, ParseProblem(e.lineno or 1, e.offset or 1, 0, e.msg), then)
        return problem_message(name, replace(p, what=f"{p.what} (Python: {e.msg})"), then)
    except (ValueError, RecursionError) as e:  # a NUL byte, or nesting too deep for the parser
        return f"{name} does not parse ({e}); fix the file, then {then}"
    return None


def read_py_facts(text: str) -> PyFacts:
    """Parse ``text`` (a Python file) and collect :class:`PyFacts`; never raises."""
    facts = PyFacts()
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        facts.syntax_error = f"line {e.lineno}: {e.msg}"
        return facts
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            facts.classes.add(node.name)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            facts.functions.add(node.name)
            names = [_decorator_name(d) for d in node.decorator_list]
            if any(n.split(".")[-1] in ("jit", "autotune", "heuristics") for n in names):
                facts.triton_kernels.add(node.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = _decorator_name(node.func).split(".")[-1]
            if fn == "load_inline":
                facts.uses_load_inline = True
            elif fn in ("RawKernel", "RawModule"):
                facts.uses_cupy_raw = True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "__global__" in node.value:
            facts.has_cuda_string = True
    return facts
