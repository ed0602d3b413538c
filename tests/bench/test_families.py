"""The kernel-family suite (bench/families): the manifest's shape, every kernel parsed, profiled statically
and given at least three steps the rules engine can make, the order of steps mattering, the Triton members
verified under the interpreter (slow), and the llm.c members resolved when their folder is there.

The default run parses and transforms only (fast); ``-m slow`` adds the static profiles, the inferred
harnesses and the interpreter runs.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path

import pytest

from bench import data_paths
from htam_core.bench import families as fam
from htam_core.memory import load_knowledge
from htam_core.source import parse_text
from htam_core.transforms.registry import resolve_step

REPO = Path(__file__).resolve().parents[2]
SUITE = fam.load_families(llmc_dir=None)
IDS = [k.name for k in SUITE.kernels]
TRITON = [k for k in SUITE.kernels if k.kernel.language == "triton"]


def test_manifest_has_six_families_of_five_or_more_in_both_languages() -> None:
    assert len(SUITE.kernels) >= 40
    assert len(SUITE.titles) >= 6
    for name in SUITE.titles:
        members = SUITE.family(name)
        assert len(members) >= 5, name
        assert {m.kernel.language for m in members} == {"cuda", "triton"}, name
    assert {k.harness for k in SUITE.kernels} == {"toml", "inferred"}
    # members of a family differ along the axes real kernels differ along
    for name in SUITE.titles:
        dtypes = {m.varies.get("dtype", "").split(",")[0].split()[0] for m in SUITE.family(name)}
        assert len(dtypes) >= 2, (name, dtypes)


def test_manifest_entries_are_complete() -> None:
    raw = json.loads((REPO / "bench" / "families" / "manifest.json").read_text(encoding="utf-8"))
    for entry in raw["kernels"]:
        assert set(entry["varies"]) == set(fam.VARIES_KEYS), entry["kernel"]
        assert all(entry["varies"].values()), entry["kernel"]
    assert Counter(k.name for k in SUITE.kernels).most_common(1)[0][1] == 1
    assert [k.name for k in SUITE.suite_kernels()] == IDS
    assert set(SUITE.family_of().values()) == set(SUITE.titles)


@pytest.mark.parametrize("member", SUITE.kernels, ids=IDS)
def test_kernel_is_found_and_has_three_makeable_steps(member: fam.FamilyKernel) -> None:
    model, kernel = fam.find_kernel(member.path, member.name)
    assert not kernel.incomplete
    steps = fam.makeable_steps(model, kernel, None)
    assert len(steps) >= 3, (member.name, steps)
    if member.kernel.language == "cuda" and member.harness == "toml":
        assert kernel.launch_sites, member.name  # the host launcher the harness calls is in the file


@functools.cache
def _second_steps(name: str) -> dict[str, frozenset[str]]:
    """For each makeable first step of kernel ``name``: the makeable steps of the kernel it gives (its first
    candidate)."""
    kb = load_knowledge()
    member = next(k for k in SUITE.kernels if k.name == name)
    model, kernel = fam.find_kernel(member.path, member.name)
    out = {}
    for sid in fam.makeable_steps(model, kernel, None):
        s = kb.strategy(sid)
        cands = resolve_step(s.title, s.transform, s.guidance, model, kernel, None, llm_hint="-")
        m2 = parse_text(cands[0].new_text, model.file_language, model.path)
        out[sid] = frozenset(fam.makeable_steps(m2, m2.kernel(member.name), None))
    return out


def test_the_order_of_steps_matters_for_named_kernels() -> None:
    """The engine's reach as the suite was designed: tiling closes the block-size retune of a naive GEMM, the
    float4 rewrite closes the grid-stride loop, the grid-stride loop opens the grid-size retune (a grid no longer
    tied to n). The restrict qualifiers close the __ldg step: ``const __restrict__`` loads already take the
    read-only path, so wrapping them would change nothing; before them __ldg is the other way to the same path."""
    sg = _second_steps("sgemm_rowx")
    assert "readonly_cache_loads" not in sg["restrict_pointers"] and "readonly_cache_loads" in sg["smem_tiling"]
    assert "cuda_block_size" not in sg["smem_tiling"] and "cuda_block_size" in sg["coalesce_thread_mapping"]
    silu = _second_steps("silu_mul")
    assert "grid_stride_loop" in silu and "grid_stride_loop" not in silu["vectorize_loads"]
    assert "cuda_grid_size" in silu["grid_stride_loop"] and "cuda_grid_size" not in silu


@pytest.mark.slow
def test_the_order_of_steps_matters_in_every_family() -> None:
    """A step opens or closes others (the grid-stride loop before the grid-size retune, vectorize closing the
    grid-stride loop, tiling closing the block-size retune, ...), so the set of second steps depends on the first: in every family,
    most members have two first steps after which different steps can be made."""
    for name in SUITE.titles:
        members = SUITE.family(name)
        dependent = [m.name for m in members if len(set(_second_steps(m.name).values())) > 1]
        assert len(dependent) * 2 > len(members), (name, dependent)
    opened = [m.name for m in SUITE.kernels
              if any(after - set(first) for first in [_second_steps(m.name)] for after in first.values())]
    assert len(opened) >= 10, opened  # a step the start could not take becomes makeable after another


@pytest.mark.slow
@pytest.mark.parametrize("member", SUITE.kernels, ids=IDS)
def test_kernel_profiles_statically_with_three_makeable_steps(member: fam.FamilyKernel,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from htam_core.profile.api import profile_kernel

    monkeypatch.setenv("HTAM_INFER", "1")  # the zero-config members' harness is inferred from their file

    profile = profile_kernel(member.path, member.name, static=True)
    assert profile.mode == "static"
    model, kernel = fam.find_kernel(member.path, member.name)
    assert len(fam.makeable_steps(model, kernel, profile)) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("member", TRITON, ids=[k.name for k in TRITON])
def test_triton_kernel_verifies_under_the_interpreter(member: fam.FamilyKernel,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from htam_core.verify.check import resolve_harness, verify_candidate

    monkeypatch.setenv("HTAM_INFER", "1")

    harness = resolve_harness(Path(member.path), kernel=member.name)
    verdict = verify_candidate(Path(member.path), harness, timeout_s=600)
    assert verdict.status == "accepted" and verdict.verified_on == "interpreter", verdict.messages


@pytest.mark.slow
@pytest.mark.parametrize("member", [k for k in SUITE.kernels if k.harness == "inferred" and k.kernel.language == "cuda"],
                         ids=lambda k: k.name)
def test_cuda_main_harness_is_inferred(member: fam.FamilyKernel, monkeypatch: pytest.MonkeyPatch) -> None:
    from htam_core.verify.check import resolve_harness

    monkeypatch.setenv("HTAM_INFER", "1")

    harness = resolve_harness(Path(member.path), kernel=member.name)
    assert harness.kind == "inferred" and harness.inputs


def test_llmc_members_resolve_when_the_folder_is_there() -> None:
    folder = fam.llmc_folder(data_paths.LLMC)
    if folder is None or not folder.is_dir():
        pytest.skip(f"the llm.c folder {folder} is absent (set ${fam.LLMC_ENV} to its path)")
    suite = fam.load_families(llmc_dir=data_paths.LLMC)
    assert suite.external_note is None and len(suite.external) >= 10
    assert {e.family for e in suite.external} >= {"elementwise", "rownorm", "reduce", "matmul", "transpose"}
    for e in suite.external:
        _, kernel = fam.find_kernel(e.path, e.kernel)
        assert kernel.language == "cuda"


def test_llmc_members_are_left_out_with_a_reason_when_absent(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fam.LLMC_ENV, raising=False)
    suite = fam.load_families(llmc_dir=tmp_path / "nope")
    assert suite.external == [] and "absent" in (suite.external_note or "")


def _manifest(tmp_path: Path, kernels: list[dict], families: dict | None = None) -> Path:
    p = tmp_path / "manifest.json"
    p.write_text(json.dumps({"version": 1, "families": families or {"ew": {"title": "t"}}, "kernels": kernels}))
    return p


def test_bad_manifests_are_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "ew").mkdir()
    (tmp_path / "ew" / "k.cu").write_text("__global__ void k(float *x) { x[0] = 1.0f; }\n")
    entry = {"file": "ew/k.cu", "kernel": "k", "family": "ew", "lang": "cuda", "harness": "inferred"}
    assert fam.load_families(_manifest(tmp_path, [entry])).kernels[0].kernel.language == "cuda"
    cases = [
        ({**entry, "family": "gemm"}, "unknown family 'gemm'"),
        ({**entry, "file": "ew/missing.cu"}, "does not exist"),
        ({**entry, "harness": "toml"}, r"has no \[kernel.k\] table"),
        ({**entry, "lang": "fortran"}, "lang must be one of"),
        ({**entry, "varies": {"colour": "red"}}, "unknown varies key"),
    ]
    for bad, msg in cases:
        with pytest.raises(fam.FamiliesError, match=msg):
            fam.load_families(_manifest(tmp_path, [bad]))
    with pytest.raises(fam.FamiliesError, match="listed twice"):
        fam.load_families(_manifest(tmp_path, [entry, entry]))
    with pytest.raises(fam.FamiliesError, match="no family manifest"):
        fam.load_families(tmp_path / "none.json")
    with pytest.raises(fam.FamiliesError, match="unknown family"):
        fam.load_families(_manifest(tmp_path, [entry]), families=["gemm"])
    with pytest.raises(fam.FamiliesError, match="llm.c file x.cu"):
        fam.load_families(_manifest(tmp_path, [entry], {"ew": {"llmc": [{"path": "x.cu", "kernel": "x"}]}}),
                          llmc_dir=tmp_path)


@pytest.mark.slow
def test_verify_all_streams_resumes_and_keeps_its_budget(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("verify_all", REPO / "bench" / "families" / "verify_all.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "v.jsonl"
    assert mod.main(["--out", str(out), "--kernels", "fma_kernel,axpby_fp16"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["kernel"]: r["verified_on"] for r in rows} == {"fma_kernel": "interpreter", "axpby_fp16": "compile-only"}
    assert mod.main(["--out", str(out), "--kernels", "fma_kernel,axpby_fp16"]) == 0  # resumed: nothing re-run
    assert len(out.read_text().splitlines()) == 2
    assert mod.main(["--out", str(tmp_path / "w.jsonl"), "--max-seconds", "-1"]) == 0  # budget spent at once
    assert not (tmp_path / "w.jsonl").exists() or not (tmp_path / "w.jsonl").read_text()
