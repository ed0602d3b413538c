"""The pointer element types of the static Triton compile: harness dtypes, else the kernel's use, else ``*fp32``.

Regression: a gather kernel that loads an int64 index and adds it to an address was compiled with every pointer
``*fp32`` and reported as a kernel that does not compile (``invalid operands of type pointer<fp32> and
triton.language.float32``), although its ``__main__`` records the index tensor as int64.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from htam_core.harness.base import Harness, InputSpec
from htam_core.harness.launch_values import recorded_pointer_dtypes
from htam_core.profile.static_triton import build_request, compile_triton_kernel, guessed_pointers_note
from htam_core.runtime.cache import CompileCache
from htam_core.source.api import load, parse_text
from htam_core.types.errors import ProfileError

_GATHER = '''
import torch
import triton
import triton.language as tl


@triton.jit
def gather_rows(src_ptr, index_ptr, dst_ptr, stride, n_cols, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    j = tl.load(index_ptr + r)
    v = tl.load(src_ptr + j * stride + c, mask=c < n_cols)
    tl.store(dst_ptr + r * stride + c, v, mask=c < n_cols)


def gather(src, index):
    dst = torch.empty((index.shape[0], src.shape[1]), dtype=src.dtype, device=src.device)
    half = index.to(torch.int32)
    gather_rows[(index.shape[0],)](src, index, dst, src.stride(0), src.shape[1], BLOCK=64)
    return dst
'''


def _kernel(text: str, name: str = "gather_rows"):
    model = parse_text(text, "python", "k.py")
    return model, next(k for k in model.kernels if k.name == name)


def _harness(dtypes: list[str], launcher: str | None = "gather", args: list[str] | None = None) -> Harness:
    inputs = [InputSpec("src", dtypes[0], ["M", "N"]), InputSpec("index", dtypes[1], ["M"], init="randint")]
    if args:
        inputs.append(InputSpec("dst", dtypes[0], ["M", "N"], init="empty"))
    return Harness("spec", "/x/k.py", "gather_rows", launcher=launcher, args=args or [], inputs=inputs,
                   sizes=[{"M": 8, "N": 64}])


def test_harness_dtypes_win_over_the_use() -> None:
    model, k = _kernel(_GATHER)
    rec = recorded_pointer_dtypes(_harness(["float16", "int32"]), model.text, k)
    assert rec == {"src_ptr": "float16", "index_ptr": "int32", "dst_ptr": "float16"}
    req = build_request(k, recorded_pointers=rec, used_pointers={"index_ptr": ("int64", "used in an address")})
    assert [req["signature"][p] for p in ("src_ptr", "index_ptr", "dst_ptr")] == ["*fp16", "*i32", "*fp16"]
    assert set(req["pointer_sources"].values()) == {"harness"}


def test_direct_launch_harness_names_its_inputs() -> None:
    model, k = _kernel(_GATHER)
    h = _harness(["bfloat16", "int64"], launcher=None, args=["src", "index", "dst", "N", "N"])
    assert recorded_pointer_dtypes(h, model.text, k) == {"src_ptr": "bfloat16", "index_ptr": "int64",
                                                         "dst_ptr": "bfloat16"}


@pytest.mark.parametrize(("alloc", "expected"), [
    ("torch.empty_like(src)", "float16"),
    ("src.new_empty(src.shape)", "float16"),
    ("torch.zeros(n, dtype=torch.int64, device=src.device)", "int64"),
    ("torch.empty(n, device=src.device)", "float32"),
    ("src.float()", "float32"),
    ("src.contiguous().view(-1)", "float16"),
    ("torch.empty_like(src, dtype=index.dtype)", "int32"),
])
def test_launcher_locals_take_the_dtype_they_are_made_with(alloc: str, expected: str) -> None:
    text = _GATHER.replace("dst = torch.empty((index.shape[0], src.shape[1]), dtype=src.dtype, device=src.device)",
                           f"n = src.numel()\n    dst = {alloc}")
    model, k = _kernel(text)
    assert recorded_pointer_dtypes(_harness(["float16", "int32"]), model.text, k)["dst_ptr"] == expected


def test_without_a_harness_the_use_types_the_index_pointer() -> None:
    _, k = _kernel(_GATHER)
    req = build_request(k, used_pointers={"index_ptr": ("int64", "a value loaded through it is used in an address")})
    assert req["signature"]["index_ptr"] == "*i64" and req["signature"]["src_ptr"] == "*fp32"
    assert req["pointer_sources"]["index_ptr"].startswith("use:")
    assert req["pointer_sources"]["src_ptr"] == "guessed"


def test_guessed_note_names_the_guessed_pointers_only_for_type_errors() -> None:
    sig = {"a_ptr": "*fp32", "i_ptr": "*i64", "o_ptr": "*fp16"}
    sources = {"a_ptr": "guessed", "i_ptr": "use: x", "o_ptr": "harness"}
    err = "CompilationError: at 4:36: x = ... ^ invalid operands of type pointer<fp32> and triton.language.float32"
    note = guessed_pointers_note("k", sig, sources, err)
    assert note is not None and "\n" not in note
    assert "a_ptr *fp32" in note and "i_ptr *i64" in note and "o_ptr" not in note
    assert "invalid operands" in note
    assert guessed_pointers_note("k", sig, {n: "harness" for n in sig}, err) is None
    assert guessed_pointers_note("k", sig, sources, "out of resources: shared memory, Required: 300000") is None


triton = pytest.importorskip("triton")


def test_gather_without_harness_compiles(tmp_path: Path) -> None:
    """No ``__main__``, no ``htam.toml``: the index pointer's type comes from the kernel's use of it."""
    path = tmp_path / "gather_k.py"
    path.write_text(textwrap.dedent(_GATHER), encoding="utf-8")
    model = load(path)
    k = next(k for k in model.kernels if k.name == "gather_rows")
    v = compile_triton_kernel(model, k, cache=CompileCache(tmp_path / "cache"))
    assert v["signature"]["index_ptr"] == "*i64"
    assert v["pointer_sources"]["index_ptr"].startswith("use:")
    assert int(v["registers"]) > 0


def test_unread_index_type_is_named_as_guessed_not_blamed_on_the_kernel(tmp_path: Path) -> None:
    """The index goes through a jitted helper that the use analysis does not follow: the compile fails with the
    ``*fp32`` guess, and the error says the pointer types were guessed."""
    text = _GATHER.replace("@triton.jit\ndef gather_rows",
                           "@triton.jit\ndef _row(j, s):\n    return j * s\n\n\n@triton.jit\ndef gather_rows")
    text = text.replace("tl.load(src_ptr + j * stride + c", "tl.load(src_ptr + _row(tl.load(index_ptr + r), stride) + c")
    path = tmp_path / "gather_h.py"
    path.write_text(text, encoding="utf-8")
    model = load(path)
    k = next(k for k in model.kernels if k.name == "gather_rows")
    with pytest.raises(ProfileError) as err:
        compile_triton_kernel(model, k, cache=CompileCache(tmp_path / "cache"))
    msg = err.value.message
    assert "guessed" in msg and "index_ptr *fp32" in msg and "\n" not in msg


def test_profile_reads_the_index_dtype_from_the_inferred_harness(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported case end to end: ``__main__`` calls the launcher with an int32 index tensor; the static profile
    compiles ``*i32`` (the harness's dtype wins over the use's int64) and says the type came from the harness."""
    from htam_core.profile.api import static_profile

    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")
    main = ('\n\nif __name__ == "__main__":\n    src = torch.randn(10, 40)\n'
            '    index = torch.randint(0, 10, (6,), dtype=torch.int32)\n'
            '    torch.testing.assert_close(gather(src, index), src[index.long()])\n')
    path = tmp_path / "gather_main.py"
    path.write_text(_GATHER + main, encoding="utf-8")
    model = load(path)
    k = next(k for k in model.kernels if k.name == "gather_rows")
    p = static_profile(model, k, "sm_90")
    assert p.extra["signature"]["index_ptr"] == "*i32" and p.extra["signature"]["src_ptr"] == "*fp32"
    assert p.extra["pointer_sources"]["index_ptr"] == "harness"
