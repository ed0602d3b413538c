"""bench/corpus_kernels.py: demangled entry names cut to the kernel's name, and a clean skip without a corpus."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "corpus_kernels.py"
spec = importlib.util.spec_from_file_location("corpus_kernels", SCRIPT)
assert spec is not None and spec.loader is not None
ck = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ck)


def test_base_name_of_demangled_entries() -> None:
    assert ck.base_name("void ns::k<float, 4>(float*, int)") == "k"
    assert ck.base_name("scale(float*, float, int)") == "scale"
    assert ck.base_name("void cub::DeviceScanKernel<Policy, int*>(int*, int)") == "DeviceScanKernel"


def test_skips_cleanly_without_a_corpus(tmp_path: Path, capsys) -> None:
    assert ck.main(["--corpus", str(tmp_path / "absent"), "--out", str(tmp_path / "out")]) == 0
    assert "no corpus" in capsys.readouterr().out and not (tmp_path / "out").exists()


def test_entries_of_the_file_itself(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    ptx = (f'.file 1 "{src}"\n.file 2 "/usr/include/cub/x.cuh"\n'
           ".visible .entry _Z1kPf(\n)\n{\n.loc 1 3 0\n}\n.visible .entry _Z4fromPf(\n)\n{\n.loc 2 9 0\n}\n")
    assert ck.own_entries(ptx, src) == ["_Z1kPf"]
