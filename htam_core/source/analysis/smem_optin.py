"""Whether the host code opts a kernel in to more than 48 KB of shared memory per block.

Without an opt-in, a block gets at most 48 KB of static plus dynamic shared memory, and a launch asking for more
fails. The host raises the limit, up to the device's opt-in maximum, with::

    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);      // runtime API
    cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);          // driver API
    kernel.max_dynamic_shared_size_bytes = bytes                                           # cupy RawKernel

This module finds those calls and assignments with tree-sitter. A runtime-API call counts for the kernel when its
first argument names the kernel (``kernel``, ``kernel<float>``, ``(const void*)&kernel``) or names no kernel of the
file at all (a function pointer or a driver handle, which cannot be tied to one kernel: read as an opt-in, so a
launch is never called impossible on a guess); a call naming another kernel of the file does not count. A cupy
attribute assignment counts for the kernels of its file.

Idea source: CUDA C++ Programming Guide, "Shared Memory" (the 48 KB default and the opt-in) and the CUDA Runtime
API's ``cudaFuncSetAttribute``; cupy's ``RawKernel.max_dynamic_shared_size_bytes``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache

from tree_sitter import Node

from htam_core.source.analysis.syntax import of_type, parse, text
from htam_core.source.parsing import GrammarName

#: The attribute names that raise a kernel's dynamic shared memory limit (runtime API, driver API).
OPTIN_ATTRIBUTES = ("cudaFuncAttributeMaxDynamicSharedMemorySize", "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES")
#: The calls that set a function attribute.
SET_ATTRIBUTE_CALLS = ("cudaFuncSetAttribute", "cuFuncSetAttribute")
#: cupy's ``RawKernel`` attribute that does the same.
CUPY_ATTRIBUTE = "max_dynamic_shared_size_bytes"


@dataclass(frozen=True)
class SharedOptIn:
    """One opt-in of the host code.

    Attributes:
        line: 1-based line in the text searched.
        text: the call or assignment as written.
        value: the bytes it opts in to, as written (the call's third argument, the assignment's right side).
        byte: its start byte in the text searched (where a constant in ``value`` is looked up).
        cuda: it is C/C++ (a CUDA text), so ``value`` is a C expression; ``False`` for Python.
    """

    line: int
    text: str
    value: str = ""
    byte: int = 0
    cuda: bool = True


def shared_optins(model_text: str, kernel_name: str, kernel_names: Iterable[str] = (), *,
                  python: bool = False, cuda_text: str | None = None,
                  cuda_first_line: int = 1) -> tuple[SharedOptIn, ...]:
    """The opt-ins above 48 KB of shared memory per block that the host code makes for ``kernel_name``.

    Args:
        model_text: the file's text (CUDA, or Python with ``python=True``).
        kernel_name: the kernel's name.
        kernel_names: every kernel of the file (a runtime-API call naming one of the others is not this kernel's).
        python: ``model_text`` is Python (cupy attribute assignments, ``cuFuncSetAttribute`` of cuda-python).
        cuda_text: the kernel's CUDA string for CUDA held in Python (``load_inline`` host code in it is read too).
        cuda_first_line: the file line of ``cuda_text``'s first line (its opt-ins' lines are the file's).

    Returns:
        The opt-ins found (the file's, then the CUDA string's), in source order; empty when there is none. An
        opt-in's ``byte`` is in the text it was found in.
    """
    others = tuple(sorted(set(kernel_names) - {kernel_name}))
    found = list(_optins(model_text, "python" if python else "cuda", kernel_name, others))
    if cuda_text:
        found += [replace(o, line=o.line + cuda_first_line - 1) for o in _optins(cuda_text, "cuda", kernel_name, others)]
    return tuple(found)


@lru_cache(maxsize=64)
def _optins(src: str, grammar: GrammarName, kernel_name: str, others: tuple[str, ...]) -> tuple[SharedOptIn, ...]:
    data = src.encode("utf-8")
    root = parse(data, grammar).root_node
    out: list[SharedOptIn] = []
    for call in of_type(root, "call" if grammar == "python" else "call_expression"):
        fn = call.child_by_field_name("function")
        args = call.child_by_field_name("arguments")
        name = text(fn, data).rsplit(".", 1)[-1].rsplit("::", 1)[-1] if fn is not None else ""
        if name not in SET_ATTRIBUTE_CALLS or args is None or not args.named_children:
            continue
        if not any(text(a, data).endswith(OPTIN_ATTRIBUTES) for a in args.named_children[1:]):
            continue
        if _for_kernel(args.named_children[0], data, kernel_name, others):
            value = text(args.named_children[2], data) if len(args.named_children) > 2 else ""
            out.append(SharedOptIn(call.start_point[0] + 1, text(call, data), value, call.start_byte,
                                   grammar == "cuda"))
    if grammar == "python":
        out += [SharedOptIn(a.start_point[0] + 1, text(a, data), text(a.child_by_field_name("right"), data),
                            a.start_byte, False) for a in of_type(root, "assignment")
                if (left := a.child_by_field_name("left")) is not None and left.type == "attribute"
                and text(left.child_by_field_name("attribute"), data) == CUPY_ATTRIBUTE]
    return tuple(sorted(out, key=lambda o: o.line))


def _for_kernel(first: Node, data: bytes, kernel_name: str, others: tuple[str, ...]) -> bool:
    """The first argument of a set-attribute call stands for ``kernel_name``: it names it, or names no other
    kernel of the file (a pointer or handle that cannot be tied to one)."""
    names = {text(n, data) for n in of_type(first, "identifier")} | {text(first, data)}
    return kernel_name in names or not names & set(others)
