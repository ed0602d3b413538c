"""Check one candidate file with every static guard and the correctness check: the engine of ``htam verify``.

Order (KernelBench's discipline): the static reward-hack guards read the file first
(:mod:`htam_core.verify.guards`); only a candidate they do not refuse is run, in a worker process
(:func:`htam_core.verify.run.verify_in_worker`): on the GPU when there is one, through the Triton
interpreter on the CPU, and compile-only for CUDA without a GPU. A compile-only verdict is never
``correct``: it is *unverified*, which is not the same as wrong.

The verdict's ``refused_by`` mixes static rule ids (:data:`htam_core.verify.guards.RULES`) and runtime rule
ids (:data:`htam_core.verify.runtime_rules.RUNTIME_RULES`); ``labels`` holds labelling rules (TF32, reduced
precision): such a candidate may be correct, but its speedup is never a plain fp32 speedup.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.find import find_harness
from htam_core.harness.infer_cuda import inferred_summary
from htam_core.harness.pysource import read_py_facts
from htam_core.harness.relaunch import relaunch
from htam_core.harness.spec import (
    SPEC_FILENAME,
    check_reference,
    is_function_reference,
    load_toml,
    parse_kernel_table,
)
from htam_core.source import load
from htam_core.source.included import included_kernels
from htam_core.types.language import traits
from htam_core.verify.correctness import CorrectnessResult, VerifiedOn
from htam_core.verify.guards import GuardFinding, check_source, labels, refused_by
from htam_core.verify.run import verify_in_worker

VerdictStatus = Literal["accepted", "refused", "unverified"]


@dataclass
class Verdict:
    """The verdict on one candidate.

    Attributes:
        correct: verified against the reference and refused by no rule (never true for compile-only).
        status: ``"accepted"`` (exit 0), ``"refused"`` (a rule refused it, exit 1) or ``"unverified"``
            (nothing could run it here, e.g. CUDA without a GPU: not correct, not wrong; exit 1).
        verified_on: ``"gpu"``, ``"interpreter"``, ``"compile-only"``, or ``None`` when nothing ran (refused
            by the static guards before running).
        refused_by: static and runtime rule ids that refused it, sorted.
        labels: labelling rule ids (``tf32``, ``reduced-precision``).
        messages: one line each: what every guard and check found.
        findings: the static guard findings.
        correctness: the runtime check's result, or ``None`` when it did not run.
        harness: where the harness came from (``"htam.toml [kernel.k]"``, ``"--reference ref.py"``), or ``None``.
    """

    correct: bool
    status: VerdictStatus
    verified_on: VerifiedOn | None
    refused_by: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    findings: list[GuardFinding] = field(default_factory=list)
    correctness: CorrectnessResult | None = None
    harness: str | None = None

    @property
    def accepted(self) -> bool:
        """True when the candidate is correct and no rule refused it."""
        return self.status == "accepted"

    def to_json(self) -> dict[str, Any]:
        """``{"correct", "verified_on", "refused_by", "messages", "labels", "status", "findings", "harness",
        "max_abs_err", "trials"}`` (the last two ``null``/0 when nothing ran)."""
        c = self.correctness
        return {"correct": self.correct, "verified_on": self.verified_on, "refused_by": list(self.refused_by),
                "messages": list(self.messages), "labels": list(self.labels), "status": self.status,
                "findings": [f.to_json() for f in self.findings], "harness": self.harness,
                "max_abs_err": c.max_abs_err if c else None, "trials": c.trials if c else 0}


def file_language(path: str | Path) -> str:
    """``"cuda"`` for ``.cu``/``.cuh`` files, ``"python"`` otherwise (the guards' language argument)."""
    return "cuda" if Path(path).suffix in (".cu", ".cuh") else "python"


# -- harness resolution ---------------------------------------------------------------------------------
def _py_facts(path: Path) -> Any:
    return read_py_facts(path.read_text(encoding="utf-8", errors="replace"))


def _language_of(path: Path) -> str:
    if path.suffix in (".cu", ".cuh"):
        return "cuda"
    facts = _py_facts(path)
    if facts.triton_kernels:
        return "triton"
    if facts.has_cuda_string or facts.uses_load_inline or facts.uses_cupy_raw:
        return "cuda-in-python"
    return "python"


def _kernelbench_harness(cand: Path, ref: Path, kernel: str | None, source: str) -> Harness:
    if not ref.is_file():
        raise HarnessError(f"the reference {ref} does not exist: pass a file with class Model, get_inputs() and "
                           "get_init_inputs()")
    facts, rfacts = _py_facts(cand), _py_facts(ref)
    if cand.suffix != ".py" or not facts.is_kernelbench_candidate:
        raise HarnessError(f"{cand.name} defines no class ModelNew: --reference is for KernelBench candidates; use "
                           "--harness htam.toml for a kernel with a [kernel.<name>] table")
    if rfacts.syntax_error or not rfacts.is_kernelbench_reference:
        why = rfacts.syntax_error or "it lacks class Model, get_inputs() or get_init_inputs()"
        raise HarnessError(f"the KernelBench reference {ref.name} cannot be used: {why}")
    name = kernel or (sorted(facts.triton_kernels)[0] if facts.triton_kernels else "ModelNew")
    return Harness(kind="kernelbench", path=str(cand), kernel=name, language=_language_of(cand),  # type: ignore[arg-type]
                   source=source, reference_path=str(ref))


def _with_reference(h: Harness, reference: str) -> Harness:
    """``h`` (the candidate's own harness) checked against ``reference`` instead: a ``"file.py:function"``
    (the file relative to the current folder), ``"module:function"`` or torch expression over the inputs, as
    ``reference =`` of an ``htam.toml`` table takes it (:func:`htam_core.harness.spec.check_reference`).

    Raises:
        HarnessError: ``h`` has no inputs to call a reference with (a KernelBench pair, a ``main()`` run
            whole), the file does not exist, or the expression is malformed.
    """
    where = f"--reference {reference}"
    if not h.traits.launches:
        raise HarnessError(f"{where}: the harness of {Path(h.path).name} ({h.source}) does not call the kernel with "
                           "named inputs, so a function or expression reference cannot be given; pass a KernelBench "
                           "reference file (class Model, get_inputs(), get_init_inputs()) or use --harness htam.toml")
    ref = reference.strip()
    if is_function_reference(ref):
        mod, _, fn = ref.rpartition(":")
        if mod.endswith(".py"):  # a path typed on the command line: relative to where the user is
            target = Path(mod).resolve()
            if not target.is_file():
                raise HarnessError(f"{where}: {target} does not exist; pass file.py:function with the file's path "
                                   "from the current folder")
            ref = f"{target}:{fn}"
    check_reference(where, ref, h.inputs, h.outputs, key="")
    head, sep, _ = (h.source or "").partition(" recorded; ")  # an inferred source ends with its reference note
    source = f"{head}{sep}reference from {where}" if sep else f"{h.source}; reference from {where}"
    return dataclasses.replace(h, reference=ref, oracle_path=None, source=source)


def _kernel_names(path: Path) -> list[str]:
    try:
        return [k.name for k in load(path).kernels]
    except Exception:  # noqa: BLE001 - a file the source model cannot read has no nameable kernel
        return []


def _pick_kernel(path: Path, kernel: str | None, tables: dict[str, Any] | None) -> str:
    if kernel:
        return kernel
    names = _kernel_names(path)
    with_table = [n for n in names if tables and n in tables]
    if len(with_table) == 1:
        return with_table[0]
    if len(names) == 1:
        return names[0]
    if not names:
        raise HarnessError(f"no CUDA or Triton kernel was found in {path.name}; pass --kernel NAME")
    raise HarnessError(f"{path.name} defines several kernels ({', '.join(names)}); pass --kernel NAME")


def against_start(candidate: Path, start: str | Path, kernel: str | None = None) -> Harness:
    """The harness that checks ``candidate`` against the starting kernel ``start`` (the oracle rule).

    The harness is the one of ``start`` (its ``htam.toml`` table, or inferred from its ``__main__`` block or
    tests); its reference is replaced by the starting kernel itself: both files' launchers run on the same
    inputs, seeds and guards, and the candidate must match ``start``'s outputs.

    A ``start`` that only launches the kernel, defined in a local header it includes (``naive.cu`` with
    ``#include "dwconv.cuh"``), stands for that header (:func:`_start_kernel`): the candidate is checked against the
    header's kernel on the launch inferred from ``start``'s ``main()``.

    Raises:
        HarnessError: ``start`` is missing, or its harness is a KernelBench pair or a ``main()`` program (those
            have their own reference: use ``--reference`` / the pair).
    """
    given = Path(start).resolve()
    if not given.is_file():
        raise HarnessError(f"--against {start}: no such file; pass the starting kernel's file")
    sp, name = _start_kernel(given, kernel)
    h = find_harness(sp, name)
    if not h.traits.launches:
        raise HarnessError(f"--against {sp.name}: its harness is a {h.kind} harness, which has its own reference; "
                           "--against needs a launcher or kernel-launch harness (htam.toml, or inferred from the file)")
    via = f" (--against {given.name})" if sp != given else " (--against)"
    return dataclasses.replace(h, path=str(candidate), reference=None, oracle_path=str(sp), origin_path=str(sp),
                               source=f"{h.source.split('; reference')[0].split('; oracle')[0]}; "
                                      f"oracle: the starting kernel {sp.name}{via}")


def _start_kernel(start: Path, kernel: str | None) -> tuple[Path, str]:
    """The file that defines the starting kernel, and its name: ``start`` itself when it defines ``kernel`` (or,
    with no ``kernel``, any kernel), else the local header it includes that does (``naive.cu`` whose ``main()``
    launches the kernel of ``#include "dwconv.cuh"``: :func:`~htam_core.source.included.included_kernels`). The
    header's harness is then the kernel-launch harness inferred from ``start``'s ``main()``
    (:mod:`htam_core.harness.infer_host`), the one ``htam optimize dwconv.cuh`` runs, so the candidate is checked
    kernel against kernel instead of against a program run whole.

    Raises:
        HarnessError: no kernel to pick (:func:`_pick_kernel`'s messages).
    """
    names = _kernel_names(start)
    if (kernel and kernel in names) or (not kernel and names):
        return start, _pick_kernel(start, kernel, None)
    home = _header_defining(start, kernel)
    if home is None:
        return start, _pick_kernel(start, kernel, None)
    return home, _pick_kernel(home, kernel, None)


def _header_defining(path: Path, kernel: str | None) -> Path | None:
    """The first local header ``path`` includes that defines ``kernel`` (with no ``kernel``: the only header that
    defines kernels), or ``None`` (none, or ``path`` cannot be read)."""
    try:
        found = included_kernels(load(path))
    except Exception:  # noqa: BLE001 - a file the source model cannot read includes no header we can use
        return None
    if kernel is None:
        return Path(found[0].path).resolve() if len(found) == 1 else None
    short = kernel.split("(")[0].split("::")[-1]
    for h in found:
        if any(n == kernel or n.split("(")[0].split("::")[-1] == short for n in h.names):
            return Path(h.path).resolve()
    return None


def resolve_harness(candidate: str | Path, *, harness_path: str | Path | None = None,
                    reference: str | Path | None = None, kernel: str | None = None,
                    against: str | Path | None = None) -> Harness:
    """Find how to run ``candidate`` against its reference.

    Args:
        candidate: the candidate file (``.py`` or ``.cu``).
        harness_path: an ``htam.toml`` or a directory holding one; its ``[kernelbench."<candidate name>"]``
            entry or ``[kernel.<name>]`` table describes the candidate even when the candidate lives
            elsewhere (its ``file`` key is ignored: the candidate takes that file's place).
        reference: a KernelBench reference file (``Model``, ``get_inputs``, ``get_init_inputs``) for a
            ``ModelNew`` candidate; or, as ``reference =`` of an ``htam.toml`` table takes it, a
            ``"file.py:function"`` (the file relative to the current folder), ``"module:function"`` or torch
            expression over the inputs, which replaces the reference of the candidate's own harness.
        kernel: the kernel's name; default the file's only kernel (or the only one with a table).
        against: the starting kernel's file: check the candidate against its outputs (:func:`against_start`).

    Returns:
        A :class:`Harness` whose ``path`` is the candidate.

    Raises:
        HarnessError: the file, reference or table is missing or malformed (the message says what to add).
    """
    cand = Path(candidate).resolve()
    if not cand.is_file():
        raise HarnessError(f"{candidate} does not exist: pass the path of the candidate .py or .cu file")
    if reference is not None:
        if is_function_reference(str(reference)) or not str(reference).strip().endswith(".py"):
            return _with_reference(resolve_harness(cand, kernel=kernel), str(reference))
        return _kernelbench_harness(cand, Path(reference).resolve(), kernel, f"--reference {reference}")
    if against is not None:
        return against_start(cand, against, kernel)
    if harness_path is None:
        tables = None
        spec = cand.parent / SPEC_FILENAME
        if spec.is_file():
            tables = (load_toml(spec).get("kernel") or {})
        if cand.suffix == ".py" and _py_facts(cand).is_kernelbench_candidate:
            facts = _py_facts(cand)
            name = kernel or (sorted(facts.triton_kernels)[0] if facts.triton_kernels else "ModelNew")
        else:
            name = _pick_kernel(cand, kernel, tables if isinstance(tables, dict) else None)
        return find_harness(cand, name)
    hp = Path(harness_path).resolve()
    spec = hp / SPEC_FILENAME if hp.is_dir() else hp
    if not spec.is_file():
        raise HarnessError(f"--harness {harness_path}: no such file; pass an htam.toml or the directory holding one")
    config = load_toml(spec)
    kb = (config.get("kernelbench") or {}).get(cand.name)
    if isinstance(kb, dict) and isinstance(kb.get("reference"), str):
        return _kernelbench_harness(cand, (spec.parent / kb["reference"]).resolve(), kernel,
                                    f'{spec} [kernelbench."{cand.name}"]')
    tables = config.get("kernel") or {}
    if not isinstance(tables, dict):
        raise HarnessError(f"{spec}: `kernel` must be a table of tables: [kernel.<name>]")
    name = _pick_kernel(cand, kernel, tables)
    table = tables.get(name)
    if not isinstance(table, dict):
        raise HarnessError(f"{spec} has no [kernel.{name}] table (tables there: {', '.join(sorted(tables)) or 'none'})"
                           f" and no [kernelbench.\"{cand.name}\"] entry; add one")
    original = spec.parent / str(table.get("file") or cand.name)
    table = {k: v for k, v in table.items() if k != "file"}
    h = parse_kernel_table(table, kernel=name, spec_path=spec, file_path=cand)
    h.origin_path = str(original.resolve())  # references and sibling modules resolve next to htam.toml
    if h.uses_oracle:  # oracle = true: the table's own file is the starting kernel, not the candidate
        h.oracle_path = str(original.resolve())
    if cand.suffix == ".py":
        h.language = _language_of(cand)  # type: ignore[assignment]
    return h


# -- the check ---------------------------------------------------------------------------------------------
def verify_candidate(candidate: str | Path, harness: Harness | None, *, harness_error: str | None = None,
                     run_refused: bool = False, baseline_dtype: str | None = "float32", timeout_s: float = 600.0,
                     interpret: bool | None = None) -> Verdict:
    """Check ``candidate`` with every static guard, then (in a worker) against its reference.

    Args:
        candidate: the candidate file.
        harness: from :func:`resolve_harness`; ``None`` when there is none (then only the guards run and the
            verdict is refused or unverified).
        harness_error: why there is no harness (put in the messages).
        run_refused: also run the correctness check when the static guards refused the candidate, so that
            every rule it breaks is listed (it still runs only in a worker).
        baseline_dtype: the reference's dtype; the reduced-precision label only applies against float32.
        timeout_s: wall-clock limit of the worker call, seconds.
        interpret: force the Triton interpreter on (CPU) or off (GPU); default: the interpreter unless a GPU is
            visible.

    Returns:
        A :class:`Verdict`. Never raises for a bad candidate.

    Raises:
        OSError: the candidate cannot be read.
    """
    path = Path(candidate)
    text = path.read_text(encoding="utf-8", errors="replace")
    findings = check_source(text, file_language(path), baseline_dtype=baseline_dtype)
    static_refused = refused_by(findings)
    lab = labels(findings)
    messages = [f"{'refused' if f.severity == 'refuse' else 'labelled'} by guard {f.rule_id} (line {f.line}): "
                f"{f.message}" for f in findings]
    source = harness.description() if harness is not None else None
    if harness is not None and harness.traits.inferred and traits(harness.language).nvcc_build:
        messages.append("inferred harness: " + "; ".join(s.strip() for s in inferred_summary(harness)[1:]))
        # the launch the candidate runs on: its own main()'s (the worker reads it the same way), or why not
        if own_launch := relaunch(dataclasses.replace(harness, path=str(path.resolve())))[1]:
            messages.append(own_launch)
    if harness is None:
        messages.append(f"no harness: the correctness check did not run. {harness_error or ''}".strip())
        status: VerdictStatus = "refused" if static_refused else "unverified"
        return Verdict(False, status, None, static_refused, lab, messages, findings, None, None)
    if static_refused and (not run_refused or "unparsable-source" in static_refused):
        messages.append("the correctness check did not run: the static guards refused the candidate "
                        "(pass --all-checks to run it anyway, in a worker)")
        return Verdict(False, "refused", None, static_refused, lab, messages, findings, None, source)
    h = dataclasses.replace(harness, path=str(path.resolve()))
    # a file checked with its own harness is the kernel the user starts from; with --against it is a candidate
    own = Path(harness.origin_path or harness.path).resolve() == path.resolve() and (
        not harness.oracle_path or Path(harness.oracle_path).resolve() == path.resolve())
    corr = verify_in_worker(h, timeout_s=timeout_s, interpret=interpret,
                            subject="the starting kernel" if own else "the candidate")
    messages.extend(corr.messages)
    runtime_refused = list(corr.refused_by) if corr.status in ("incorrect", "error") else []
    if corr.status in ("incorrect", "error") and not runtime_refused:
        runtime_refused = ["mismatch" if corr.status == "incorrect" else "raised"]
    refused = sorted(set(static_refused) | set(runtime_refused))
    if refused:
        status = "refused"
    elif corr.status == "unverified" or not corr.correct:
        status = "unverified"
        messages.append(f"unverified, not wrong: {corr.verified_on} means nothing ran the kernel here, so it is "
                        "not counted as correct; run `htam verify` on a machine with a GPU")
    else:
        status = "accepted"
    if lab and status == "accepted":
        messages.append(f"labelled {', '.join(lab)}: correct, but its speedup is not a plain fp32 speedup")
    return Verdict(status == "accepted", status, corr.verified_on, refused, lab, messages, findings, corr, source)
