"""Verify a harness in a worker: the worker target, its caller, and the compile-only verdict.

:func:`verify_in_worker` ships the harness as JSON to the worker target :func:`verify_harness`, which
prepares it (:func:`htam_core.harness.runner.prepare`) and runs :func:`htam_core.verify.correctness.check_correctness`
on it with KernelBench semantics. With no device that can run the kernel (raw CUDA on a machine without a
GPU), :func:`compile_check` compiles it with ``nvcc -cubin`` and the verdict is ``"unverified"``, never
``"correct"``.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from htam_core.harness.base import Harness, HarnessError, cuda_include_dirs, include_flags
from htam_core.harness.cu_main import find_nvcc
from htam_core.harness.runner import device_and_mode, prepare
from htam_core.harness.trial import BASE_SEED
from htam_core.runtime.cache import CompileCache, content_key, file_fingerprint, package_version
from htam_core.runtime.children import one_shot_kwargs
from htam_core.runtime.worker import classify_exception, run_in_worker
from htam_core.source.analysis.includes import headers_digest
from htam_core.types.errors import exception_text
from htam_core.verify.correctness import N_SEEDS, CorrectnessResult, check_correctness, unverified


# -- compile-only -----------------------------------------------------------------------------------
def cuda_strings(text: str) -> list[str]:
    """String constants of a Python file that hold CUDA (contain ``__global__``)."""
    return [n.value for n in ast.walk(ast.parse(text))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and "__global__" in n.value]


#: Headers that come with torch or the CUDA toolkit, not with the user's code: when nvcc cannot find one, the
#: machine lacks it (a CPU build of torch has no ``c10/cuda`` headers), which is no fault of the kernel.
ENVIRONMENT_HEADERS = ("c10/", "ATen/", "torch/", "caffe2/", "pybind11/", "Python.h", "cuda", "cub/", "thrust/",
                       "cutlass/", "cute/", "mma.h", "cooperative_groups", "curand", "cublas", "cusparse", "cufft")
_MISSING = (re.compile(r'fatal error: ([^\s:]+): No such file or directory'),
            re.compile(r'cannot open source file "([^"]+)"'))


def missing_header(stderr: str) -> str | None:
    """The header nvcc (or the host compiler under it) could not find, read from its error output
    (``fatal error: c10/cuda/CUDAMacros.h: No such file or directory``, EDG's ``cannot open source file "x.h"``),
    or ``None``."""
    for pat in _MISSING:
        m = pat.search(stderr)
        if m:
            return m.group(1)
    return None


def environment_header_message(header: str) -> str:
    """One line for a header that the local torch or CUDA toolkit lacks: an environment problem, with what to
    install; the kernel is not blamed and the verdict stays unverified (static stages still run)."""
    try:
        import torch

        build = f"torch {torch.__version__}" + ("" if torch.version.cuda else " (a CPU build)")
    except Exception:  # noqa: BLE001 - no torch at all says the same
        build = "the installed torch"
    what = ("install a CUDA build of torch (pip install torch --index-url https://download.pytorch.org/whl/cu126, "
            "or the CUDA version of this machine)" if header.startswith(("c10/", "ATen/", "torch/", "caffe2/"))
            else "install the CUDA toolkit headers it comes with (or set CUDA_HOME)")
    return (f"not compiled here: an environment problem, not the kernel's: the header {header} is missing from this "
            f"machine ({build}); {what}, then run again")


def compile_check(h: Harness, arch: str = "sm_90", timeout_s: float = 300.0) -> CorrectnessResult:
    """Compile the CUDA of ``h`` with ``nvcc -cubin`` (no GPU needed) and return an ``unverified``
    verdict when it compiles, an ``error`` with nvcc's messages when it does not.

    A success is cached (:class:`~htam_core.runtime.cache.CompileCache`) under the CUDA sources, the contents of
    their local headers, the arch, nvcc and torch's version (its headers, for a ``torch/extension.h`` source), so
    a kernel version that includes torch's headers (about 20 s of nvcc on a CPU) is compiled once across
    candidates, runs and the editor."""
    nvcc = find_nvcc()
    if nvcc is None:
        return CorrectnessResult(False, "unverified", "compile-only", None,
                                 ["no GPU and no nvcc: the CUDA code was neither run nor compiled"])
    text = Path(h.path).read_text(encoding="utf-8", errors="replace")
    sources = [text] if h.path.endswith((".cu", ".cuh")) else cuda_strings(text)
    if not sources:
        return CorrectnessResult(False, "unverified", "compile-only", None,
                                 ["no GPU, and no CUDA source was found to compile"])
    includes: list[str] = include_flags(h.path)
    uses_torch = any("torch/extension.h" in s for s in sources)
    cache = CompileCache()
    key = content_key(kind="nvcc-compile-check", sources=sources, arch=arch, nvcc=file_fingerprint(nvcc),
                      torch=package_version("torch") if uses_torch else None,
                      headers=headers_digest("\n".join(sources), h.path, cuda_include_dirs(h.path)))
    if cache.get(key) is not None:
        return unverified(f"nvcc -cubin -arch={arch} succeeded for {len(sources)} source(s) (cached)", compiled=True)
    if uses_torch:
        from torch.utils.cpp_extension import include_paths

        includes += [f"-I{p}" for p in include_paths()] + [f"-I{sysconfig.get_paths()['include']}"]
    with tempfile.TemporaryDirectory(prefix="htam-cc-") as tmp:
        for k, src in enumerate(sources):
            cu = Path(tmp) / f"src{k}.cu"
            cu.write_text(src, encoding="utf-8")
            proc = subprocess.run([nvcc, "-cubin", f"-arch={arch}", "-std=c++17", *includes, str(cu), "-o",
                                   str(Path(tmp) / f"src{k}.cubin")], capture_output=True, text=True,
                                  timeout=timeout_s, **one_shot_kwargs())
            if proc.returncode != 0:
                header = missing_header(proc.stderr)
                if header is not None and header.startswith(ENVIRONMENT_HEADERS):
                    return CorrectnessResult(False, "unverified", "compile-only", None,
                                             [environment_header_message(header)])
                errs = [ln for ln in proc.stderr.splitlines() if "error" in ln][:20] or proc.stderr.splitlines()[-20:]
                # one message (its lines joined where it is shown in one line): never "...code:; error"
                return CorrectnessResult(False, "error", "compile-only", None,
                                         ["nvcc could not compile the CUDA code: " + "\n".join(errs)],
                                         refused_by=["compile"])
    cache.put(key, {"compiled": True, "sources": len(sources)})
    return unverified(f"nvcc -cubin -arch={arch} succeeded for {len(sources)} source(s)", compiled=True)


# -- worker targets ---------------------------------------------------------------------------------
def verify_harness(harness: dict[str, Any], n_seeds: int = N_SEEDS, base_seed: int = BASE_SEED,
                   arch: str = "sm_90", subject: str | None = None) -> dict[str, Any]:
    """Worker target: check the harness's kernel against its reference.

    ``subject`` names the kernel checked in the messages: ``"the starting kernel"`` for the kernel an optimization
    starts from (also chosen when the harness's oracle is the checked file itself), else ``"the candidate"``. The
    float32 tolerance is the harness's (:attr:`Harness.fp32_tol`: a reordered-sum check sets it).

    Returns:
        :meth:`CorrectnessResult.to_json`: ``{"correct", "status", "verified_on", "max_abs_err",
        "messages", "trials", "refused_by"}``.
    """
    h = Harness.from_json(harness)
    device, mode = device_and_mode(h)
    if device is None or h.traits.whole_program:
        if device is not None:
            return CorrectnessResult(False, "unverified", "gpu", None, [
                "a .cu program with main() has no reference: it was not checked. Add a "
                f"[kernel.{h.kernel}] table to htam.toml to verify the kernel", *h.notes]).to_json()
        res = compile_check(h, arch)
        if h.uses_oracle:
            res.messages.insert(0, "not verified: no GPU (the starting kernel is the oracle, and it runs only on a "
                                   "GPU)")
        return res.to_json()
    try:
        prepared = prepare(h, device)
    except HarnessError as e:
        return CorrectnessResult(False, "error", mode, None, [str(e)], refused_by=["harness"]).to_json()
    except Exception as e:  # noqa: BLE001 - an import/compile error of the candidate is its verdict
        if classify_exception(e)[0] == "cuda-fault":
            raise
        return CorrectnessResult(False, "error", mode, None,
                                 [f"could not load the kernel: {exception_text(e)}"[:3000]],
                                 refused_by=["load"]).to_json()
    is_start = bool(h.uses_oracle and h.oracle_path and Path(h.oracle_path).resolve() == Path(h.path).resolve())
    res = check_correctness(prepared.trial, verified_on=mode, n_seeds=n_seeds, base_seed=base_seed, atol=h.atol,
                            rtol=h.rtol, fp32_tol=h.fp32_tol, arg_names=prepared.arg_names, against=h.checked_against,
                            subject=subject or ("the starting kernel" if is_start else "the candidate"))
    res.messages.extend(n for n in prepared.notes if "float64 reference" in n)  # htam_core.harness.reference64
    if is_start:
        res.messages.append("this is the starting kernel itself: under the oracle rule it is the reference, so this "
                            "run shows it runs on every input set, not that it is right (give a reference to check it)")
    return res.to_json()


def verify_in_worker(harness: Harness, *, timeout_s: float = 300.0, pool_key: str | None = None,
                     interpret: bool | None = None, **kwargs: Any) -> CorrectnessResult:
    """Run :func:`verify_harness` in a persistent worker and return the verdict.

    Args:
        harness: from :func:`htam_core.harness.find_harness`.
        timeout_s: wall-clock limit, seconds.
        pool_key: the worker to use; default ``"verify-interpret"`` on the CPU (Triton interpreter
            on) or ``"gpu0"`` when ``interpret`` is False.
        interpret: force ``TRITON_INTERPRET=1`` on (True) or off (False); default: on unless torch
            in *this* process sees a GPU (checked without initializing CUDA via ``nvidia-smi``-free
            ``torch.cuda.is_available``).
        kwargs: ``n_seeds``, ``base_seed``, ``arch``, ``subject`` (``"the starting kernel"`` when
            ``harness`` is the kernel an optimization starts from).

    Returns:
        A :class:`CorrectnessResult`; a worker failure (timeout, crash, CUDA fault) becomes status
        ``"error"`` with the worker's message.
    """
    if interpret is None:
        interpret = not _has_gpu()
    key = pool_key or ("verify-interpret" if interpret else "gpu0")
    r = run_in_worker("htam_core.verify.run:verify_harness", {"harness": harness.to_json(), **kwargs},
                      timeout_s=timeout_s, pool_key=key, interpret=interpret,
                      gpu_index=None if interpret else 0)
    if r.ok:
        v = r.value
        return CorrectnessResult(v["correct"], v["status"], v["verified_on"], v["max_abs_err"], v["messages"],
                                 v.get("trials", 0), v.get("refused_by", []))
    err = r.error
    assert err is not None
    mode = "interpreter" if interpret else "gpu"
    return CorrectnessResult(False, "error", mode, None, [f"{err.kind}: {err.message}"], refused_by=[err.kind])


def _has_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False
