"""The spelling matrix: one textbook step, many spellings of the same kernel, each checked the same way.

Layout: ``tests/fixtures/spellings/<step>/step.json`` plus one source file per spelling in that folder::

    {"strategy": "cuda.vectorize_float4",          # the transform id, as in the registry
     "language": "cuda",                           # or "triton"
     "gpu": {"args": [{"name": "x", "kind": "in", "size": 100003},
                      {"name": "y", "kind": "out", "size": 100003},
                      {"name": "n", "kind": "int", "value": 100003}],
             "rtol": 1e-5, "atol": 1e-5},          # optional: how the GPU check calls the host launcher
     "spellings": {"aten.cu": {"kernel": "add_kernel", "style": "aten", "host": "launch_add",
                               "note": "int64_t indices, __restrict__, early return"}}}

For one ``(step, spelling)`` cell, :func:`check_cell` answers four questions, in order (a later one is only asked
when the earlier ones hold):

* **offered**: the knowledge-base strategy whose transform is the step's (or the step it is ``part_of``) is
  applicable to the kernel: its ``applies`` predicate is not definitely false on the kernel's facts (the ranker's
  rule, :mod:`htam_core.memory.predicates`);
* **made**: the transform returns at least one validated candidate (:func:`htam_core.transforms.registry.propose`);
* **compiled**: for CUDA, nvcc accepts every candidate (``nvcc -arch=sm_90 -cubin``: the device compile and the
  full C++ front end, :mod:`tests.support.nvcc_check`); for Triton, every candidate's kernel runs
  under the Triton interpreter and matches the start (the step's ``gpu`` block gives the call);
* **gpu**: on a CUDA device, every candidate's host launcher (``host`` of the spelling, called with the step's
  ``gpu.args`` in order: ``in`` tensors random, ``inout`` random and compared, ``out`` zeroed, ``int`` and
  ``float`` scalars) gives the start's outputs within ``rtol``/``atol``. ``None`` when not measured.

Used by ``tests/transforms/test_spellings.py`` (one test per cell) and ``bench/spelling_matrix.py`` (the table).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from htam_core.memory.facts import compute_facts
from htam_core.memory.knowledge import load_knowledge
from htam_core.source import load
from htam_core.transforms import registry
from htam_core.transforms.base import Candidate, NotApplicable
from tests.support.nvcc_check import have_nvcc
from tests.support.nvcc_check import nvcc_error as shared_nvcc_error

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "spellings"


@dataclass(frozen=True)
class Spelling:
    """One spelling of one step.

    Attributes:
        step: the step folder's name.
        file: the source file's name inside the folder.
        path: its path.
        strategy: the transform id (registry) the step makes.
        language: ``"cuda"`` or ``"triton"``.
        kernel: the kernel the step is made on.
        style: the style it is written in (``"nvidia-samples"``, ``"aten"``, ``"llmc"``, ...).
        note: what is particular about this spelling.
        host: the host launcher the GPU check calls (``""``: none).
        gpu: the step's ``gpu`` block (arguments and tolerances), or ``{}``.
    """

    step: str
    file: str
    path: Path
    strategy: str
    language: str
    kernel: str
    style: str
    note: str
    host: str
    gpu: dict[str, Any]

    @property
    def cell(self) -> tuple[str, str]:
        """``(step, file)``, the key of :data:`KNOWN_GAPS` in the tests."""
        return self.step, self.file


@dataclass
class CellResult:
    """What :func:`check_cell` found for one spelling.

    Attributes:
        step, file, style, strategy: which cell.
        offered: the strategy's applicability predicate is not false on the kernel.
        made: the transform made at least one validated candidate.
        compiled: every candidate compiles (CUDA: nvcc sm_90) or runs and matches (Triton interpreter); ``None``
            when not checked (not made, or no compiler).
        gpu: every candidate matches the start on the GPU; ``None`` when not measured.
        candidates: how many candidates were made.
        reason: the first refusal or failure, or ``""``.
    """

    step: str
    file: str
    style: str
    strategy: str
    offered: bool = False
    made: bool = False
    compiled: bool | None = None
    gpu: bool | None = None
    candidates: int = 0
    reason: str = ""
    descriptions: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Offered, made and compiled (the GPU column counts only when measured)."""
        return self.offered and self.made and self.compiled is True and self.gpu is not False

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def load_step(folder: Path) -> list[Spelling]:
    """The spellings declared in ``folder/step.json``.

    Raises:
        ValueError: a declared file is missing, or a required key is absent.
    """
    meta = json.loads((folder / "step.json").read_text())
    for key in ("strategy", "language", "spellings"):
        if key not in meta:
            raise ValueError(f"{folder / 'step.json'}: no {key!r}")
    out = []
    for name, s in sorted(meta["spellings"].items()):
        path = folder / name
        if not path.is_file():
            raise ValueError(f"{folder / 'step.json'}: {name} is declared but missing")
        out.append(Spelling(folder.name, name, path, meta["strategy"], meta["language"], s["kernel"],
                            s.get("style", ""), s.get("note", ""), s.get("host", ""), meta.get("gpu", {})))
    return out


