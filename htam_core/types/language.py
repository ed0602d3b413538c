"""What each kernel language is, as data: the one place that tells the languages apart.

A kernel's ``language`` (``"cuda"``, ``"triton"``, ``"cuda-in-python"``; a harness may also say ``"python"`` for a
plain PyTorch module) is a registry key. Code that behaves differently per language reads the language's
:class:`LanguageTraits` through :func:`traits` instead of testing the string, so a new language is one entry
here (and one backend in :mod:`htam_core.lang`), not a branch in every module.

This module imports nothing else of ``htam_core``, so every layer may read it. The behaviour behind the traits
(parsing, analysis, static profiles, harness templates, validation, transforms) is reached through the
language backends of :mod:`htam_core.lang`.

Idea source: the "language server per language" split of editors (one backend behind one interface, chosen by a
language id), as in the Language Server Protocol's ``languageId``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LanguageTraits", "UnknownLanguage", "kinds", "traits"]


class UnknownLanguage(ValueError):
    """A language key that no entry of :data:`_TRAITS` has (a bug in the caller, or a new language not yet
    registered)."""


@dataclass(frozen=True)
class LanguageTraits:
    """The facts about one kernel language that other modules branch on.

    Attributes:
        kind: the key (``"cuda"``, ``"triton"``, ``"cuda-in-python"``, ``"python"``).
        grammar: the tree-sitter grammar the kernel's own text is read in (``"cuda"`` or ``"python"``; CUDA held
            in a Python string is read as CUDA).
        file_language: the language of the file the kernel is written in (``"cuda"`` for ``.cu``, ``"python"``
            otherwise); also the code fence an LLM is asked to answer in.
        compiler: who decides whether the text is valid, as a message names it (``"nvcc"``, ``"Python"``).
        embedded: CUDA source held in a Python string (``load_inline``, cupy); its offsets are relative to it.
        tiles: a Triton program over tiles (``tl.*`` operations, constexpr block sizes), not a per-thread body.
        c_types: parameters carry C types, which give the tensors' dtypes.
        nvcc_build: built by nvcc from a ``.cu`` file with a host launcher or ``main()`` (what the CUDA
            harness inference, the build check and the launch-config rewrite of a ``main()`` read).
        interprets: runs on a CPU under an interpreter when there is no GPU (Triton's ``TRITON_INTERPRET=1``,
            plain PyTorch); the others only compile there.
        family: the strategy family of the memory and the benchmark policies (``"cuda"`` or ``"triton"``:
            CUDA in a Python string takes CUDA's steps).
        named_bindings: a kernel is a binding of a function object (``a = triton.jit(f)``, ``b = triton.jit(f)``):
            bindings of one function answer to its name, and a shared name does not make two kernels ambiguous
            (for C++ kernels a shared name is namespaces or overloads, told apart by the qualified name).
    """

    kind: str
    grammar: str
    file_language: str
    compiler: str
    embedded: bool = False
    tiles: bool = False
    c_types: bool = False
    nvcc_build: bool = False
    interprets: bool = False
    family: str = "cuda"
    named_bindings: bool = False


_TRAITS: dict[str, LanguageTraits] = {t.kind: t for t in (
    LanguageTraits("cuda", grammar="cuda", file_language="cuda", compiler="nvcc", c_types=True, nvcc_build=True),
    LanguageTraits("triton", grammar="python", file_language="python", compiler="Python", tiles=True,
                   interprets=True, family="triton", named_bindings=True),
    LanguageTraits("cuda-in-python", grammar="cuda", file_language="python", compiler="nvcc", embedded=True,
                   c_types=True),
    LanguageTraits("python", grammar="python", file_language="python", compiler="Python", interprets=True,
                   family="python"),
)}


def traits(kind: str) -> LanguageTraits:
    """The :class:`LanguageTraits` of the language ``kind``.

    Raises:
        UnknownLanguage: ``kind`` is not a registered language.
    """
    try:
        return _TRAITS[kind]
    except KeyError:
        raise UnknownLanguage(f"unknown kernel language {kind!r} (known: {', '.join(_TRAITS)})") from None


def kinds() -> tuple[str, ...]:
    """The registered language keys, in registration order."""
    return tuple(_TRAITS)
