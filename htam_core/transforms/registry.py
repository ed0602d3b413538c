"""Registry of mechanical transforms, and the validated entry point :func:`propose`.

Adding a transform means adding one module with a :class:`~htam_core.transforms.base.Transform`
subclass decorated with :func:`register` (the python-lsp-server plugin idea).
The HTAM knowledge base refers to transforms by id.
"""

from __future__ import annotations

import contextvars
import dataclasses
import importlib
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from htam_core.source import parse_text, workspace
from htam_core.source.analysis.kernel_names import ambiguous_launch_reason
from htam_core.source.analysis.launch_slots import macro_use_refusal
from htam_core.source.analysis.unit import shared_launches
from htam_core.source.model import Kernel, SourceModel
from htam_core.source.positions import line_ending, with_line_ending
from htam_core.source.workspace import LaunchUnit, WorkspaceLaunch, find_launches, launch_unit
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit, Transform, apply_edits, diff_edits
from htam_core.transforms.validate import check_syntax
from htam_core.types.errors import exception_line
from htam_core.types.profile import Profile
from htam_core.types.text import first_sentence

_log = logging.getLogger(__name__)


def declaring_files(model: SourceModel, kernel: Kernel) -> list[tuple[str, str]]:
    """The workspace files, other than the kernel's own, that declare CUDA kernel ``kernel`` (a header's prototype):
    ``(path, text)`` pairs sorted by path. The framework reads the workspace for the transforms, which read only
    the kernel's code and its facts (:func:`htam_core.source.workspace.declaring_files`). Raises nothing."""
    return workspace.declaring_files(model, kernel)

def calling_files(model: SourceModel, name: str) -> list[tuple[str, bytes]]:
    """The workspace files, other than the model's own, that call the host function ``name``: ``(path, bytes)``
    pairs sorted by path (:func:`htam_core.source.workspace.calling_files`), for the analysis layer to read a launch
    wrapper's arguments at its calls. Raises nothing."""
    return workspace.calling_files(model, name)

#: What a transform's rewrite changes (:attr:`Transform.kind`). A *structural* step rewrites the thread mapping,
#: the memory hierarchy or the algorithm (coalescing remap, tiling, vectorized loads, warp per row, shuffle
#: reductions, online softmax, program-order swizzle); a launch-parameter, hint-only or math-intrinsic step does
#: not count as structural (the makeable-actions check asks for one structural step per kernel with a known
#: pattern).
KINDS: dict[str, str] = {
    "structural": "rewrites the thread mapping, the memory hierarchy or the algorithm",
    "launch": "changes launch parameters only (block size, num_warps/num_stages, autotune configs)",
    "hint": "adds qualifiers, pragmas or cache/alignment hints; the computation is unchanged",
    "math": "substitutes math intrinsics (fast math)",
}

_REGISTRY: dict[str, Transform] = {}
_FAMILIES = (
    "triton_launch",
    "triton_autotune",
    "triton_hints",
    "triton_ordering",
    "triton_rows",
    "triton_single_pass",
    "triton_row_cache",
    "cuda_launch",
    "cuda_qualifiers",
    "cuda_warp_row",
    "cuda_block_row",
    "cuda_loops",
    "cuda_memory",
    "cuda_tiling",
    "cuda_flat_remap",
    "cuda_register_tiling",
    "cuda_panel_tiling",
    "cuda_softmax",
    "cuda_coalesce",
    "cuda_flatten",
    "cuda_warp_reduce",
    "cuda_math",
    "cuda_reduction",
    "cuda_coarsen",
    "cuda_row_registers",
    "cuda_lane_columns",
    "cuda_vector_columns",
    "cuda_histogram",
    "cuda_block_scan",
    "cuda_row_scan",
    "cuda_atomic_privatize",
    "cuda_stencil",
)
_loaded = False

T = TypeVar("T", bound=type[Transform])