def all_spellings(root: Path = ROOT) -> list[Spelling]:
    """Every spelling of every step folder under ``root``, by step then file."""
    out: list[Spelling] = []
    for folder in sorted(p for p in root.iterdir() if (p / "step.json").is_file()):
        out.extend(load_step(folder))
    return out


def strategies_of(transform_id: str) -> list[Any]:
    """The knowledge-base strategies made by ``transform_id`` (directly, or by the transform it is ``part_of``)."""
    t = registry.get(transform_id)
    ids = {transform_id, t.part_of} - {""}
    return [s for s in load_knowledge().strategies if s.transform in ids]


def offered(sp: Spelling) -> tuple[bool, str]:
    """Whether the step's strategy applies to the spelling's kernel (predicate not definitely false), and if not
    which predicate ruled it out."""
    model = load(str(sp.path))
    kernel = model.kernel(sp.kernel)
    facts = compute_facts(kernel.features, kernel.language, None, kernel, model)
    strategies = strategies_of(sp.strategy)
    if not strategies:
        return False, f"no knowledge-base strategy uses {sp.strategy}"
    why = []
    for s in strategies:
        if s.applies.evaluate(facts) is not False:
            return True, ""
        why.append(f"{s.id}: applies = {s.applies.text!r} is false")
    return False, "; ".join(why)


def make(sp: Spelling) -> list[Candidate] | NotApplicable:
    """The step's validated candidates on the spelling's kernel, or the refusal."""
    model = load(str(sp.path))
    return registry.propose(sp.strategy, model, model.kernel(sp.kernel))


def nvcc_error(text: str, name: str = "spelling.cu") -> str:
    """``""`` when nvcc (sm_90) accepts ``text``, else the end of its error output: the device compile and the
    full C++ front end, not the host compiler's pass (:mod:`tests.support.nvcc_check` says what that leaves out
    and why)."""
    return shared_nvcc_error(text, name=name)


_TRITON_RUN = """
import importlib.util, json, sys
import torch
spec = json.loads(sys.argv[3])  # argv: the module, where to save (start) or a spare path, the spec[, the start's]
def outputs(path):
    m = importlib.util.spec_from_file_location("htam_spelling", path)
    mod = importlib.util.module_from_spec(m)
    m.loader.exec_module(mod)
    gen = torch.Generator().manual_seed(1234)
    args, outs = [], []
    for a in spec["args"]:
        if a["kind"] in ("in", "inout"):
            args.append(torch.randn(a["size"], generator=gen).to(spec["device"]))
            if a["kind"] == "inout":
                outs.append(args[-1])
        elif a["kind"] == "out":
            args.append(torch.zeros(a["size"], device=spec["device"])); outs.append(args[-1])
        elif a["kind"] == "int":
            args.append(int(a["value"]))
        else:
            args.append(float(a["value"]))
    getattr(mod, spec["host"])(*args)
    return outs
got = outputs(sys.argv[1])
if len(sys.argv) > 4:  # the candidate: compare with the start's outputs, saved by an earlier process
    for r, g in zip(torch.load(sys.argv[4]), got):
        r, g = r.cpu(), g.cpu()
        if not torch.allclose(r, g, rtol=spec["rtol"], atol=spec["atol"]):
            print("differs from the start by up to %g" % (r - g).abs().max().item()); sys.exit(1)
else:
    torch.save(got, sys.argv[2])
"""


def triton_interpreter_errors(sp: Spelling, texts: list[str], device: str = "cpu") -> str:
    """``""`` when each of ``texts``' host launchers (``sp.host``, a Python function of the module) gives the start's
    outputs under the Triton interpreter (``TRITON_INTERPRET=1``, CPU tensors, the step's ``gpu.args``), else why
    not, naming the first candidate that fails (``candidate 1: ...``). With ``device="cuda"`` they all run compiled
    by Triton on the GPU instead (no interpreter).

    The start runs once, in its own process, and saves its outputs; each candidate then runs in a process of its own
    and is compared with them: some Triton releases' interpreters (3.6) fail on the second of two same-named kernels
    loaded into one process, and each process pays torch's and Triton's import (seconds), so the start is not run
    again for every candidate."""
    import os
    import sys

    spec = json.dumps({"args": sp.gpu["args"], "host": sp.host, "rtol": float(sp.gpu.get("rtol", 1e-5)),
                       "atol": float(sp.gpu.get("atol", 1e-5)), "device": device})
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        ref = Path(tmp) / "start-outputs.pt"
        runs: list[tuple[str, list[str]]] = [("the start", [str(sp.path), str(ref), spec])]
        for i, text in enumerate(texts):
            cand = Path(tmp) / f"cand{i}" / sp.file
            cand.parent.mkdir()
            cand.write_text(text)
            runs.append((f"candidate {i}", [str(cand), str(Path(tmp) / "unused.pt"), spec, str(ref)]))
        for what, argv in runs:
            p = subprocess.run([sys.executable, "-c", _TRITON_RUN, *argv], capture_output=True, text=True,
                               timeout=600, env=env)
            if p.returncode != 0:
                lines = (p.stdout + p.stderr).strip().splitlines()
                return f"{what}: {lines[-1]}" if lines else f"{what}: exit status {p.returncode}"
    return ""


