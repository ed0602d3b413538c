"""The Triton interpreter reads every constexpr spelling that Triton's compiler reads.

Triton compiles ``BLOCK: language.constexpr`` (``from triton import language``) on a GPU, but its CPU interpreter
accepts only ``tl.constexpr`` or a bare ``constexpr`` and fails with "arange's arguments must be of type
tl.constexpr". :func:`read_constexpr_spellings` applies the compiler's rule inside the processes that run user code.
Each case runs in a fresh interpreter process, once without the fix (the interpreter's own behaviour, so the test
can fail) and once with it; a harness is then inferred and a candidate verified through the real worker.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("triton")

from htam_core.harness.infer_py import infer, not_run_reason  # noqa: E402
from htam_core.runtime.children import child_env  # noqa: E402

#: import line, annotation of BLOCK, the alias the body uses
SPELLINGS = {
    "language": ("from triton import language", "language.constexpr", "language"),
    "alias_T": ("import triton.language as T", "T.constexpr", "T"),
    "imported_name": ("import triton.language as tl\nfrom triton.language import constexpr as C", "C", "tl"),
    "tl": ("import triton.language as tl", "tl.constexpr", "tl"),
}


def _kernel_file(tmp_path: Path, key: str) -> Path:
    imp, ann, lang = SPELLINGS[key]
    src = textwrap.dedent(f"""\
        import torch
        import triton
        {{imp}}


        @triton.jit
        def scale_kernel(x_ptr, y_ptr, n, alpha, BLOCK: {ann}):
            pid = {lang}.program_id(0)
            offs = pid * BLOCK + {lang}.arange(0, BLOCK)
            mask = offs < n
            x = {lang}.load(x_ptr + offs, mask=mask)
            {lang}.store(y_ptr + offs, x * alpha, mask=mask)


        def scale(x, alpha):
            y = torch.empty_like(x)
            scale_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), alpha, BLOCK=64)
            return y


        if __name__ == "__main__":
            x = torch.randn(300)
            assert torch.allclose(scale(x, 2.0), 2.0 * x)
            print("ok")
        """).replace("{imp}", imp)
    f = tmp_path / f"scale_{key}.py"
    f.write_text(src)
    return f


def _run(f: Path, fixed: bool) -> subprocess.CompletedProcess[str]:
    pre = "from htam_core.runtime.triton_interp import read_constexpr_spellings; read_constexpr_spellings(); " \
        if fixed else ""
    env = child_env()
    env["TRITON_INTERPRET"] = "1"
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return subprocess.run([sys.executable, "-c", f"{pre}import runpy; runpy.run_path({str(f)!r}, run_name='__main__')"],
                          env=env, capture_output=True, text=True, timeout=300, cwd=str(f.parent))


@pytest.mark.parametrize("key", ["language", "alias_T", "imported_name"])
def test_the_interpreter_alone_refuses_and_the_fix_runs_it(tmp_path: Path, key: str) -> None:
    f = _kernel_file(tmp_path, key)
    bare = _run(f, fixed=False)
    assert bare.returncode != 0 and "constexpr" in bare.stderr, bare.stderr[-400:]
    done = _run(f, fixed=True)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-800:]


def test_the_usual_spelling_still_runs(tmp_path: Path) -> None:
    f = _kernel_file(tmp_path, "tl")
    done = _run(f, fixed=True)
    assert done.returncode == 0, done.stderr[-800:]


def test_outside_the_interpreter_nothing_is_patched(monkeypatch: pytest.MonkeyPatch) -> None:
    from htam_core.runtime.triton_interp import read_constexpr_spellings

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert read_constexpr_spellings() is False


def test_a_harness_is_inferred_for_language_constexpr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")
    f = _kernel_file(tmp_path, "language")
    inf = infer(f, "scale_kernel")
    assert inf.harness is not None, inf.reason
    assert inf.harness.launcher == "scale"


def test_an_interpreter_failure_is_not_blamed_on_the_program() -> None:
    calls = [{"params": {}, "file": "/x/k.py", "line": 9, "ran": False,
              "error": "InterpreterError: ValueError(\"arange's arguments must be of type tl.constexpr\")"}]
    why = not_run_reason("scale", calls, {"stopped": None, "error": None})
    assert "under the Triton interpreter" in why and "htam.toml" in why
    assert "fix" not in why