def register(cls: T) -> T:
    """Class decorator: instantiate ``cls`` and register it under ``cls.id``.

    Raises:
        ValueError: ``cls.id`` is empty or already registered by another class, or ``cls.kind`` is not one
            of :data:`KINDS`.
    """
    if not cls.id:
        raise ValueError(f"{cls.__name__} has no transform id")
    if cls.kind not in KINDS:
        raise ValueError(f"transform {cls.id!r} has kind {cls.kind!r}; expected one of {', '.join(KINDS)}")
    prev = _REGISTRY.get(cls.id)
    if prev is not None and type(prev) is not cls:
        raise ValueError(f"transform id {cls.id!r} is already registered by {type(prev).__name__}")
    _REGISTRY[cls.id] = cls()
    return cls


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for mod in _FAMILIES:
            importlib.import_module(f"htam_core.transforms.{mod}")


def get(transform_id: str) -> Transform:
    """The registered transform ``transform_id``.

    Raises:
        KeyError: unknown id; the message lists the known ids.
    """
    _load()
    try:
        return _REGISTRY[transform_id]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"unknown transform {transform_id!r} (known: {known})") from None


def all_transforms() -> list[Transform]:
    """Every registered transform, sorted by id."""
    _load()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def is_structural(transform_id: str | None) -> bool:
    """True when ``transform_id`` names a registered transform of kind ``"structural"`` (see :data:`KINDS`);
    ``None`` or an unknown id is not structural."""
    if not transform_id:
        return False
    _load()
    t = _REGISTRY.get(transform_id)
    return t is not None and t.kind == "structural"


def for_language(language: str) -> list[Transform]:
    """Transforms that handle kernels of ``language`` (``"cuda"``, ``"triton"``, ``"cuda-in-python"``)."""
    return [t for t in all_transforms() if language in t.languages]


def kernel_survives(text: str, file_language: str, path: str | None, name: str) -> bool:
    """True when re-parsing ``text`` with the source model still finds a kernel called ``name``."""
    model = parse_text(text, file_language, path)
    return any(k.answers_to(name) and not k.incomplete for k in model.kernels)


def validate(model: SourceModel, kernel: Kernel, cand: Candidate) -> str | None:
    """Return ``None`` when ``cand`` is sound, else why it is rejected.

    Checks: ``new_text`` equals the edits applied to ``model.text``; the edited regions gain no
    tree-sitter ERROR/MISSING nodes; the kernel still exists by name.
    """
    try:
        expected = apply_edits(model.text, cand.edits)
    except ValueError as exc:
        return f"invalid edits: {exc}"
    if expected != cand.new_text:
        return "new_text does not match the edits"
    if cand.new_text == model.text:
        return "the edit changes nothing"
    problem = check_syntax(model.text, cand.new_text, cand.edits, model.file_language)
    if problem:
        return problem
    if not kernel_survives(cand.new_text, model.file_language, model.path, kernel.name):
        return f"kernel {kernel.name!r} is no longer found after the edit"
    return shared_launch_edit(model, kernel, cand) or macro_use_edit(kernel, cand)


def _bare_comma(text: str) -> bool:
    """Whether ``text`` holds a comma outside parentheses (where the preprocessor splits a macro's arguments)."""
    depth = 0
    for c in text:
        depth += (c == "(") - (c == ")")
        if c == "," and depth <= 0:
            return True
    return False


def macro_use_edit(kernel: Kernel, cand: Candidate) -> str | None:
    """Why ``cand`` may not be made when an edit inside the use of a launch macro (``LAUNCH(k, blocks, 256, x)``,
    :attr:`~htam_core.source.model.LaunchSite.macro`) writes a comma outside parentheses: the preprocessor would
    read it as one more argument (C11 6.10.3p11; braces and brackets do not protect it). ``None`` otherwise."""
    for s in kernel.launch_sites:
        if not s.macro or s.span is None:
            continue
        for e in cand.edits:
            if s.span.start <= e.start_byte and e.end_byte <= s.span.end and _bare_comma(e.new_text):
                return (f"the edit writes a comma outside parentheses into the use of the macro {s.macro} on line "
                        f"{s.line}, which would pass the macro one more argument")
    return None