def _gpu_outputs(sp: Spelling, text: str, tmp: Path, tag: str) -> list[Any]:
    """Run ``text``'s host launcher with the step's arguments on the GPU; the ``out`` tensors after the call."""
    import torch  # only on the GPU path
    from gpu_equivalence import call_host

    spec = sp.gpu["args"]
    gen = torch.Generator(device="cuda").manual_seed(1234)
    args: list[Any] = []
    outs: list[Any] = []
    for a in spec:
        if a["kind"] in ("in", "inout"):
            args.append(torch.randn(a["size"], device="cuda", generator=gen))
            if a["kind"] == "inout":
                outs.append(args[-1])
        elif a["kind"] == "out":
            t = torch.zeros(a["size"], device="cuda")
            args.append(t)
            outs.append(t)
        elif a["kind"] == "int":
            args.append(int(a["value"]))
        else:
            args.append(float(a["value"]))
    ctype = {"in": "float*", "inout": "float*", "out": "float*", "int": "int", "float": "float"}
    signature = ", ".join(f"{ctype[a['kind']]} {a['name']}" for a in spec)
    call = f"{sp.host}({', '.join(a['name'] for a in spec)})"
    call_host(text, signature, call, args, tmp, tag)
    torch.cuda.synchronize()
    return outs


def gpu_matches(sp: Spelling, cands: list[Candidate], tmp: Path) -> tuple[bool, str]:
    """Whether every candidate's outputs match the start's on the GPU (the caller checks that one is usable)."""
    import torch  # only on the GPU path

    rtol = float(sp.gpu.get("rtol", 1e-5))
    atol = float(sp.gpu.get("atol", 1e-5))
    ref = _gpu_outputs(sp, sp.path.read_text(), tmp, f"{sp.step}-start")
    for i, c in enumerate(cands):
        got = _gpu_outputs(sp, c.new_text, tmp, f"{sp.step}-cand{i}")
        for r, g in zip(ref, got, strict=True):
            if not torch.allclose(r, g, rtol=rtol, atol=atol):
                err = (r - g).abs().max().item()
                return False, f"candidate {i} ({c.description}) differs from the start by up to {err:g}"
    return True, ""


def gpu_usable() -> bool:
    """True when torch sees a CUDA device and nvcc is installed."""
    if not have_nvcc():
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def check_cell(sp: Spelling, *, gpu: bool = False, tmp: Path | None = None) -> CellResult:
    """Offered, made, compiled and (with ``gpu``) GPU-verified for one spelling; stops at the first ``False``."""
    res = CellResult(sp.step, sp.file, sp.style, sp.strategy)
    res.offered, why = offered(sp)
    if not res.offered:
        res.reason = why
        return res
    cands = make(sp)
    if isinstance(cands, NotApplicable):
        res.reason = cands.reason
        return res
    res.made, res.candidates = True, len(cands)
    res.descriptions = [c.description for c in cands]
    if sp.language == "cuda":
        if not have_nvcc():
            res.reason = "nvcc is not installed"
            return res
        for c in cands:
            err = nvcc_error(c.new_text)
            if err:
                res.compiled, res.reason = False, f"nvcc: {err.strip().splitlines()[0] if err.strip() else err}"
                return res
        res.compiled = True
    else:
        if not (sp.host and sp.gpu.get("args")):
            res.reason = "the step declares no host launcher and arguments for the Triton interpreter check"
            return res
        # on a GPU: compiled by Triton and run there (that is the GPU check too)
        err = triton_interpreter_errors(sp, [c.new_text for c in cands], "cuda" if gpu else "cpu")
        if err:
            res.compiled, res.reason = False, err
            res.gpu = False if gpu else None
            return res
        res.compiled = True
        if gpu:
            res.gpu = True
            return res
    if gpu and sp.host and sp.gpu.get("args"):
        with tempfile.TemporaryDirectory() as d:
            res.gpu, why = gpu_matches(sp, cands, tmp or Path(d))
        if not res.gpu:
            res.reason = why
    return res
