"""The recorder's device rule and its messages.

On a GPU machine a file written for the Triton interpreter makes CPU tensors (``torch.randn(3, 4000)``) and a
compiled launch refuses them; the recorder moves the launcher call's CPU tensors to the GPU
(:func:`launch_device`) and the harness origin says so. The decision and the messages are checked here on
the CPU; ``tests/harness/test_infer_py.py::test_a_wrong_candidate_is_refused_on_gpu`` is the GPU check. A
launcher call that raised says so with the exception's first line; "too large" only when the huge-call rule
stopped the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from htam_core.harness.base import MOVED_NOTE
from htam_core.harness.infer_py import build, infer, not_run_reason, record
from htam_core.harness.record import launch_device

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "zeroconf"


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")


@pytest.mark.parametrize(("devices", "interpret", "cuda", "want"), [
    (["cpu"], False, True, "cuda"),             # a file written for the interpreter, on a GPU machine
    (["cpu", "cuda:0"], False, True, "cuda"),   # a CPU input beside a GPU output: the CPU one moves
    (["cuda:0"], False, True, None),            # already on the GPU
    (["cpu"], True, False, None),               # the interpreter: the CPU is right
    (["cpu"], True, True, None),                # the interpreter even where a GPU exists
    (["cpu"], False, False, None),              # no GPU and no interpreter: nothing to move to
    ([], False, True, None),                    # numbers only
])
def test_launch_device_moves_cpu_tensors_only_for_a_compiled_launch(devices, interpret, cuda, want) -> None:
    assert launch_device(devices, interpret=interpret, cuda_available=cuda) == want


def test_a_call_that_raised_says_so_with_the_exception_and_line() -> None:
    calls = [{"params": {}, "file": "/x/gelu.py", "line": 31, "ran": False,
              "error": "ValueError: Pointer argument (at 0) cannot be accessed from Triton (cpu tensor?)"}]
    why = not_run_reason("gelu", calls, {"stopped": None, "error": "ValueError: Pointer argument ..."})
    assert why.startswith("gelu() raised ValueError: Pointer argument (at 0) cannot be accessed") and \
        "at line 31 of gelu.py" in why and "too large" not in why


def test_too_large_only_when_the_huge_rule_stopped_the_run() -> None:
    calls = [{"params": {}, "file": "/x/f.py", "line": 9, "ran": False}]
    rec = {"stopped": "the call at line 9 has 99999999 input elements: recorded, not run", "stopped_huge": True}
    assert "too large" in not_run_reason("f", calls, rec) and "99999999" in not_run_reason("f", calls, rec)
    other = not_run_reason("f", calls, {"stopped": None, "error": "the program exited with status 3"})
    assert "too large" not in other and "exited with status 3" in other


def _write(tmp_path: Path, body: str) -> Path:
    f = tmp_path / "k.py"
    f.write_text("import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                 "def k_kernel(X, Y, N, BLOCK: tl.constexpr):\n    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                 "    tl.store(Y + o, tl.load(X + o, mask=o < N), mask=o < N)\n\n\n" + body)
    return f


def test_a_launcher_that_raises_is_reported_with_its_exception(tmp_path: Path) -> None:
    """End to end on the CPU: the recorder writes the call's exception, the inference message names it."""
    f = _write(tmp_path, "def copy(x):\n    if x.dim() > 1:\n        raise ValueError('copy wants a 1-D tensor\\nmore')\n"
                         "    y = torch.empty_like(x)\n    k_kernel[(1,)](x, y, x.numel(), BLOCK=64)\n    return y\n\n\n"
                         "if __name__ == '__main__':\n    copy(torch.randn(4, 4))\n")
    inf = infer(f, "k_kernel")
    line = f.read_text().splitlines().index("    copy(torch.randn(4, 4))") + 1
    assert inf.harness is None
    assert f"copy() raised ValueError: copy wants a 1-D tensor at line {line} of k.py" in inf.reason, inf.reason
    assert "too large" not in inf.reason and "more" not in inf.reason


