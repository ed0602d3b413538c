"""Language backends: one per kernel language (CUDA, Triton, CUDA held in Python strings), created through
:func:`create`.

A :class:`~htam_core.lang.base.LanguageBackend` gathers what htam does with a kernel of one language behind one
interface: parse a file, analyze a kernel, the static profiler, the harness template, validation by the
language's compiler, and the transforms that apply. Each method delegates to the engine that does the work
(:mod:`htam_core.source`, :mod:`htam_core.source.analysis`, :mod:`htam_core.profile.static_kinds`,
:mod:`htam_core.harness.template`, :mod:`htam_core.runtime.compiler`, :mod:`htam_core.transforms.registry`); the
facts that tell the languages apart are data (:mod:`htam_core.types.language`), readable from every layer.

Public API: :func:`create`, :func:`kinds`, :class:`LanguageBackend`.
"""

from htam_core.lang.base import LanguageBackend
from htam_core.lang.registry import create, kinds

__all__ = ["LanguageBackend", "create", "kinds"]