def shared_launch_edit(model: SourceModel, kernel: Kernel, cand: Candidate) -> str | None:
    """Why ``cand`` may not be made when it edits the function that launches ``kernel`` through a function
    pointer or a table of kernels that runs other kernels too (``kernel = &k; kernel<<<grid, threads>>>``): the
    grid, block and buffers there are those of every kernel the pointer runs, so the edit would change their
    launches as well. ``None`` when no edit lies in such a function. Facts from
    :func:`htam_core.source.analysis.unit.shared_launches`.

    Also refused: an edit of the kernel's parameter list (``const __restrict__``, a new parameter) when a launch
    reaches the kernel through a pointer: the pointer's type spells the parameter types, so the assignment
    ``kernel = &k;`` would no longer compile."""
    through = [s for s in kernel.launch_sites if s.pointer_kernels]
    spans = [p.span for p in kernel.params if p.span is not None]
    if through and spans:
        s, e = min(sp.start for sp in spans), max(sp.end for sp in spans)
        if any(ed.start_byte <= e and ed.end_byte >= s for ed in cand.edits):
            ptr = through[0].qualified_name or "a function pointer"
            return (f"the launch on line {through[0].line} reaches {kernel.name} through the function pointer "
                    f"{ptr}, whose type spells {kernel.name}'s parameter types: changing them would no longer "
                    f"match it")
    for shared in shared_launches(model, kernel):
        s, e = shared.host
        if any(ed.start_byte < e and ed.end_byte > s for ed in cand.edits):
            others = [k for k in shared.kernels if k != kernel.name]
            return (f"the launch on line {shared.line} runs {kernel.name} through the function pointer "
                    f"{shared.pointer}, which runs {', '.join(others)} too: changing that launch would change "
                    f"theirs; launch {kernel.name} by its own name to change its launch")
    return None


def propose(
    transform_id: str, model: SourceModel, kernel: Kernel, profile: Profile | None = None, *,
    files: Mapping[str, str] | None = None,
) -> list[Candidate] | NotApplicable:
    """Run one transform on one kernel and return only validated candidates.

    Args:
        transform_id: a registered id (see :func:`all_transforms`).
        model: the parsed file (``htam_core.source.parse_text``/``load``).
        kernel: a kernel of ``model``.
        profile: optional profile of the kernel.
        files: texts of other workspace files that differ from disk, by path (see
            :func:`htam_core.source.workspace.launch_unit`): where a launcher edited by an earlier step is read.

    A kernel with no launch in its own file is read together with its launches elsewhere (a host file, a
    ``#define`` wrapper, a ``load_inline`` string, a Triton launcher module): a step that changes the launch edits
    both places (``Candidate.file_edits``). With no editable launch anywhere, a launch-independent candidate's
    ``title_note`` says so.

    Returns:
        At least one validated :class:`Candidate`, or :class:`NotApplicable` with the reason (and,
        when candidates were made but all failed validation, the rejection reasons).

    Raises:
        KeyError: unknown ``transform_id``.
    """
    t = get(transform_id)
    if kernel.language not in t.languages:
        langs = ", ".join(t.languages)
        return t.not_applicable(f"{transform_id} handles {langs} kernels; {kernel.name} is {kernel.language}")
    if kernel.incomplete:
        return t.not_applicable(f"{kernel.name} is incomplete (it does not parse); finish it first")
    if model.stale:
        return t.not_applicable("the file does not parse; the kernel list is from the last good parse")
    unit = launch_unit(model, kernel, files=files) if not kernel.launch_sites and model.path else None
    joint: list[Candidate] | NotApplicable | None = None
    if unit is not None:  # launched from another file or a #define: read (and edit) kernel and launch as one unit
        joint = _propose_joint(t, unit, profile)
        if isinstance(joint, list) or not any(isinstance(r, Untranslatable) for r in joint.rejected):
            return joint
        # a cupy launch no candidate could be written into (a C helper in its grid): the launch-independent forms
    result = t.propose(model, kernel, profile)
    if isinstance(result, NotApplicable):
        return joint if joint is not None else _through_macro(kernel, result, model.text)
    if not kernel.launch_sites:
        kept = unit.launches() if unit is not None else None
        result = [_launch_not_found(model, kernel, c, files, kept) for c in result]
    return _validated(t, model, kernel, result)


