"""Shared helpers of the transform tests: fixture paths, running one transform, asserting outcomes."""

from __future__ import annotations

from pathlib import Path

from htam_core.source import SourceModel, load, parse_text
from htam_core.source.analysis import KernelFacts, analyze
from htam_core.transforms import registry
from htam_core.transforms.base import Candidate, NotApplicable
from htam_core.transforms.validate import syntax_errors
from tests.support.nvcc_check import assert_compiles

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OWN = FIXTURES / "transforms"
CORPUS = FIXTURES / "corpus"


def fixture_path(name: str) -> Path:
    """Path of a fixture file: our own transform inputs first, then the corpus copy."""
    p = OWN / name
    return p if p.exists() else CORPUS / name


def run(transform_id: str, file: str, kernel: str) -> tuple[SourceModel, list[Candidate] | NotApplicable]:
    """Load ``file`` and run ``transform_id`` on ``kernel`` through the validating registry."""
    model = load(str(fixture_path(file)))
    return model, registry.propose(transform_id, model, model.kernel(kernel))


def candidates(transform_id: str, file: str, kernel: str) -> list[Candidate]:
    """The validated candidates; fails the test when the transform refuses."""
    model, res = run(transform_id, file, kernel)
    assert not isinstance(res, NotApplicable), f"{transform_id} refused {kernel}: {res.reason}"
    for c in res:
        assert syntax_errors(c.new_text, model.file_language) == syntax_errors(model.text, model.file_language) or (
            model.errors
        ), f"{c.description} leaves syntax errors"
        reparsed = parse_text(c.new_text, model.file_language, model.path)
        assert kernel in [k.name for k in reparsed.kernels]
    return res


def refusal(transform_id: str, file: str, kernel: str) -> str:
    """The refusal reason; fails the test when the transform applies."""
    _, res = run(transform_id, file, kernel)
    assert isinstance(res, NotApplicable), f"{transform_id} unexpectedly applied to {kernel}"
    assert res.reason
    return res.reason


def facts_of_text(text: str, kernel: str) -> KernelFacts:
    """The analysis facts of ``kernel`` in CUDA ``text`` (a candidate's ``new_text``)."""
    model = parse_text(text, "cuda")
    return analyze(model, model.kernel(kernel))


def global_reads(facts: KernelFacts, pointer: str) -> list:
    """The global-memory reads of ``pointer`` in ``facts`` (analysis-layer accesses), in source order."""
    return [a for a in facts.accesses if a.pointer == pointer and a.space == "global" and a.kind == "read"]


def assert_nvcc_compiles(text: str, tmp_path: Path, name: str = "cand.cu") -> None:
    """Fail with the end of nvcc's errors unless nvcc (sm_90) accepts ``text``, written to ``tmp_path / name``:
    the device compile and the full C++ front end, not the host compiler's pass
    (:func:`tests.support.nvcc_check.assert_compiles` says what that leaves out and why). The caller skips
    without nvcc (``shutil.which("nvcc")``)."""
    assert_compiles(text, tmp=tmp_path, name=name)


def only_candidate(transform_id: str, text: str, kernel: str) -> Candidate:
    """The one candidate ``transform_id`` proposes for ``kernel`` of the CUDA ``text`` (fails the test, with the
    transform's reason, when it refuses or proposes several)."""
    model = parse_text(text, "cuda")
    cs = registry.propose(transform_id, model, model.kernel(kernel))
    assert isinstance(cs, list), cs.reason
    (c,) = cs
    return c


def candidate_texts(transform_id: str, text: str, kernel: str, path: str = "k.cu") -> list[str]:
    """The new texts of every candidate ``transform_id`` proposes for ``kernel`` of the CUDA ``text`` read as the file
    ``path``, in the transform's order (fails the test, with the transform's reason, when it refuses)."""
    model = parse_text(text, "cuda", path)
    res = registry.propose(transform_id, model, model.kernel(kernel))
    assert not isinstance(res, NotApplicable), res.reason
    return [c.new_text for c in res]
