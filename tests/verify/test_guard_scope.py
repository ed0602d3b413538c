"""Guards and labels judge the kernel and its launcher only (regressions).

Each file under tests/fixtures/honest is a realistic kernel file whose scaffolding (``main()``, a
``__main__`` self-test) does what a guard looks for; the guards must stay silent on the scaffolding and
still fire when the same construct moves into the kernel or its launcher.
"""

from __future__ import annotations

from pathlib import Path

from htam_core.verify.guards import check_source, labels, refused_by

HONEST = Path(__file__).resolve().parents[1] / "fixtures" / "honest"


def _ids(text: str, language: str, **kw: object) -> set[str]:
    return {f.rule_id for f in check_source(text, language, **kw)}  # type: ignore[arg-type]


def test_a_stream_created_in_main_does_not_refuse_the_kernel() -> None:
    text = (HONEST / "scale_with_main.cu").read_text()
    assert "cudaStreamCreateWithFlags" in text
    assert check_source(text, "cuda") == []
    # the same call in the launcher is a side stream
    hacked = text.replace("    const int block = 256;\n",
                          "    const int block = 256;\n    cudaStreamCreate(&stream);\n", 1)
    findings = check_source(hacked, "cuda")
    assert refused_by(findings) == ["side-stream"]
    assert [f.line for f in findings] == [hacked.splitlines().index("    cudaStreamCreate(&stream);") + 1]


def test_a_bf16_self_test_does_not_label_an_fp32_kernel() -> None:
    text = (HONEST / "rmsnorm_fp32.py").read_text()
    assert "torch.bfloat16" in text and ".half()" in text
    assert check_source(text, "triton") == []
    # a cast in the launcher is reduced precision
    hacked = text.replace("    x2d = x.reshape(-1, x.shape[-1]).contiguous()\n",
                          "    x2d = x.reshape(-1, x.shape[-1]).contiguous().to(torch.bfloat16)\n", 1)
    assert labels(check_source(hacked, "triton")) == ["reduced-precision"]
    # ... and so is a bf16 cast inside the kernel
    in_kernel = text.replace(".to(tl.float32)\n        acc += v * v", ".to(tl.bfloat16)\n        acc += v * v", 1)
    assert in_kernel != text
    assert labels(check_source(in_kernel, "triton")) == ["reduced-precision"]


def test_a_helper_used_only_by_main_is_not_judged_but_one_used_by_the_launcher_is() -> None:
    text = (HONEST / "rmsnorm_fp32.py").read_text()
    # _reference is used by the self-test only (x.float(), .to(x.dtype)): out of scope
    helper = "def _as_bf16(t):\n    return t.to(torch.bfloat16)\n\n\n"
    only_main = text.replace("def _reference(", helper + "def _reference(", 1).replace(
        "        x = torch.randn(64", "        x = _as_bf16(torch.randn(64", 1).replace(
        "device=dev, dtype=dtype)\n        w", "device=dev, dtype=dtype))\n        w", 1)
    assert check_source(only_main, "triton") == []
    used = text.replace("def rmsnorm(", helper + "def rmsnorm(", 1).replace(
        "    y = torch.empty_like(x2d)\n", "    x2d = _as_bf16(x2d)\n    y = torch.empty_like(x2d)\n", 1)
    assert labels(check_source(used, "triton")) == ["reduced-precision"]


def test_tf32_fires_only_for_fp32_dot_operands() -> None:
    text = (HONEST / "matmul_fp16.py").read_text()
    assert "tl.dot(a, b)" in text
    # fp16 operands (the launcher asserts float16): against an fp16 reference nothing to label ...
    assert check_source(text, "triton", baseline_dtype="float16") == []
    # ... and against an fp32 one it is reduced precision, not TF32
    assert labels(check_source(text, "triton")) == ["reduced-precision"]
    fp32 = text.replace("    assert a.dtype == b.dtype == torch.float16, \"fp16 inputs only\"\n", "", 1)
    fp32 = fp32.replace("c = torch.empty((M, N), device=a.device, dtype=torch.float16)",
                        "c = torch.empty((M, N), device=a.device, dtype=a.dtype)")
    fp32 = fp32.replace("c = acc.to(tl.float16)", "c = acc.to(c_ptr.dtype.element_ty)")
    # operand dtype unknown statically: against an fp32 reference Triton would use TF32
    assert labels(check_source(fp32, "triton")) == ["tf32"]
    assert _ids(fp32, "triton", baseline_dtype="float16") == set()
    # operands cast to fp32 inside the kernel are fp32 whatever the launcher passes
    cast = text.replace("acc += tl.dot(a, b)", "acc += tl.dot(a.to(tl.float32), b.to(tl.float32))")
    findings = [f for f in check_source(cast, "triton", baseline_dtype="float16") if f.rule_id == "tf32"]
    assert len(findings) == 1 and "fp32 operands" in findings[0].message
    # ... and to fp16 they are not, even against an fp32 reference
    half = fp32.replace("acc += tl.dot(a, b)", "acc += tl.dot(a.to(tl.float16), b.to(tl.float16))")
    assert _ids(half, "triton") == {"reduced-precision"}
    # a launcher that casts its inputs decides the operand dtype
    host_cast = fp32.replace("    M, K = a.shape\n", "    a, b = a.half(), b.half()\n    M, K = a.shape\n", 1)
    assert _ids(host_cast, "triton") == {"tf32", "reduced-precision"}  # tuples not followed: unknown
    host_cast = fp32.replace("    M, K = a.shape\n", "    a = a.half()\n    b = b.to(torch.float16)\n"
                             "    M, K = a.shape\n", 1)
    assert _ids(host_cast, "triton") == {"reduced-precision"}