def _validated(t: Transform, model: SourceModel, kernel: Kernel, result: list[Candidate]
               ) -> list[Candidate] | NotApplicable:
    """The candidates of ``result`` that pass :func:`validate`, in the file's line endings; :class:`NotApplicable`
    when none does, saying why in one line (a launch that may run another kernel of the same name is never
    changed: :func:`~htam_core.source.analysis.kernel_names.ambiguous_launch_reason`)."""
    good: list[Candidate] = []
    rejected: list[str] = []
    ending = line_ending(model.text)
    ambiguous: str | None = None
    reads = t.kind == "launch" or t.reads_launch
    for cand in result:
        cand = _launch_shared(model, kernel, cand)
        spans = [(e.start_byte, e.end_byte) for e in cand.edits]
        why = (ambiguous_launch_reason(kernel, spans, reads=reads)
               or _cooperative_reason(kernel, spans, changes=t.kind == "launch"))
        if why is not None:
            ambiguous = why
            continue
        if ending != "\n":  # transforms write "\n": keep the file's own line endings (CRLF, classic-Mac CR)
            cand.edits = [dataclasses.replace(e, new_text=with_line_ending(e.new_text, ending)) for e in cand.edits]
            cand.new_text = apply_edits(model.text, cand.edits)
        why = validate(model, kernel, cand)
        if why is None:
            good.append(cand)
        else:
            rejected.append(f"{cand.description}: {why}")
    if not good:
        if not rejected:
            return t.not_applicable(ambiguous or "no candidate was produced")
        return NotApplicable(
            reason=f"every candidate was rejected ({rejected[0]})", transform_id=t.id, rejected=tuple(rejected)
        )
    return good


#: The runtime call of a cooperative launch: every block of its grid must be resident at once (grid.sync()).
_COOPERATIVE = "cudaLaunchCooperativeKernel"


def _cooperative_reason(kernel: Kernel, spans: list[tuple[int, int]], *, changes: bool = False) -> str | None:
    """Why an edit over the byte ranges ``spans`` may not be made on a kernel with a cooperative launch
    (``cudaLaunchCooperativeKernel``): it changes that launch, or, with ``changes`` (a step of kind ``"launch"``,
    which changes the grid or block where they are defined), the kernel has one at all. A cooperative grid must fit on the device at
    once; a bigger block or a grid of more blocks per SM can make the launch fail (``cudaErrorCooperativeLaunchTooLarge``).
    ``None`` otherwise. Idea source: CUDA C++ Programming Guide, "Grid Synchronization" (cooperative launches)."""
    for s in kernel.launch_sites:
        touched = s.span is not None and any(a < s.span.end and b > s.span.start for a, b in spans)
        if s.api == _COOPERATIVE and (touched or changes):
            return (f"the launch on line {s.line} is cooperative ({_COOPERATIVE}): all its blocks must be resident "
                    "at once, so htam does not change its grid or block")
    return None


def _through_macro(kernel: Kernel, na: NotApplicable, text: str) -> NotApplicable:
    """``na`` said in words of a launch macro when a launch of ``kernel`` in its file is written through one
    (``LAUNCH(k, n, a, b)``, :attr:`~htam_core.source.model.LaunchSite.macro`): the launch is there, but a step that
    must change it is not made inside a macro's ``#define``, which other uses share. Only a macro whose body computes
    the grid or block is left so (:func:`~htam_core.source.analysis.launch_slots.macro_use_refusal` says how, from
    ``text``, the file's text); one that passes each as a parameter is edited at the use."""
    sites = kernel.launch_sites
    macro = [s for s in sites if s.macro]
    if not macro or "no launch site in this file" not in na.reason:
        return na
    site = next((s for s in macro if not s.config_spans), macro[0])
    detail = macro_use_refusal(text.encode("utf-8"), site.span.start) if site.span is not None else None
    how = f": {detail}" if detail else ", whose #define writes the grid and block"
    why = (f"{kernel.name} is launched on line {site.line} through the macro {site.macro}{how}; htam does not change a "
           "launch written inside a macro")
    return dataclasses.replace(na, reason=why)


