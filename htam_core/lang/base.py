"""The interface of a language backend and the delegating implementation every language shares.

The engines are not rewritten here: each method hands the call to the module that does the work, so a backend
is the one place that says which engine serves a language. The languages differ in their traits
(:class:`~htam_core.types.language.LanguageTraits`: grammar, file language, compiler, embedding) and in their
static profiler (:func:`htam_core.profile.static_kinds.create`); a language whose work differs further overrides
the method.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Protocol, runtime_checkable

from htam_core.harness.template import write_template
from htam_core.profile.static_kinds import StaticProfiler
from htam_core.profile.static_kinds import create as create_profiler
from htam_core.runtime.compiler import compiler_verdict
from htam_core.source.analysis import KernelFacts, analyze
from htam_core.source.api import parse_text
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms.base import Transform
from htam_core.transforms.registry import for_language
from htam_core.types.language import LanguageTraits, traits


@runtime_checkable
class LanguageBackend(Protocol):
    """What htam does with kernels of one language.

    Attributes:
        kind: the language key (``"cuda"``, ``"triton"``, ``"cuda-in-python"``); traits: its
            :class:`~htam_core.types.language.LanguageTraits`.
    """

    kind: str
    traits: LanguageTraits

    def parse(self, text: str, path: str | None = None) -> SourceModel:
        """The source model of a whole file written in this language's file language."""
        ...

    def analyze(self, model: SourceModel, kernel: Kernel) -> KernelFacts:
        """The analysis layer's facts of ``kernel`` (a kernel of this language in ``model``)."""
        ...

    def static_profiler(self) -> StaticProfiler:
        """The static profiler of this language."""
        ...

    def harness_template(self, model: SourceModel, kernel: Kernel, recorded: Mapping[str, str] | None = None) -> str:
        """A filled-in ``[kernel.<name>]`` table of ``htam.toml`` for ``kernel`` (``recorded``: the launcher's
        tensor dtypes a recording saw)."""
        ...

    def validate(self, text: str, path: str | None = None) -> bool | None:
        """Whether the language's compiler accepts the whole file ``text`` (``None``: no compiler to ask)."""
        ...

    def transforms(self) -> list[Transform]:
        """The registered transforms that handle kernels of this language."""
        ...


class Backend:
    """The shared implementation: every method delegates to its engine, keyed by :attr:`kind`.

    Subclasses set :attr:`kind`; :func:`htam_core.lang.registry.register` makes them creatable.
    """

    kind: ClassVar[str] = ""

    @property
    def traits(self) -> LanguageTraits:
        """This language's :class:`~htam_core.types.language.LanguageTraits`."""
        return traits(self.kind)

    def parse(self, text: str, path: str | None = None) -> SourceModel:
        """The source model of ``text``, a whole file in :attr:`LanguageTraits.file_language`
        (:func:`htam_core.source.api.parse_text`).

        Raises:
            SourceError: the text is over the size limit.
        """
        return parse_text(text, self.traits.file_language, path)  # type: ignore[arg-type]

    def analyze(self, model: SourceModel, kernel: Kernel) -> KernelFacts:
        """The facts of ``kernel`` (:func:`htam_core.source.analysis.analyze`, cached per kernel version)."""
        return analyze(model, kernel)

    def static_profiler(self) -> StaticProfiler:
        """This language's static profiler (:func:`htam_core.profile.static_kinds.create`).

        Raises:
            ProfileError: no static profiler is registered for this language.
        """
        return create_profiler(self.kind)

    def harness_template(self, model: SourceModel, kernel: Kernel, recorded: Mapping[str, str] | None = None) -> str:
        """A ``[kernel.<name>]`` table for ``htam.toml`` guessed from the kernel's parameters and launch
        (:func:`htam_core.harness.template.write_template`; ``recorded``: the launcher's tensor dtypes a
        recording saw, used instead of guesses)."""
        return write_template(model, kernel, recorded)

    def validate(self, text: str, path: str | None = None) -> bool | None:
        """The compiler's verdict on the whole file ``text`` (:func:`htam_core.runtime.compiler.compiler_verdict`:
        nvcc's front end for a ``.cu`` file, Python's compiler for a Python file); ``None`` when there is no
        compiler to ask."""
        return compiler_verdict(text, self.traits.file_language, path)

    def transforms(self) -> list[Transform]:
        """The transforms that handle this language (:func:`htam_core.transforms.registry.for_language`)."""
        return for_language(self.kind)
