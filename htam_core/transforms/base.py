"""Core types of the mechanical transforms: text edits, candidates, "not applicable" results, the base class.

A transform is a source-to-source rewrite of one kernel (HTAM's *local strategy* with a mechanical
implementation, see docs/MEMORY.md). It reads the kernel through the source model
(:mod:`htam_core.source.model`) and proposes one or more :class:`Candidate` edits, or says why it does
not apply with a :class:`NotApplicable`. :func:`htam_core.transforms.registry.propose` validates every
candidate (the file must still parse and the kernel must still exist) before anyone sees it.

Writing a transform: subclass :class:`htam_core.transforms._cuda.CudaTransform` (CUDA, also CUDA held in a
Python ``load_inline`` string) or :class:`htam_core.transforms._triton.TritonTransform`, set ``id``,
``languages`` and ``summary``, implement ``propose_unit(unit, model, kernel, profile)`` and decorate the class
with :func:`htam_core.transforms.registry.register`. Their ``propose`` (:class:`UnitTransform`) parses the
kernel's unit first and answers :class:`NotApplicable` when the kernel cannot be located in the tree, so
``propose_unit`` always gets a parsed unit. A transform that needs no parsed unit subclasses
:class:`Transform` and implements ``propose`` itself.
"""

from __future__ import annotations

import dataclasses
import difflib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from htam_core.source.analysis.macro_loops import expanded_view
from htam_core.source.model import Kernel, SourceModel
from htam_core.types.language import traits
from htam_core.types.profile import Profile


@dataclass(frozen=True)
class TextEdit:
    """Replace the UTF-8 bytes ``[start_byte, end_byte)`` of the file with ``new_text``.

    ``start_byte == end_byte`` inserts; an empty ``new_text`` deletes. Offsets refer to the text the
    candidate was proposed for (``SourceModel.text``), never to a partly edited text.
    """

    start_byte: int
    end_byte: int
    new_text: str

    def to_json(self) -> dict[str, Any]:
        """JSON form ``{"start_byte", "end_byte", "new_text"}``."""
        return {"start_byte": self.start_byte, "end_byte": self.end_byte, "new_text": self.new_text}