def _launch_not_found(model: SourceModel, kernel: Kernel, cand: Candidate, files: Mapping[str, str] | None,
                      kept: list[WorkspaceLaunch] | None = None) -> Candidate:
    """Say in a launch-independent candidate's description why it leaves the grid alone: no launch of the kernel
    was found anywhere in the workspace, or the launches found cannot be edited (a cupy launcher whose call is
    not read, or ``kept``: the launches a launch-changing form could not be written into)."""
    if cand.params.get("launch") != "independent":
        return cand
    found = kept or ([la for la in find_launches(model, kernel, files=files) if not la.editable] if model.path else [])
    where = (f"launch in {found[0].path.rsplit('/', 1)[-1]} line {found[0].line} left as is" if found
             else "launch not found")
    note = f"{where}: correct for any grid"
    return dataclasses.replace(cand, description=f"{cand.description} ({note})", title_note=note)


def _launch_shared(model: SourceModel, kernel: Kernel, cand: Candidate, unit: LaunchUnit | None = None
                   ) -> Candidate:
    """Say in a launch-independent candidate's description and title note that the grid is left alone because the
    kernel is launched through a function pointer that runs other kernels too (``cand`` unchanged otherwise).
    ``unit``: the joint unit ``model`` is, whose line numbers are written as the launcher's (``line 8 of main.cu``)."""
    if cand.params.get("launch") != "independent":
        return cand
    shared = shared_launches(model, kernel)
    if not shared:
        return cand
    note = (f"launch through the pointer {shared[0].pointer} on line {shared[0].line} runs other kernels too, left "
            "as is: correct for any grid")
    note = unit.relabel(note) if unit is not None else note
    return dataclasses.replace(cand, description=f"{cand.description} ({note})", title_note=note)


def _propose_joint(t: Transform, unit: LaunchUnit, profile: Profile | None) -> list[Candidate] | NotApplicable:
    """:func:`propose` for a kernel whose launches lie in other files (or in a ``#define`` body): ``t`` runs on
    the joint unit (:func:`htam_core.source.workspace.launch_unit`), its candidates are validated there, and
    each is split back into edits of the kernel's file and ``file_edits`` of the launchers."""
    result = t.propose(unit.model, unit.kernel, profile)
    if isinstance(result, NotApplicable):
        result = _through_macro(unit.kernel, result, unit.model.text)
        return dataclasses.replace(result, reason=unit.relabel(result.reason))
    result = [_launch_shared(unit.model, unit.kernel, c, unit) for c in result]
    good: list[Candidate] = []
    rejected: list[str] = []
    for cand in result:
        why = validate(unit.model, unit.kernel, cand)
        parts = _split(unit, cand.edits) if why is None else unit.relabel(why)
        if isinstance(parts, str):
            line = f"{cand.description}: {parts}"
            rejected.append(Untranslatable(line) if isinstance(parts, Untranslatable) else line)
            continue
        own, others = parts
        others = {path: _with_helpers(unit.text_of(path) or "", edits, cand.helpers) for path, edits in others.items()}
        for path, edits in cand.file_edits.items():  # files outside the unit the step edits itself (a header)
            others[path] = [*others.get(path, []), *edits]
        try:
            new_text = apply_edits(unit.own.text, own)
            for path, edits in others.items():
                apply_edits(unit.text_of(path) or "", edits)
        except ValueError as exc:
            rejected.append(f"{cand.description}: {exc}")
            continue
        names = ", ".join(sorted(p.rsplit("/", 1)[-1] for p in others if p not in cand.file_edits))
        note = "; ".join(n for n in (f"launch in {names} edited too" if names else "", cand.title_note) if n)
        good.append(dataclasses.replace(
            cand, edits=own, new_text=new_text, file_edits=others, title_note=note,
            description=unit.relabel(cand.description) + (f" ({note})" if note else "")))
    if not good:
        if not rejected:
            return t.not_applicable("no candidate was produced")
        return NotApplicable(reason=f"every candidate was rejected ({rejected[0]})", transform_id=t.id,
                             rejected=tuple(rejected))
    return good


_INCLUDE_LINE = re.compile(rb"^[ \t]*#[ \t]*include\b[^\n]*\n?", re.MULTILINE)


