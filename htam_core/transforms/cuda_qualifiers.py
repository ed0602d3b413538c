"""``cuda.restrict_const``: add ``const`` and ``__restrict__`` to read-only pointer parameters.

Only parameters that the kernel body provably never writes through get the qualifiers (see
:attr:`htam_core.source.analysis.PointerFacts.mode`, ``"read"`` only when every use is a visible load). ``__restrict__`` promises the compiler that the
pointee is not modified through another pointer during the launch, which lets it keep loads in
registers and use the read-only data path. Idea source: CUDA C++ Best Practices Guide, "Restricted
pointers"; CUDA C++ Programming Guide, "__restrict__".

The kernel's declarations are edited with its definition, in the same change
(:mod:`htam_core.source.analysis.prototypes`): one above the definition, one in a launching file read with it, one
in a header of the workspace (``Candidate.file_edits``). The pointee's ``const`` is part of the function's type: a
declaration left with ``float *`` would name another function, never defined (nvcc's link fails), so a
declaration whose parameters cannot be matched to the definition's refuses the step in one line. ``__restrict__``
alone is not part of the type (nvcc builds and links a definition with it and a declaration without it, the same
symbol), and is written on the declarations too, to keep them alike.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from htam_core.source.analysis import nodes as syn
from htam_core.source.analysis.launch_aliases import LaunchAlias, aliased_with, launch_aliases
from htam_core.source.analysis.prototypes import Prototype, file_prototypes, prototypes
from htam_core.source.analysis.syntax import node_text
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms._cuda import CudaTransform, CudaUnit
from htam_core.transforms.base import Candidate, NotApplicable, TextEdit
from htam_core.transforms.cuda_launch import CUDA_LANGS
from htam_core.transforms.registry import calling_files, declaring_files, register
from htam_core.types.profile import Profile


def pointer_params(unit: CudaUnit) -> list[tuple[str, object, object, bool, bool]]:
    """Single-level pointer params: ``(name, param_node, pointer_declarator, has_const, has_restrict)``."""
    out = []
    for p in unit.params:
        decl = p.child_by_field_name("declarator")
        if decl is None or not syn.is_pointer_declarator(decl):
            continue
        inner = decl.child_by_field_name("declarator")
        if inner is None or not syn.is_identifier(inner):
            continue  # pointer to pointer, array of pointers ...
        # read as parsed: a qualifier macro (RESTRICT) is parsed as the qualifier it stands for
        quals_before = {node_text(c) for c in p.children if syn.is_type_qualifier(c)}
        quals_ptr = {node_text(c) for c in decl.children if syn.is_pointer_qualifier(c)}
        has_const = "const" in quals_before
        has_restrict = bool(quals_ptr & {"__restrict__", "__restrict", "restrict"})
        out.append((unit.t(inner), p, decl, has_const, has_restrict))
    return out


def not_aliased(model: SourceModel, kernel: Kernel, names: list[str], written: set[str]) -> tuple[list[str], list[str]]:
    """``names`` (read-only pointer parameters) split into those no known launch gives the buffer of a written
    pointer, and one reason line for each that some launch does (``k<<<g, b>>>(d_x, d_x, n)``: the analysis
    layer's :func:`~htam_core.source.analysis.launch_aliases.launch_aliases`): ``__restrict__`` promises that no
    other pointer modifies the data during the launch, and the read-only cache of ``__ldg`` does not see the
    kernel's own writes, so both would be wrong there. A kernel with no launch in its file keeps every name."""
    aliases = launch_aliases(model, kernel, lambda name: calling_files(model, name))
    keep, reasons = [], []
    for name in names:
        al = aliased_with(aliases, name, written)
        if al is None:
            keep.append(name)
        else:
            reasons.append(alias_reason(al, name))
    return keep, reasons


def alias_reason(al: LaunchAlias, name: str) -> str:
    """The one line saying that read-only ``name`` is the same buffer as a written pointer at launch ``al``."""
    other = al.second if al.first == name else al.first
    via = f" {al.via}" if al.via else ""
    passes = "passes" if al.certain else "may pass"
    return (f"{name} is read but the launch on line {al.line} {passes} the same buffer ({al.buffer}) as {other}{via}, "
            f"which the kernel writes: a read-only load or a no-alias promise on {name} would be wrong there")


def declaration_edits(protos: tuple[Prototype, ...], changes: list[tuple[int, bool, bool]], nparams: int,
                      where: str) -> list[TextEdit] | str:
    """Edits giving each declaration of ``protos`` the qualifiers the definition gets, or why it cannot be.

    Args:
        protos: the declarations (file bytes of the file they are in).
        changes: ``(parameter index, add const, add __restrict__)`` of the definition.
        nparams: the definition's number of parameters: a declaration with another number declares another
            overload, and is left alone.
        where: how a message names the file (``"k.cuh"``, ``"this file"``).
    """
    edits: list[TextEdit] = []
    for proto in protos:
        if not changes or len(proto.params) != nparams:
            continue
        for i, add_const, add_restrict in changes:
            pp = proto.params[i]
            if not pp.pointer:
                return f"parameter {i + 1} of its declaration at line {proto.line} of {where} is not written as " \
                    "a pointer like the definition's (a typedef?), so the two cannot be kept alike; edit them " \
                    "together by hand"
            if add_const and not pp.const:
                edits.append(TextEdit(pp.const_at, pp.const_at, "const "))
            if add_restrict and not pp.restrict:
                edits.append(TextEdit(pp.restrict_at, pp.restrict_at, pp.restrict_text))
    return edits


def _line_of(model: SourceModel, byte: int) -> int:
    """1-based line of file byte ``byte`` of ``model``."""
    return model.text.encode("utf-8").count(b"\n", 0, byte) + 1


@register
class CudaRestrictConst(CudaTransform):
    """Add ``const`` and ``__restrict__`` to read-only pointer parameters."""

    id = "cuda.restrict_const"

    kind = "hint"
    languages = CUDA_LANGS
    summary = "add const __restrict__ to read-only pointer params"

    def propose_unit(
        self, unit: CudaUnit, model: SourceModel, kernel: Kernel, profile: Profile | None
    ) -> list[Candidate] | NotApplicable:
        """One candidate qualifying every provably read-only pointer parameter."""
        ptrs = pointer_params(unit)
        fields = [p.name for p in unit.facts.pointers if "." in p.name]
        if fields:  # __restrict__ on the other pointers would promise they alias none of these
            return self.not_applicable(f"{kernel.name} reads buffers through a struct passed by value "
                                       f"({', '.join(fields)}); qualifying them would edit the struct, which this "
                                       "step leaves as it is")
        if not ptrs:
            return self.not_applicable(f"{kernel.name} has no pointer parameters")
        edits: list[TextEdit] = []
        changed: list[str] = []
        changes: list[tuple[int, bool, bool]] = []
        notes: dict[str, list[str]] = {"written": [], "unclear": [], "done": [], "aliased": []}
        written = {pf.name for pf in unit.facts.pointers if pf.mode in ("write", "readwrite") or pf.writes}
        keep, aliased = not_aliased(model, kernel, [n for n, *_ in ptrs if n not in written], written)
        for name, p, decl, has_const, has_restrict in ptrs:
            facts = unit.facts.pointer(name)
            access = facts.mode if facts is not None else "unknown"
            if access in ("write", "readwrite"):
                notes["written"].append(name)
                continue
            if access in ("unknown", "unused") or name not in keep:
                notes["unclear" if name in keep else "aliased"].append(name)
                continue
            if has_const and has_restrict:
                notes["done"].append(name)
                continue
            if not has_const:
                edits.append(unit.insert(p.start_byte, "const "))  # type: ignore[attr-defined]
            if not has_restrict:
                inner = decl.child_by_field_name("declarator")  # type: ignore[attr-defined]
                edits.append(unit.insert(inner.start_byte, "__restrict__ "))
            changed.append(name)
            changes.append((unit.params.index(p), not has_const, not has_restrict))
        if not changed and aliased:
            return self.not_applicable("; ".join(aliased))
        if not changed:
            label = {"written": "written by the kernel", "unclear": "their use could not be read",
                     "done": "already const __restrict__"}
            parts = [f"{label[k]}: {', '.join(v)}" for k, v in notes.items() if v]
            return self.not_applicable(
                "no read-only pointer parameter lacks const __restrict__ (" + "; ".join(parts) + ")"
            )
        own = prototypes(unit.root, unit.src, kernel.name, (unit.func.start_byte, unit.func.end_byte), unit.base)
        own = tuple(dataclasses.replace(pr, line=_line_of(model, pr.span[0])) for pr in own)
        more = declaration_edits(own, changes, len(unit.params), "this file")
        if isinstance(more, str):
            return self.not_applicable(f"{kernel.name}: {more}")
        headers: dict[str, list[TextEdit]] = {}
        for path, text in declaring_files(model, kernel):
            found = declaration_edits(file_prototypes(text.encode("utf-8"), kernel.name), changes, len(unit.params),
                                      Path(path).name)
            if isinstance(found, str):
                return self.not_applicable(f"{kernel.name}: {found}")
            if found:
                headers[path] = found
        declared = len(own) + len(headers)
        cand = self.candidate(
            model,
            f"mark read-only pointer parameter(s) {', '.join(changed)} of {kernel.name} const __restrict__ "
            "(assumes they do not alias the written outputs)"
            + (f"; its declaration{'s' if declared > 1 else ''} too" if declared else ""),
            {"params": changed},
            edits + more,
        )
        cand.file_edits = headers
        if headers:
            cand.title_note = f"declaration in {', '.join(sorted(Path(p).name for p in headers))} edited too"
        return [cand]