def test_the_huge_rule_says_too_large(tmp_path: Path) -> None:
    f = _write(tmp_path, "def copy(x):\n    y = torch.empty_like(x)\n    k_kernel[(1,)](x, y, x.numel(), BLOCK=64)\n"
                         "    return y\n\n\nif __name__ == '__main__':\n    copy(torch.randn(64))\n")
    req, res = tmp_path / "req.json", tmp_path / "res.json"
    req.write_text(json.dumps({"path": str(f), "wrapper": "copy", "mode": "main", "result": str(res), "huge_numel": 10}))
    subprocess.run([sys.executable, "-m", "htam_core.harness.record", str(req)], cwd=tmp_path, check=True,
                   env={**__import__("os").environ, "TRITON_INTERPRET": "1"}, capture_output=True, timeout=120)
    rec = json.loads(res.read_text())
    assert rec["stopped_huge"] and rec["calls"] and not rec["calls"][0]["ran"]
    inf = build(f, "k_kernel", "copy", rec, "__main__")
    assert inf.harness is None and "too large" in inf.reason and "raised" not in inf.reason


def test_moved_inputs_are_named_in_the_harness_origin() -> None:
    """A recording whose inputs were moved to the GPU (what the recorder writes there) builds the usual
    harness (recorded shapes and dtypes) and its origin says the inputs were moved."""
    rec = record(CORPUS / "gelu.py", "gelu")
    plain = build(CORPUS / "gelu.py", "gelu_kernel", "gelu", json.loads(json.dumps(rec)), "__main__").harness
    rec["inputs_moved"] = "cuda"
    moved = build(CORPUS / "gelu.py", "gelu_kernel", "gelu", rec, "__main__").harness
    assert plain is not None and moved is not None
    assert MOVED_NOTE not in plain.source and MOVED_NOTE in moved.source
    assert [(i.name, i.shape, i.dtype) for i in moved.inputs] == [(i.name, i.shape, i.dtype) for i in plain.inputs]


def test_a_failed_inference_is_cached_too(tmp_path: Path) -> None:
    """The second command on an unchanged file reads the recording back (no child process): also when
    nothing could be inferred, so it says the same thing at once."""
    f = _write(tmp_path, "def copy(x):\n    if x.dim():\n        raise ValueError('nope')\n    y = torch.empty_like(x)\n"
                         "    k_kernel[(1,)](x, y, x.numel(), BLOCK=64)\n    return y\n\n\nif __name__ == '__main__':\n"
                         "    copy(torch.randn(4))\n")
    first, second = infer(f, "k_kernel"), infer(f, "k_kernel")
    assert not first.cached and second.cached and first.reason == second.reason and "raised ValueError" in first.reason
    f.write_text(f.read_text() + "\n# edited\n")
    assert not infer(f, "k_kernel").cached  # keyed by the file's content


def test_the_cubin_of_a_main_program_is_built_once(tmp_path: Path) -> None:
    """``verify`` then ``profile`` of a CUDA ``main()`` program (NVRTC rejects its host code) share one
    ``nvcc -cubin`` through the disk cache; an edited file is compiled again."""
    import shutil

    from htam_core.harness.cu_main import find_nvcc
    from htam_core.harness.runner import cubin_for, mangled_entry

    if find_nvcc() is None:
        pytest.skip("needs nvcc")
    src = tmp_path / "cu_saxpy_define.cu"
    shutil.copy(CORPUS / "cu_saxpy_define.cu", src)
    first = cubin_for(str(src), "sm_90")
    cached = list((tmp_path / "cache" / "cubins").glob("*.cubin"))
    assert len(cached) == 1 and cached[0].read_bytes() == first and mangled_entry(first, "saxpy")
    assert cubin_for(str(src), "sm_90") == first
    src.write_text(src.read_text() + "\n// edited\n")
    cubin_for(str(src), "sm_90")
    assert len(list((tmp_path / "cache" / "cubins").glob("*.cubin"))) == 2
