"""Launches through the CUDA runtime API (``cudaLaunchKernel``, ``cudaLaunchCooperativeKernel``,
``cudaLaunchKernelEx``) are launch sites of the kernel they name: the grid, block, shared bytes and stream read
from the call's slots (or the config's fields), the kernel's arguments from the ``void* args[]`` array or the
trailing arguments. Programs written for these tests (tests/support/api_launches.py)."""

from __future__ import annotations

import json
import shutil

import pytest

from htam_core.cli.main import main
from htam_core.source.analysis.unit import cuda_source
from htam_core.source.api import parse_text
from tests.support.api_launches import SPELLINGS, program
from tests.support.nvcc_check import assert_compiles


def _kernel(text: str, name: str = "scale"):
    model = parse_text(text, "cuda", "/tmp/api_launch.cu")
    return model, model.kernel(name)


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_each_spelling_is_a_launch_site_with_its_arguments(name: str) -> None:
    model, k = _kernel(program(name))
    (site,) = k.launch_sites
    assert site.api.startswith("cudaLaunch")
    assert site.args == ["x", "f", "n"]
    assert site.line == next(i for i, ln in enumerate(model.text.splitlines(), 1) if "cudaLaunch" in ln
                             and "Config_t" not in ln)
    src = cuda_source(model, k)
    assert not isinstance(src, str)
    (sl,) = src.sites
    assert [src.t(a) for a in sl.arguments] == ["x", "f", "n"] and sl.args_known
    # the block slot is the expression the launch passes: the site's span of it is that text
    b = site.config_spans["block"]
    assert model.text.encode()[b.start:b.end].decode() == src.t(sl.block) == site.config["block"]


def test_the_ex_config_fields_are_read_as_the_slots() -> None:
    _, k = _kernel(program("ex config"))
    (site,) = k.launch_sites
    assert site.config["grid"] == "dim3((n + 511) / 512)" and site.config["block"] == "dim3(512)"
    assert site.config["smem"] == "0" and site.config["stream"] == "0"
    _, k = _kernel(program("ex designated"))
    assert k.launch_sites[0].config["block"] == "dim3(64)"


def test_a_later_assignment_of_a_config_field_is_the_one_read() -> None:
    text = program("ex config").replace("    cudaLaunchKernelEx", "    config.blockDim = dim3(32);\n    cudaLaunchKernelEx")
    _, k = _kernel(text)
    assert k.launch_sites[0].config["block"] == "dim3(32)"


def test_an_arguments_array_that_cannot_be_read_leaves_the_arguments_unknown() -> None:
    text = program("dim3 temporaries").replace("void* args[] = {&x, &f, &n};", "void* args[3];\n    args[0] = &x;")
    model, k = _kernel(text)
    (site,) = k.launch_sites
    assert site.args == [] and site.config["block"] == "dim3(256)"
    src = cuda_source(model, k)
    assert not isinstance(src, str)
    (sl,) = src.sites
    assert not sl.args_known and sl.arguments == []


def test_other_calls_and_dead_code_are_not_launches() -> None:
    text = program("dim3 temporaries").replace(
        "    cudaLaunchKernel(", "#if 0\n    cudaLaunchKernel((const void*)scale, 1, 1, args);\n#endif\n"
        "    cudaFuncSetAttribute((const void*)scale, cudaFuncAttributeMaxDynamicSharedMemorySize, 0);\n"
        "    cudaLaunchKernel(")
    _, k = _kernel(text)
    assert len(k.launch_sites) == 1 and k.launch_sites[0].config["grid"] == "dim3((n + 255) / 256)"


def test_the_launch_goes_to_the_kernel_it_names() -> None:
    text = program("dim3 temporaries").replace("int main()", "__global__ void other(float* x) { x[0] = 1.0f; }\n\nint main()")
    model = parse_text(text, "cuda", "/tmp/api_launch.cu")
    assert len(model.kernel("scale").launch_sites) == 1 and model.kernel("other").launch_sites == []


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name", list(SPELLINGS))
def test_each_program_compiles(tmp_path, name: str) -> None:
    assert_compiles(program(name), tmp=tmp_path, name="api.cu")


def test_htam_kernels_lists_the_launch(tmp_path, capsys) -> None:
    src = tmp_path / "api.cu"
    src.write_text(program("ex config"))
    assert main(["kernels", str(src), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    kernels = out["kernels"] if isinstance(out, dict) else out
    (site,) = kernels[0]["launch_sites"]
    assert site["through_api"] == "cudaLaunchKernelEx" and site["config"]["block"] == "dim3(512)"
