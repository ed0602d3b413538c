"""A kernel whose output is a ``__device__`` variable: the inferred harness lists it as an output mapped to the
variable (``Harness.symbols``), the ``htam.toml`` table keeps it, and the runner finds the variable's symbol in a
compiled module (a cubin's string table)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from htam_core.harness import HarnessError
from htam_core.harness.infer_cuda import harness_table, infer_cuda_harness
from htam_core.harness.runner import variable_symbol
from htam_core.harness.spec import load_toml, parse_kernel_table

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "devsym"


def load_spec_file(spec: Path, kernel: str):
    table = load_toml(spec)["kernel"][kernel]
    return parse_kernel_table(table, kernel=kernel, spec_path=spec, file_path=spec.parent / table["file"])


def test_the_device_counter_is_the_inferred_harness_output(tmp_path):
    shutil.copy(FIX / "devcount.cu", tmp_path / "devcount.cu")
    h = infer_cuda_harness(tmp_path / "devcount.cu", "count_pos")
    assert h.outputs == ["g_count"] and h.symbols == {"g_count": "g_count"}
    assert "g_count" not in h.args
    spec = next(i for i in h.inputs if i.name == "g_count")
    assert (spec.dtype, spec.shape, spec.init) == ("int32", [1], "zeros")


def test_the_table_round_trips_the_symbols(tmp_path):
    shutil.copy(FIX / "devcount.cu", tmp_path / "devcount.cu")
    table = harness_table(infer_cuda_harness(tmp_path / "devcount.cu", "count_pos"))
    assert tomllib.loads(table)["kernel"]["count_pos"]["symbols"] == {"g_count": "g_count"}
    (tmp_path / "htam.toml").write_text(table)
    h = load_spec_file(tmp_path / "htam.toml", "count_pos")
    assert h.symbols == {"g_count": "g_count"} and h.outputs == ["g_count"]


def test_a_symbols_entry_must_name_an_input_no_argument_passes(tmp_path):
    shutil.copy(FIX / "devcount.cu", tmp_path / "devcount.cu")
    table = harness_table(infer_cuda_harness(tmp_path / "devcount.cu", "count_pos"))
    (tmp_path / "htam.toml").write_text(table.replace('symbols = { g_count = "g_count" }',
                                                      'symbols = { x = "g_count" }'))
    with pytest.raises(HarnessError, match="symbols must map"):
        load_spec_file(tmp_path / "htam.toml", "count_pos")


def test_a_kernel_writing_nothing_comparable_still_says_so_in_one_line(tmp_path):
    (tmp_path / "k.cu").write_text(
        "#include <cstdio>\n__device__ bool g_flag;\n"
        "__global__ void mark(const float* x, int n) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n && x[i] < 0.0f) g_flag = true;\n}\n"
        "int main() {\n    int n = 1024; float* d; cudaMalloc(&d, n * sizeof(float));\n"
        "    mark<<<(n + 255) / 256, 256>>>(d, n);\n    return 0;\n}\n")
    with pytest.raises(HarnessError, match=r"g_flag, which is not compared: its element type `bool`"):
        infer_cuda_harness(tmp_path / "k.cu", "mark")


@pytest.mark.parametrize("symbols, qualified, expected", [
    (b"g_count", "g_count", "g_count"),
    (b"_ZN3acc8ns_countE", "acc::ns_count", "_ZN3acc8ns_countE"),
    (b"_ZL5total", "total", "_ZL5total"),
])
def test_the_symbol_of_a_device_variable_in_a_cubin(symbols, qualified, expected):
    cubin = b"\x7fELF\x00.nv.global\x00_Z9count_posPKfi\x00" + symbols + b"\x00.text._Z9count_posPKfi\x00"
    assert variable_symbol(cubin, qualified) == expected


def test_a_missing_symbol_is_one_clear_error():
    with pytest.raises(HarnessError, match="not a symbol of the compiled module"):
        variable_symbol(b"\x00other\x00", "g_count")