def _with_helpers(text: str, edits: list[TextEdit], helpers: dict[str, str]) -> list[TextEdit]:
    """``edits`` of a launcher file whose text is ``text``, with the definition of each helper of ``helpers`` that
    the edits call and the file does not define placed after the last ``#include`` that comes before the first
    call (the joint unit may have put it after the kernel file's includes, which another translation unit does not
    see, or after a later include of the launcher, below the call)."""
    out = list(edits)
    data = text.encode("utf-8")
    for name, definition in helpers.items():
        calls = [e.start_byte for e in out if f"{name}(" in e.new_text and definition.strip() not in e.new_text]
        if name in text or not calls:
            continue
        out = [e for e in out if definition.strip() not in e.new_text]
        pos = max((m.end() for m in _INCLUDE_LINE.finditer(data) if m.end() <= min(calls)), default=0)
        out.insert(0, TextEdit(pos, pos, definition))
    return out


class Untranslatable(str):
    """Why a candidate's edit cannot be written into a cupy launch of the joint unit (a value other code reads, or
    C that Python reads otherwise): the step falls back to its launch-independent form."""


def _split(unit: LaunchUnit, edits: list[TextEdit]) -> tuple[list[TextEdit], dict[str, list[TextEdit]]] | str:
    """Edits of the joint unit as edits of the kernel's file and of each launcher (by path), or why not (an edit
    outside the user's text: :meth:`LaunchUnit.locate`)."""
    own: list[TextEdit] = []
    others: dict[str, list[TextEdit]] = {}
    for e in edits:
        where = unit.locate(e.start_byte, e.end_byte)
        if where is None:
            return "an edit falls between the kernel's file and its launcher"
        path, s, t = where
        fixed = unit.fixed(e.start_byte, e.end_byte)
        if fixed:
            return Untranslatable(fixed)
        new_text = unit.user_text(e.start_byte, e.end_byte, e.new_text)
        if new_text is None:  # a cupy launch's component that Python would not read as C does
            text = unit.text_of(path or unit.own.path) or ""
            line = text.encode("utf-8").count(b"\n", 0, s) + 1
            return Untranslatable(f"the cupy launch at line {line} of {Path(path or unit.own.path).name} would need "
                                  f"`{e.new_text.strip()}`, which is not an integer expression Python reads as C does")
        (own if path is None else others.setdefault(path, [])).append(TextEdit(s, t, new_text))
    return own, others


def no_transform_message(title: str, guidance: str, llm_hint: str) -> str:
    """Why the rules engine cannot make the step ``title``: it has no mechanical transform.

    Args:
        title: the strategy's title (knowledge base).
        guidance: the strategy's guidance; its first sentence tells how to apply it by hand.
        llm_hint: how to get the LLM engine where this message is shown (``'Set htam.engine to "llm"'`` in an
            editor, ``"Run with --engine llm"`` on the command line), without a trailing period.
    """
    by_hand = first_sentence(guidance, stop=False)
    return (f"“{title}” has no mechanical transform, so the rules engine cannot write it. {llm_hint} to have a "
            "model write it" + (f", or apply it by hand: {by_hand}" if by_hand else ", or apply it by hand"))


#: The environment variable that makes a transform's internal failure raise (as the command line's boundary
#: reads it: a traceback instead of the one line).
DEBUG_ENV = "HTAM_DEBUG"


def internal_refusal(title: str, transform_id: str, kernel: Kernel, exc: BaseException) -> NotApplicable:
    """The one-line refusal of step ``title`` when its transform ``transform_id`` failed on ``kernel`` with
    ``exc`` (a bug in htam): the exception's type and first line, and how to get its traceback. The traceback
    goes to the log (``logging`` at error level)."""
    _log.error("transform %s failed on %s", transform_id, kernel.name, exc_info=exc)
    return NotApplicable(reason=f"“{title}” could not be checked on {kernel.name}: internal error in {transform_id} "
                                f"({exception_line(exc)}). This is a bug in htam; "
                                f"set {DEBUG_ENV}=1 to raise it with its traceback", transform_id=transform_id)


