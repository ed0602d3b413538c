"""``htam profile``: JSON contract, readable output, one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htam_core.cli.main import main

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
KEYS = {"kernel", "mode", "device", "time_ms", "registers", "spill_bytes", "shared_bytes", "theoretical_occupancy",
        "achieved_occupancy", "sol", "bandwidth_bytes_per_s", "roofline_fraction", "bottleneck", "harness", "warnings"}


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cli-cache"))


def test_json_static(capsys):
    assert main(["profile", str(CORPUS / "reduce_sum_smem.cu"), "--kernel", "block_sum_interleaved", "--static",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert KEYS <= set(d)
    assert d["mode"] == "static" and d["device"] == "sm_90 (static)"
    for k in ("time_ms", "achieved_occupancy", "sol", "bandwidth_bytes_per_s", "roofline_fraction"):
        assert d[k] is None
    assert d["shared_bytes"] == 1024 and d["registers"] > 0 and 0 < d["theoretical_occupancy"] <= 1
    assert set(d["bottleneck"]) >= {"class", "evidence"}


def test_text_and_target(capsys):
    assert main(["profile", str(CORPUS / "sgemm_naive.cu"), "--kernel", "sgemm_naive", "--static",
                 "--target", "sm_80"]) == 0
    out = capsys.readouterr().out
    assert "kernel sgemm_naive  [static, sm_80 (static)]" in out and "registers" in out and "not measured" in out


def test_triton_constexpr_option(capsys):
    assert main(["profile", str(CORPUS / "vector_add_small_block.py"), "--kernel", "vadd_kernel", "--static",
                 "--json", "--constexpr", "BLOCK_SIZE=256"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["extra"]["constexprs"]["BLOCK_SIZE"]["value"] == 256


@pytest.mark.parametrize(("argv", "needle"), [
    (["profile", "missing.cu", "--kernel", "k", "--static"], "missing.cu does not exist"),
    (["profile", str(CORPUS / "sgemm_naive.cu"), "--kernel", "nope", "--static"], "no kernel named 'nope'"),
    (["profile", str(CORPUS / "sgemm_naive.cu"), "--kernel", "sgemm_naive", "--static", "--target", "hopper"],
     "bad target"),
    (["profile", str(CORPUS / "vector_add_small_block.py"), "--kernel", "vadd_kernel", "--constexpr", "X"],
     "NAME=VALUE"),
])
def test_errors_are_one_line_exit_2(capsys, argv, needle):
    assert main(argv) == 2
    # a slow first compile shows its progress line first ("htam: compiling ... (first compile, ...)..."): the
    # error itself is one line
    err = "".join(ln for ln in capsys.readouterr().err.splitlines(keepends=True)
                  if not (ln.startswith("htam: compiling ") and ln.rstrip().endswith("...")))
    assert err.startswith("htam: error: ") and needle in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_file_that_does_not_compile_is_one_line_exit_2(capsys, tmp_path):
    # a complete kernel in a file nvcc refuses (the half-typed kernels of broken_partial_kernels.cu no longer make
    # axpby fail: they and their launches are left out of its compile)
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(float* x) { x[0] = not_declared_anywhere; }\n")
    test_errors_are_one_line_exit_2(capsys, ["profile", str(bad), "--kernel", "k", "--static"], "does not compile")


def test_no_counters_asks_for_the_timer_only(monkeypatch, tmp_path, capsys):
    """`htam profile --no-counters` passes use_ncu=False (stage 1 of the two-stage profile); the default asks
    for the counters."""
    import htam_core.profile.api as api
    from htam_core.cli.main import main as cli_main

    seen: list[bool] = []

    def fake(path, kernel, **kw):
        seen.append(kw["use_ncu"])
        raise api.ProfileError("stop here")

    monkeypatch.setattr(api, "profile_kernel", fake)
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n")
    assert cli_main(["profile", str(src), "--kernel", "k", "--no-counters"]) == 2
    assert cli_main(["profile", str(src), "--kernel", "k"]) == 2
    assert seen == [False, True]
    assert "stop here" in capsys.readouterr().err


_HALF_TRITON = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                "def half_kernel(x_ptr, n, BLOCK: tl.constexpr):\n    pid = tl.program_id(0\n"
                "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n    tl.store(x_ptr + offs, 1.0, mask=offs < n)\n")
_HALF_CUDA = "__global__ void half_kernel(float* x, int n) {\n    int i = (threadIdx.x;\n    x[i] = n;\n"


@pytest.mark.parametrize(("name", "text"), [("half.py", _HALF_TRITON), ("half.cu", _HALF_CUDA)])
def test_incomplete_kernel_gets_the_line_suggest_and_optimize_give(tmp_path, capsys, name, text):
    """Regression: `htam profile` of a half-typed kernel printed the compiler's "SyntaxError: '(' was never
    closed" while suggest/optimize said "is incomplete ... finish it first". One shared line, exit 2."""
    path = tmp_path / name
    path.write_text(text)
    mem = ["--memory", str(tmp_path / "m.sqlite3")]
    lines = {}
    for cmd, extra in (("profile", ["--static"]), ("suggest", ["--static", *mem]),
                       ("optimize", ["--out", str(tmp_path / "o"), *mem])):
        assert main([cmd, str(path), "--kernel", "half_kernel", *extra]) == 2, cmd
        out = capsys.readouterr()
        assert out.out == "" and len(out.err.strip().splitlines()) == 1, (cmd, out)
        lines[cmd] = out.err.strip()
    # the position is where the text breaks (the `(` left open), not the kernel's first line
    where = "line 7, column 24" if name.endswith(".py") else "line 2, column 13"
    for cmd, line in lines.items():
        assert line.startswith(f"htam: error: half_kernel is incomplete (it does not parse at {where}: `(` is never "
                               "closed"), (cmd, line)
        assert "once it parses; finish or fix it there first" in line, (cmd, line)
        assert "SyntaxError" not in line


@pytest.mark.parametrize(("extra", "noted"), [(["--gpu", "3"], True), (["--gpu", "0"], True),
                                              (["--no-counters"], True), ([], False), (["--static"], False)])
@pytest.mark.parametrize("as_json", [False, True])
def test_no_gpu_note_when_a_gpu_profile_was_asked_for(monkeypatch, capsys, extra, noted, as_json):
    """Regression: `htam profile --gpu 3` without a GPU profiled statically without saying why. One note line
    on stderr (why there is no GPU) when --gpu/--no-counters asked for a GPU profile; stdout keeps its format."""
    import htam_core.profile.api as api

    monkeypatch.setattr(api, "no_gpu_reason", lambda: "nvidia-smi is not on PATH")
    argv = ["profile", str(CORPUS / "reduce_sum_smem.cu"), "--kernel", "block_sum_interleaved", *extra]
    assert main([*argv, *(["--json"] if as_json else [])]) == 0
    out = capsys.readouterr()
    note = "htam: note: no CUDA GPU found (nvidia-smi is not on PATH): static profile\n"
    assert (note in out.err) is noted
    assert "note" not in out.err.replace(note, "")
    if as_json:
        assert json.loads(out.out)["mode"] == "static"
    else:
        assert out.out.startswith("kernel block_sum_interleaved  [static, sm_90 (static)]\n")


@pytest.mark.parametrize("as_json", [False, True])
def test_slow_profile_prints_one_progress_line_on_stderr(monkeypatch, capsys, as_json):
    """Regression: a cold first profile ran 22.7 s with no output. A step still running after the threshold
    gets one progress line on stderr (htam optimize's convention), never with --json; a fast one none."""
    import time

    import htam_core.cli.progress as progress
    import htam_core.profile.api as api

    real = api.profile_kernel

    def slow(*a, **kw):
        time.sleep(0.5)
        return real(*a, **kw)

    argv = ["profile", str(CORPUS / "reduce_sum_smem.cu"), "--kernel", "block_sum_interleaved", "--static",
            *(["--json"] if as_json else [])]
    monkeypatch.setattr(api, "profile_kernel", slow)
    monkeypatch.setattr(progress, "SLOW_S", 0.05)
    assert main(argv) == 0
    out = capsys.readouterr()
    line = "htam: compiling block_sum_interleaved for sm_90 (first compile, later ones are cached)...\n"
    assert out.err == ("" if as_json else line)
    assert "compiling" not in out.out
    monkeypatch.setattr(progress, "SLOW_S", 30.0)  # a step that ends before the threshold says nothing
    assert main(argv) == 0
    assert capsys.readouterr().err == ""


def test_launch_values_come_from_the_harness_inferred_from_main(tmp_path, capsys, monkeypatch):
    """Regression: `htam profile rmsnorm.py` warned "constexpr BLOCK: not a literal ... compiled with BLOCK=1024
    (assumed)" although the harness inferred from __main__ gives the shapes the launcher's
    `BLOCK = triton.next_power_of_2(n_cols)` comes from. The value is the harness's, and the output says so."""
    pytest.importorskip("triton")
    monkeypatch.setenv("HTAM_INFER", "1")
    from htam_core.harness.find import find_harness
    from htam_core.source import load

    path = tmp_path / "rmsnorm.py"
    path.write_text(_RMSNORM)
    assert main(["profile", str(path), "--kernel", "rmsnorm_kernel", "--static", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    h = find_harness(path, "rmsnorm_kernel", load(str(path)))
    cols = h.sizes[0]["n_cols"]
    block = d["extra"]["constexprs"]["BLOCK"]
    assert block["value"] == 1 << (cols - 1).bit_length()
    assert block["source"].startswith("harness (inferred from __main__ of rmsnorm.py") and f"n_cols={cols}" in \
        block["source"]
    assert not any("assumed" in w for w in d["warnings"])
    assert any(w.startswith(f"constexpr BLOCK={block['value']}: the value the harness (inferred from __main__")
               for w in d["warnings"])


_RMSNORM = '''import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    y = x * tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps) * w
    tl.store(y_ptr + row * n_cols + offs, y, mask=mask)


def rmsnorm(x, w, eps=1e-6):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    BLOCK = triton.next_power_of_2(n_cols)
    rmsnorm_kernel[(n_rows,)](x, w, y, n_cols, eps, BLOCK=BLOCK)
    return y


if __name__ == "__main__":
    for cols in (1000, 4096):
        x = torch.randn(64, cols)
        w = torch.randn(cols)
        print(rmsnorm(x, w).sum())
'''