@dataclass
class Candidate:
    """One proposed rewrite of a kernel.

    Attributes:
        transform_id: id of the transform that made it (``"cuda.block_size"``).
        strategy: the HTAM local strategy it implements (equal to ``transform_id`` by default).
        description: one human-readable sentence saying what changes and why it stays correct.
        params: the chosen parameters (``{"block": 512}``), JSON-serializable.
        edits: non-overlapping edits on the original text.
        new_text: the whole file after the edits.
        changes_numerics: results may differ in the last bits (fast-math intrinsics ...).
        reorders_only: the only numerics change is the order of floating-point additions (a tree, a shuffle or
            a vector sum of the same terms: equal in exact arithmetic), not their precision; ``False`` when
            ``changes_numerics`` is.
        file_edits: edits of other files of the workspace, by path (the launch of a kernel launched from
            another file: a step that changes the launch edits both places as one change); offsets refer to
            each file's text as it is on disk. Empty for a step that edits the kernel's file only.
        helpers: file-level definitions the edits call, by name (``{"htam_sm_grid": "static inline ..."}``): a
            launcher file whose edits call one and that does not define it gets the definition after its includes.
        title_note: a few words an editor adds to the step's title: where the launch was edited, or that none
            was found and the form is correct for any grid; ``""`` when there is nothing to say.
    """

    transform_id: str
    strategy: str
    description: str
    params: dict[str, Any]
    edits: list[TextEdit]
    new_text: str
    changes_numerics: bool = False
    reorders_only: bool = False
    file_edits: dict[str, list[TextEdit]] = field(default_factory=dict)
    title_note: str = ""
    helpers: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON form (without ``new_text``, which can be rebuilt from the edits; ``file_edits`` only when the
        step also edits other files)."""
        extra = {"file_edits": {p: [e.to_json() for e in es] for p, es in self.file_edits.items()}} \
            if self.file_edits else {}
        return {**extra,
            "transform_id": self.transform_id,
            "strategy": self.strategy,
            "description": self.description,
            "params": dict(self.params),
            "edits": [e.to_json() for e in self.edits],
            "changes_numerics": self.changes_numerics,
            "reorders_only": self.reorders_only,
        }


@dataclass(frozen=True)
class NotApplicable:
    """A transform does not apply to a kernel; ``reason`` says specifically why (shown to the user)."""

    reason: str
    transform_id: str = ""
    rejected: tuple[str, ...] = field(default_factory=tuple)

    def __bool__(self) -> bool:
        return False


def apply_edits(text: str, edits: Sequence[TextEdit]) -> str:
    """Apply ``edits`` (byte offsets into the UTF-8 encoding of ``text``) and return the new text.

    Args:
        text: the original text.
        edits: edits on ``text``, in any order; they must not overlap (two inserts at one offset are
            applied in the given order).

    Raises:
        ValueError: an edit is out of range, reversed, overlaps another, or splits a UTF-8 character.
    """
    data = text.encode("utf-8")
    order = sorted(range(len(edits)), key=lambda i: (edits[i].start_byte, edits[i].end_byte, i))
    out: list[bytes] = []
    pos = 0
    for i in order:
        e = edits[i]
        if not 0 <= e.start_byte <= e.end_byte <= len(data):
            raise ValueError(f"edit [{e.start_byte}, {e.end_byte}) is outside the text (0..{len(data)})")
        if e.start_byte < pos:
            raise ValueError(f"edit [{e.start_byte}, {e.end_byte}) overlaps an earlier edit ending at {pos}")
        out.append(data[pos : e.start_byte])
        out.append(e.new_text.encode("utf-8"))
        pos = e.end_byte
    out.append(data[pos:])
    try:
        return b"".join(out).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"an edit splits a UTF-8 character: {exc}") from exc


class Transform(ABC):
    """A mechanical rewrite of one kernel.

    Class attributes:
        id: the transform id the HTAM knowledge base references (``"triton.block_size"``).
        strategy: the HTAM local strategy id (defaults to ``id``).
        languages: kernel languages it handles (``"cuda"``, ``"triton"``, ``"cuda-in-python"``).
        changes_numerics: its candidates may change results in the last bits.
        reorders_only: that change is only the order of floating-point additions (see :class:`Candidate`).
        summary: one line for listings and LLM prompts.
        kind: what the rewrite changes, one of :data:`htam_core.transforms.registry.KINDS`: ``"structural"``
            (the default: the thread mapping, the memory hierarchy or the algorithm), ``"launch"`` (launch
            parameters only), ``"hint"`` (qualifiers, pragmas, cache or alignment hints) or ``"math"``
            (intrinsic substitution). Only ``"structural"`` steps count as structural.
        reads_launch: its edit of the kernel is computed from the block size of the kernel's launches
            (``__launch_bounds__``); with ``kind == "launch"`` it is not made while a launch of the kernel may run
            another kernel of the same name (:attr:`~htam_core.source.model.LaunchSite.ambiguous`).
        part_of: the id of the transform that falls back to this one when its own pattern does not match (the
            strategy of that transform makes both edits), or ``""``: a transform with ``part_of`` needs no
            strategy of its own in the knowledge base, and is still proposed by id (benchmarks, tests).
    """

    id: ClassVar[str] = ""
    kind: ClassVar[str] = "structural"
    part_of: ClassVar[str] = ""
    reads_launch: ClassVar[bool] = False
    strategy: ClassVar[str] = ""
    languages: ClassVar[tuple[str, ...]] = ()
    changes_numerics: ClassVar[bool] = False
    reorders_only: ClassVar[bool] = False
    summary: ClassVar[str] = ""

    @abstractmethod
    def propose(
        self, model: SourceModel, kernel: Kernel, profile: Profile | None = None
    ) -> list[Candidate] | NotApplicable:
        """Propose candidates for ``kernel`` of ``model``, or say why the transform does not apply.

        Implementations must not raise for kernels they cannot handle: they return
        :class:`NotApplicable` with a specific reason. ``profile`` is optional context (block size,
        bottleneck) and may be ``None``.
        """

    def candidate(
        self, model: SourceModel, description: str, params: dict[str, Any], edits: list[TextEdit]
    ) -> Candidate:
        """Build a :class:`Candidate` of this transform from edits on ``model.text``."""
        return Candidate(
            transform_id=self.id,
            strategy=self.strategy or self.id,
            description=description,
            params=params,
            edits=list(edits),
            new_text=apply_edits(model.text, edits),
            changes_numerics=self.changes_numerics,
            reorders_only=self.changes_numerics and self.reorders_only,
        )

    def not_applicable(self, reason: str) -> NotApplicable:
        """A :class:`NotApplicable` tagged with this transform's id."""
        return NotApplicable(reason=reason, transform_id=self.id)


U = TypeVar("U")


