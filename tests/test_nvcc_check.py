"""The shared compile check of the tests (``tests/support/nvcc_check.py``): it accepts valid CUDA, reports errors of
host code as well as of device code (the front end reads the whole file), and passes flags and include folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.nvcc_check import assert_compiles, have_nvcc, nvcc_check, nvcc_error

pytestmark = pytest.mark.skipif(not have_nvcc(), reason="nvcc is not installed")

GOOD = """#include <cstdio>
__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
template <typename T> void launch(T *x, T a, int n) { scale<<<(n + 255) / 256, 256>>>(x, a, n); }
void run(float *x, int n) { launch(x, 2.0f, n); std::printf("done\\n"); }
"""


def test_a_valid_file_with_its_host_launcher_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTAM_NVCC_CHECK", raising=False)
    assert nvcc_error(GOOD, tmp=tmp_path, name="good.cu") == ""
    assert_compiles(GOOD, tmp=tmp_path, name="good.cu")
    # the device compile ran (a cubin for sm_90), the host compiler's pass did not (no object file)
    assert (tmp_path / "good.cu.cubin").stat().st_size > 0
    assert not list(tmp_path.glob("*.o"))


@pytest.mark.parametrize(("bad", "needle"), [
    ("void run(float *x, int n) { launch(x, 2.0f, n); undeclared_helper(n); }", "undeclared_helper"),
    ("void run(float *x, int n) { scale<<<1, 256>>>(x, 2.0f); }", "too few arguments"),
    ("void run(float *x, int n) { int *p = x; launch(x, 2.0f, n); }", "cannot be used to initialize"),
], ids=["undeclared", "launch-arguments", "type"])
def test_an_error_in_host_code_is_reported(bad: str, needle: str, tmp_path: Path) -> None:
    text = GOOD.replace(GOOD.splitlines()[-1], bad)
    err = nvcc_error(text, tmp=tmp_path)
    assert needle in err, err
    with pytest.raises(AssertionError, match="case 1"):
        assert_compiles(text, tmp=tmp_path, context="case 1")


def test_an_error_in_a_template_instantiated_from_host_code_is_reported() -> None:
    text = GOOD.replace("scale<<<(n + 255) / 256, 256>>>(x, a, n);", "scale<<<1, 256>>>(x, a, n); a.size();")
    err = nvcc_error(text)
    assert "must have class type" in err and "instantiation" in err, err


def test_flags_and_include_folders_reach_nvcc(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "width.cuh").write_text("#ifndef WIDTH\n#error WIDTH is not defined\n#endif\n")
    src = tmp_path / "k.cu"
    src.write_text('#include "width.cuh"\n__global__ void k(float *x) { x[threadIdx.x] = WIDTH; }\n')
    assert "width.cuh" in nvcc_error(src)
    assert "WIDTH is not defined" in nvcc_error(src, includes=(tmp_path / "inc",))
    assert nvcc_error(src, includes=(tmp_path / "inc",), flags=("-DWIDTH=4",)) == ""
    p = nvcc_check(src, includes=(tmp_path / "inc",), flags=("-DWIDTH=4", "-Xptxas", "-v"))
    assert p.returncode == 0 and "Used" in p.stderr and "registers" in p.stderr, p.stderr
