"""Prompt construction from HTAM memory (htam_core.generate.prompt)."""

from __future__ import annotations

from pathlib import Path

import htam_core.generate as gen_pkg
from htam_core.generate.prompt import build_messages, profile_summary, repair_message
from htam_core.types.profile import Bottleneck, Profile, TimeStats

KERNEL = "__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n"
DIRECTION = {"name": "Memory Access", "description": "Make global loads coalesced and wide."}
STRATS = [
    {"id": "cuda.vectorize_float4", "name": "float4 vectorized loads", "guidance": "Load four floats at once.",
     "example_before": "y[i] = x[i];", "example_after": "reinterpret_cast<float4*>(y)[i] = ...;",
     "risk": "needs 16-byte alignment"},
    {"id": "cuda.readonly_ldg", "name": "read-only cache loads", "guidance": "Use __ldg for inputs."},
]
HINTS = ["after Launch Configuration, Memory Access paid off 7 of 9 times", "Data Reuse failed twice"]


def _prof() -> Profile:
    return Profile(kernel="k", mode="gpu", device="NVIDIA H200", time_ms=TimeStats(0.5, 0.61, 0.7), registers=32,
                   spill_bytes=0, sol={"memory_pct": 41.0, "compute_pct": 9.5},
                   bandwidth_bytes_per_s=1.9e12, bottleneck=Bottleneck("memory-bound", ["dram 41% of peak"]))


def test_messages_carry_every_memory_input() -> None:
    msgs = build_messages(KERNEL, "cuda", _prof(), DIRECTION, STRATS, HINTS, None, None, kernel_name="k")
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    for needle in ["Memory Access", "coalesced and wide", "float4 vectorized loads", "Load four floats at once.",
                   "reinterpret_cast<float4*>", "needs 16-byte alignment", "cuda.readonly_ldg", HINTS[0], HINTS[1],
                   "x[threadIdx.x] *= 2.0f", "memory-bound", "0.61 ms", "1.9e+03 GB/s", "`k`", "```cuda"]:
        assert needle in user, needle
    assert "The previous attempt failed" not in user


def test_unmeasured_fields_read_not_measured() -> None:
    s = profile_summary(Profile(kernel="k"))
    assert "kernel time: not measured" in s and "achieved not measured" in s
    assert "not measured" in profile_summary(None)


def test_error_feedback_and_kernelbench_task() -> None:
    problem = "class Model(nn.Module):\n    def forward(self, a, b):\n        return a @ b\n\n" \
              "def get_inputs():\n    return []\n"
    msgs = build_messages("", "cuda-in-python", None, DIRECTION, [], [], problem, "nvcc: error: x undeclared")
    user = msgs[1]["content"]
    assert "class ModelNew" in user and "return a @ b" in user and "nvcc: error: x undeclared" in user
    assert "No strategy retrieved" in user and "No transitions recorded" in user


def test_dollar_signs_in_kernel_are_kept() -> None:
    msgs = build_messages("x = '$HOME ${y}'\n", "triton", None, DIRECTION, [], [], None, None)
    assert "x = '$HOME ${y}'" in msgs[1]["content"]


def test_repair_message_truncates_long_errors() -> None:
    m = repair_message("E" * 10000 + "THE CAUSE", 1, 2, "triton")
    assert m["role"] == "user" and "THE CAUSE" in m["content"] and "repair 1 of 2" in m["content"]
    assert len(m["content"]) < 5000


def test_templates_are_data_files() -> None:
    tdir = Path(gen_pkg.__file__).parent / "templates"
    names = {p.name for p in tdir.glob("*.md")}
    assert {"system.md", "user.md", "repair.md", "strategy.md"} <= names