def resolve_step(title: str, transform_id: str | None, guidance: str, model: SourceModel, kernel: Kernel,
                 profile: Profile | None, *, llm_hint: str, files: Mapping[str, str] | None = None
                 ) -> list[Candidate] | NotApplicable:
    """A ranked step made with the rules engine: its transform's validated candidates, or why it cannot be.

    This is the one place that turns a knowledge-base strategy into mechanical candidates or a refusal the
    user reads (the editor's code action, ``htam suggest`` and the optimize loop's report all show this
    sentence). The refusal's ``reason`` is a whole sentence: :func:`no_transform_message`, an unknown id, or
    "“title” does not apply to KERNEL: <the transform's reason>" (:func:`propose`).

    Args:
        title, transform_id, guidance: the strategy's title, mechanical transform id (``None``: none) and
            guidance.
        model, kernel, profile, files: as for :func:`propose`.
        llm_hint: see :func:`no_transform_message`.

    Never raises for a step that cannot be made, nor for a transform that fails on this kernel: a failure inside
    a transform or the analysis it reads (a bug in htam, ``RecursionError`` on an odd spelling, say) refuses this
    one step in one line (:func:`internal_refusal`), so the other steps of the kernel are still offered by the
    editor, the command line and the benches; with ``HTAM_DEBUG`` set it is raised instead, for its traceback.
    """
    if not transform_id:
        return NotApplicable(reason=no_transform_message(title, guidance, llm_hint))
    try:
        result = propose(transform_id, model, kernel, profile, files=files)
    except KeyError as exc:
        return NotApplicable(reason=str(exc.args[0]), transform_id=transform_id)
    except Exception as exc:  # noqa: BLE001 - one step's failure is that step's refusal, never a crash of the list
        if os.environ.get(DEBUG_ENV):
            raise
        return internal_refusal(title, transform_id, kernel, exc)
    if isinstance(result, NotApplicable):
        return NotApplicable(reason=f"“{title}” does not apply to {kernel.name}: {result.reason}",
                             transform_id=result.transform_id or transform_id, rejected=result.rejected)
    return result


#: Transforms being composed after an enabling step now, in this thread or task (ids): a step never composes after
#: itself again. A context variable, so proposals made at once on other threads do not see each other's.
_COMPOSING: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("htam_composing", default=frozenset())


def compose_after(first_id: str, then: Transform, model: SourceModel, kernel: Kernel, profile: Profile | None
                  ) -> list[Candidate] | NotApplicable:
    """``then``'s candidates made after the enabling step ``first_id`` (its first candidate): the first step's
    edit is applied to ``model``'s text, the text is parsed again, ``then`` proposes on the result, and each of its
    candidates becomes one candidate on ``model.text`` (:func:`diff_edits`; the two descriptions joined) of
    ``then``'s transform and strategy, so a step that needs another shape first (a 2-D block for a tile) is offered
    as one step. ``model`` may be a joint unit (kernel and launches in one text): the edits are then split back by
    the caller as any step's. Either step editing other files is refused (their offsets would be those of texts
    this function does not hold).

    Returns:
        The composed candidates (not yet validated; :func:`propose` validates them as usual), or
        :class:`NotApplicable` with the first step's or ``then``'s reason."""
    if then.id in _COMPOSING.get():
        return then.not_applicable(f"{then.id} is already being composed after {first_id}")
    first = get(first_id).propose(model, kernel, profile)
    if isinstance(first, NotApplicable):
        return then.not_applicable(first.reason)
    pre = first[0]
    if pre.file_edits:
        return then.not_applicable(f"{first_id} edits other files; {then.id} cannot be made after it in one step")
    after = parse_text(pre.new_text, model.file_language, model.path)
    k2 = next((k for k in after.kernels if k.answers_to(kernel.name) and not k.incomplete), None)
    if k2 is None:
        return then.not_applicable(f"{kernel.name} is not found after {first_id}")
    token = _COMPOSING.set(_COMPOSING.get() | {then.id})
    try:
        result = then.propose(after, k2, profile)
    finally:
        _COMPOSING.reset(token)
    if isinstance(result, NotApplicable):
        return then.not_applicable(f"after {first_id}: {result.reason}")
    out = []
    for c in result:
        if c.file_edits:
            continue
        out.append(dataclasses.replace(
            c, edits=diff_edits(model.text, c.new_text), params={**c.params, "after": first_id},
            description=f"{pre.description}, then {c.description[:1].lower()}{c.description[1:]}",
            changes_numerics=c.changes_numerics or pre.changes_numerics, helpers={**pre.helpers, **c.helpers}))
    return out or then.not_applicable(f"after {first_id}, every candidate of {then.id} edits other files")