class UnitTransform(Transform, Generic[U]):
    """A transform that works on the kernel's parsed unit (template method over :meth:`Transform.propose`).

    :meth:`propose` calls :meth:`load_unit`; a string result (the kernel cannot be located in the tree)
    becomes :class:`NotApplicable` with that string as reason, otherwise :meth:`propose_unit` does the
    work, and a refusal may be restated by :meth:`refusal_fact`. Language bases bind :meth:`load_unit`: ``_cuda.CudaTransform`` (``CudaUnit``) and
    ``_triton.TritonTransform`` (``TritonUnit``).
    """

    @abstractmethod
    def load_unit(self, model: SourceModel, kernel: Kernel) -> U | str:
        """The parsed unit that holds ``kernel`` of ``model``, or the reason it cannot be located."""

    def propose(
        self, model: SourceModel, kernel: Kernel, profile: Profile | None = None
    ) -> list[Candidate] | NotApplicable:
        """Load the kernel's unit and hand it to :meth:`propose_unit`, or say why it cannot be loaded.

        A CUDA kernel whose body uses a statement macro that opens a loop (``CUDA_KERNEL_LOOP(i, n) { ... }``) is
        read and edited in its expanded view (:func:`~htam_core.source.analysis.macro_loops.expanded_view`), where
        the analysis reads its facts; each candidate is written back on ``model.text`` as line edits
        (:func:`diff_edits`), the edited macro use written out as the loop it stands for."""
        view = None if traits(kernel.language).tiles else expanded_view(model, kernel)
        if view is not None:
            res = self.propose(view.model, view.kernel, profile)
            if isinstance(res, NotApplicable):
                return res
            return [written_back(model.text, view.model.text, c) for c in res]
        unit = self.load_unit(model, kernel)
        if isinstance(unit, str):
            return self.not_applicable(unit)
        res = self.propose_unit(unit, model, kernel, profile)
        if isinstance(res, NotApplicable):
            why = self.refusal_fact(unit, kernel, res.reason)
            if why:
                return self.not_applicable(why)
        return res

    def refusal_fact(self, unit: U, kernel: Kernel, reason: str) -> str | None:
        """The refusal to give instead of ``reason`` (what :meth:`propose_unit` said) when a fact of the kernel
        explains it better (the kernel is already in the form the step makes, or lacks what the step needs), else
        ``None`` (the default: ``reason`` stands)."""
        return None

    @abstractmethod
    def propose_unit(
        self, unit: U, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """Propose candidates for ``kernel`` (parsed as ``unit``), or say why the transform does not apply.

        Same contract as :meth:`Transform.propose`: never raise for kernels it cannot handle, return
        :class:`NotApplicable` with a specific reason instead; ``profile`` may be ``None``.
        """


def diff_edits(old: str, new: str) -> list[TextEdit]:
    """Non-overlapping line edits (UTF-8 byte offsets into ``old``) that turn ``old`` into ``new``: the changed
    line ranges of a line diff (``difflib.SequenceMatcher``, no junk heuristic), so a step made on an edited text
    is expressed on the text the user has. Raises nothing."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    offs = [0]
    for line in a:
        offs.append(offs[-1] + len(line.encode("utf-8")))
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "equal":
            out.append(TextEdit(offs[i1], offs[i2], "".join(b[j1:j2])))
    return out


def written_back(text: str, view: str, cand: Candidate) -> Candidate:
    """``cand``, made on ``view`` (``text`` with some lines rewritten, :func:`diff_edits` of the two), as edits of
    ``text``: its own edits moved back when none touches a rewritten line (the macro uses stay as written), else
    the line edits from ``text`` to its result (the rewritten lines written out)."""
    regions: list[tuple[int, int, int]] = []  # (start, end) in ``view`` of each rewritten range, shift after it
    shift = 0
    for e in diff_edits(text, view):
        size = len(e.new_text.encode("utf-8"))
        start = e.start_byte + shift
        shift += size - (e.end_byte - e.start_byte)
        regions.append((start, start + size, shift))
    moved = []
    for e in cand.edits:
        if any(s <= e.start_byte < end or (s < e.end_byte <= end) or (e.start_byte < s and end <= e.end_byte)
               for s, end, _ in regions):
            return dataclasses.replace(cand, edits=diff_edits(text, cand.new_text))
        delta = next((after for _, end, after in reversed(regions) if end <= e.start_byte), 0)
        moved.append(dataclasses.replace(e, start_byte=e.start_byte - delta, end_byte=e.end_byte - delta))
    return dataclasses.replace(cand, edits=moved, new_text=apply_edits(text, moved))
