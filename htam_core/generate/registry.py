"""Registry of candidate generators (one registry per abstraction, built by ``create(kind)``; ARCHITECTURE.md, "Rules").

Kinds:
    ``"llm"``: :class:`~htam_core.generate.llm.LLMGenerator` behind the common :class:`Generator` API (the
    ``openai`` client and its HTTP library are imported when it is created, never for the rules engine).
    ``"rules"``: the built-in engine of mechanical transforms (``htam_core.transforms.registry``, one layer
    below ``generate``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from htam_core.generate.config import LLMConfig
from htam_core.generate.edits import FileEdits, minimal_edit, of_kernel_file
from htam_core.generate.errors import GenerationError
from htam_core.generate.llm import CheckResult, GenerationResult, LLMGenerator
from htam_core.generate.prompt import build_messages
from htam_core.source import parse_text
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms.base import apply_edits
from htam_core.transforms.registry import resolve_step
from htam_core.types.language import traits
from htam_core.types.profile import Profile


@dataclass
class GenerationRequest:
    """Everything a generator may use for one step (plain data; see ``prompt.build_messages``).

    Attributes:
        kernel_text: the current source file.
        language: ``"cuda"``, ``"triton"``, ``"cuda-in-python"`` or ``"python"``.
        kernel_name: the kernel to optimize.
        profile: its profile, or ``None``.
        direction: ``{"name", "description"}`` of the chosen global node.
        strategies: retrieved local nodes (``{"id", "name", "guidance", "example_before", "example_after",
            "risk"}``, plus ``"transform"``: the mechanical transform's id when one exists).
        transition_hints: transition-edge sentences.
        task: KernelBench problem source or free-form instruction.
        error_feedback: the previous failure, if any.
        model: the parsed :class:`htam_core.source.SourceModel` of ``kernel_text`` when the caller already has
            one (the editor does); the rules generator then does not parse the file again.
        path: the kernel file's path, so that the rules generator finds the kernel's launches in other files of
            its workspace (``None``: the text alone, or the path of ``model``).
        files: texts of other workspace files as earlier steps left them, by resolved path (a launcher edited
            by an earlier step); files not listed are read from disk.
    """

    kernel_text: str
    language: str
    kernel_name: str | None = None
    profile: Profile | None = None
    direction: Mapping[str, Any] = field(default_factory=dict)
    strategies: Sequence[Mapping[str, Any]] = ()
    transition_hints: Sequence[str] = ()
    task: str | None = None
    error_feedback: str | None = None
    model: Any = None
    path: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Candidate:
    """One proposed new source file.

    Attributes:
        code: the whole new file.
        description: what was changed.
        generator: ``"llm"`` or ``"rules"``.
        strategy: the local strategy id it applies, when known.
        params: generator-specific parameters (transform parameters, token usage ...).
        edits: the change as edits (:class:`~htam_core.generate.edits.FileEdits`: the kernel's file, and any other
            file the step changes); an editor applies these, never a diff of :attr:`code`.
        files: the other files the step rewrites (the kernel's launch in a host file), path -> whole new text;
            empty when only ``code`` changes (the optimize loop carries them to later steps and ``--out``).
        title_note: where the launch was edited, or that the form is correct for any grid (an editor shows it
            in the step's title); ``""`` when there is nothing to say.
    """

    code: str
    description: str
    generator: str
    strategy: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    edits: list[FileEdits] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    title_note: str = ""


class Generator(Protocol):
    """A source of candidates for one step."""

    name: str

    def propose(self, request: GenerationRequest,
                check: Callable[[str], CheckResult] | None = None) -> list[Candidate]:
        """Candidates for ``request``; ``check`` lets a generator repair its own output."""
        ...


class LLMCandidateGenerator:
    """:class:`Generator` adapter around :class:`LLMGenerator` (one candidate per call).

    Args:
        config, log_dir: as for :class:`LLMGenerator`.
        on_wait, cancel: passed to :class:`LLMGenerator` (progress lines while a request waits; abandon it).
    """

    name = "llm"

    def __init__(self, config: LLMConfig, log_dir: str | Path | None,
                 on_wait: Callable[[str], None] | None = None, cancel: threading.Event | None = None) -> None:
        self.llm = LLMGenerator(config, log_dir, on_wait=on_wait, cancel=cancel)
        #: the last :class:`GenerationResult` (its ``check`` says why a call returned no candidate), or ``None``
        self.last_result: GenerationResult | None = None

    def propose(self, request: GenerationRequest,
                check: Callable[[str], CheckResult] | None = None) -> list[Candidate]:
        """Build the prompt from ``request``, call the model (repairing with ``check`` when given).

        Returns:
            One candidate, or ``[]`` when no round's reply held code (an endpoint fault: :attr:`last_result`
            has the parse error). A candidate whose check failed is returned (``params["check_ok"]`` False):
            the code was generated, so its failure is the strategy's.

        Raises:
            GenerationError: see :meth:`LLMGenerator.generate`.
        """
        msgs = build_messages(request.kernel_text, request.language, request.profile, request.direction,
                              list(request.strategies), list(request.transition_hints), request.task,
                              request.error_feedback, kernel_name=request.kernel_name)
        if check is None:
            res = self.llm.generate(msgs, language=request.language, kernel_name=request.kernel_name)
        else:
            res = self.llm.generate_with_repair(msgs, check, language=request.language,
                                                kernel_name=request.kernel_name)
        self.last_result = res
        if not res.code:
            return []
        strat = request.strategies[0].get("id") if request.strategies else None
        return [Candidate(res.code, f"LLM ({self.llm.config.model}) applying {request.direction.get('name', '?')}",
                          "llm", strat, {"usage": res.usage, "attempts": res.attempts, "repairs": res.repairs,
                                         "check_ok": res.check.ok if res.check else None,
                                         "check_error": res.check.error_text if res.check else None,
                                         **({"repair_fault": res.fault} if res.fault else {})},
                          of_kernel_file([minimal_edit(request.kernel_text, res.code)]))]


class RulesCandidateGenerator:
    """:class:`Generator` adapter around the mechanical transforms (the built-in engine).

    For each retrieved strategy that names a ``"transform"`` id (knowledge base field), it calls
    ``htam_core.transforms.registry.propose(transform_id, model, kernel, profile)`` on the parsed file and
    turns every validated transform candidate into a :class:`Candidate` (through
    ``registry.resolve_step``, the same path as the editor's code actions). Transforms that do not apply are
    skipped; their refusal sentences are kept in :attr:`skipped` (``[(transform_id, reason)]``) for the report.
    """

    name = "rules"

    def __init__(self, **_: Any) -> None:
        self.skipped: list[tuple[str, str]] = []

    def propose(self, request: GenerationRequest,
                check: Callable[[str], CheckResult] | None = None) -> list[Candidate]:
        """One candidate per validated edit of each strategy's transform (``check`` is not used).

        Raises:
            GenerationError: the kernel is not in the file, or its name is shared by kernels of other identities.
        """
        self.skipped = []
        file_language = traits(request.language).file_language
        model = request.model
        if model is None or model.text != request.kernel_text:
            model = parse_text(request.kernel_text, file_language, request.path)
        kernel = _kernel_of(model, request.kernel_name)
        out: list[Candidate] = []
        for s in request.strategies:
            tid = s.get("transform")
            if not tid:
                continue
            result = resolve_step(s.get("name") or tid, tid, s.get("guidance") or "", model, kernel,
                                  request.profile, llm_hint="Run with --engine llm", files=request.files)
            if not result:  # NotApplicable is falsy; its reason is the sentence the editor shows too
                self.skipped.append((tid, str(getattr(result, "reason", "not applicable"))))
                continue
            for c in result:
                params = dict(c.params)
                params["transform_id"] = c.transform_id
                params["changes_numerics"] = c.changes_numerics
                params["reorders_only"] = c.reorders_only
                try:
                    files = {p: apply_edits(_text_of(p, request.files), es) for p, es in c.file_edits.items()}
                except (OSError, ValueError) as exc:  # the launcher changed on disk since it was read
                    self.skipped.append((tid, f"{c.description}: the launcher could not be edited ({exc})"))
                    continue
                edits = of_kernel_file(c.edits) + [FileEdits(p, tuple(es)) for p, es in c.file_edits.items()]
                out.append(Candidate(c.new_text, c.description, "rules", s.get("id") or c.strategy, params,
                                     edits, files, c.title_note))
        return out


def _kernel_of(model: SourceModel, name: str | None) -> Kernel:
    """The kernel ``name`` selects in ``model``, read as ``--kernel`` reads it (:meth:`SourceModel.kernel`: a
    qualified name or an overload signature where kernels share a name); the first kernel when ``name`` is
    ``None``.

    Raises:
        GenerationError: no such kernel, or a name several kernels share (the line lists the names to pass).
    """
    if name is None and model.kernels:
        return model.kernels[0]
    if name is not None and any(k.answers_to(name) for k in model.kernels):
        try:
            return model.kernel(name)
        except KeyError as exc:
            raise GenerationError(f"kernel {exc.args[0]}") from None
    names = ", ".join(k.identity for k in model.kernels) or "none"
    raise GenerationError(f"kernel {name!r} is not in the file (kernels found: {names}); "
                          f"pass --kernel NAME with one of them")


def _text_of(path: str, files: Mapping[str, str]) -> str:
    """The text of workspace file ``path`` before a step: as an earlier step left it (``files``), else on disk."""
    if path in files:
        return files[path]
    return Path(path).read_text(encoding="utf-8")


_KINDS: dict[str, Callable[..., Generator]] = {}


def register(kind: str, factory: Callable[..., Generator]) -> None:
    """Register a generator factory under ``kind`` (replaces an existing one)."""
    _KINDS[kind] = factory


def kinds() -> list[str]:
    """Registered generator kinds, sorted."""
    return sorted(_KINDS)


def create(kind: str, **kwargs: Any) -> Generator:
    """Build the generator ``kind``. ``"llm"`` takes ``config: LLMConfig``, ``log_dir``, and optionally
    ``on_wait`` and ``cancel`` (see :class:`LLMCandidateGenerator`).

    Raises:
        GenerationError: unknown kind (message lists the known ones).
    """
    try:
        factory = _KINDS[kind]
    except KeyError:
        raise GenerationError(f"unknown generator {kind!r}; known: {', '.join(kinds())}") from None
    return factory(**kwargs)


register("llm", lambda config, log_dir=None, on_wait=None, cancel=None, **_:
         LLMCandidateGenerator(config, log_dir, on_wait, cancel))
register("rules", RulesCandidateGenerator)
