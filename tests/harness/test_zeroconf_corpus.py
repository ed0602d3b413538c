"""The zero-config corpus end to end, with NO htam.toml: each file is profiled (static, on the CPU), verified
and optimized; at least 80 % must get a working inferred harness, and each failure names what is missing.
Prints the table (run with ``-s`` to see it).

"Working" on a CPU: a Triton kernel's inferred harness passes the interpreter verify and optimize tries a
candidate under the interpreter; a CUDA kernel's harness is inferred from ``main()``, its start compiles in
the verifier (compile-only here: unverified, never "correct", until a GPU runs it) and optimize compiles a
candidate. The GPU half (the same corpus, measured and checked) is ``bench/bench_zeroconf.py``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.harness.base import HarnessError
from htam_core.harness.find import find_harness

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "zeroconf"
KERNELS = {
    "rms_norm.py": "_rms_norm_fwd", "softmax.py": "softmax_kernel", "add_relu.py": "add_relu_kernel",
    "matmul.py": "matmul_kernel", "layer_norm.py": "_layer_norm_fwd", "gelu.py": "gelu_kernel",
    "scale_cli.py": "axpb_kernel", "print_only.py": "square_kernel", "direct_launch.py": "neg_kernel",
    "tutorial_add.py": "add_kernel",
}
CUDA = {
    "cu_saxpy_define.cu": "saxpy", "cu_matadd_2d.cu": "mat_add", "cu_relu_template_launcher.cu": "relu_kernel",
    "cu_scale_argv.cu": "scale", "cu_managed_add.cu": "add",
}


def test_corpus_profiled_verified_optimized_without_htam_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from htam_core.optimize.loop import run_optimize
    from htam_core.optimize.task import OptimizeTask
    from htam_core.profile.api import static_profile
    from htam_core.source import load
    from htam_core.verify.check import resolve_harness, verify_candidate

    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")
    assert len(KERNELS) >= 8 and len(CUDA) >= 4 and not list(CORPUS.glob("htam.toml"))
    rows: list[tuple[str, str, str, str, str]] = []
    working = 0
    for name, kernel in {**KERNELS, **CUDA}.items():
        cuda = name in CUDA
        work = tmp_path / Path(name).stem
        shutil.copytree(CORPUS, work)
        path = work / name
        model = load(str(path))
        prof = static_profile(model, model.kernel(kernel), "sm_90")
        profiled = "static" if prof.mode == "static" else prof.mode
        try:
            h = find_harness(path, kernel, model)
        except HarnessError as exc:
            assert exc.missing and exc.message.strip(), name
            assert "no harness could be inferred" in exc.message or "launches" in exc.message \
                or "main()" in exc.message, exc.message
            why = exc.message.split("no harness could be inferred from ", 1)[-1].split(" Add a [kernel.")[0]
            rows.append((name, profiled, "-", "-", f"not inferred: {why}"[:120]))
            continue
        v = verify_candidate(path, resolve_harness(path, kernel=kernel), timeout_s=300)
        res = run_optimize(OptimizeTask(path=str(path), kernel=kernel, budget=1, out_dir=str(work / "out"), static=True,
                                        memory_path=str(tmp_path / "memory.sqlite")))
        ran_on = "compile-only" if cuda else "interpreter"
        tried = [s for s in res.steps if s.verified_on == ran_on]
        optimized = "yes" if (work / "out" / "report.md").is_file() and tried else "no"
        if cuda:  # no GPU here: inferred from main(), the start compiles; unverified (never counted correct)
            compiled = v.status == "unverified" and any("compiled" in m for m in v.messages)
            ok = h.kind == "inferred" and compiled and optimized == "yes"
        else:
            ok = v.accepted and optimized == "yes"
        working += ok
        rows.append((name, profiled, v.status, optimized, (h.description() + "; " + "; ".join(h.notes))[:120]))
    table = "\n".join(f"{r[0]:<18} profiled={r[1]:<7} verify={r[2]:<10} optimize={r[3]:<4} {r[4]}" for r in rows)
    with capsys.disabled():
        print(f"\nzero-config corpus: {working}/{len(rows)} with a working inferred harness\n{table}")
    assert len(rows) == len(KERNELS) + len(CUDA)
    assert working / len(rows) >= 0.8, table
