"""The source-only stage published at once by the first request (:meth:`Session.source_stage`): from the analysis
layer only, never waiting for a run of the file (harness inference) or a compile, and the compile follows in
the background without computing the source stage again (:meth:`ProfileCache.publish_first`)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from htam_core.editor import Session
from htam_core.editor.profiles import ProfileCache, ProfileEntry, Stage
from htam_core.harness import HarnessError, find_harness
from htam_core.profile.static_cuda import find_nvcc
from htam_core.profile.static_roofline import harness_sizes_noted
from htam_core.source import parse_text
from htam_core.types.profile import Profile
from tests.editor.test_profile_stages import SRC, _collect, _kernel, _wait

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"


def _marked_copy(tmp_path: Path) -> tuple[Path, Path]:
    """A Triton file without ``htam.toml`` whose ``__main__`` block (what harness inference runs) first writes a
    marker file: the marker says whether the file was run."""
    marker = tmp_path / "main-ran"  # (the caller turns inference on: HTAM_INFER=1)
    src = (CORPUS / "vector_add_small_block.py").read_text()
    head = 'if __name__ == "__main__":\n'
    assert head in src
    path = tmp_path / "vadd.py"
    path.write_text(src.replace(head, head + f"    open({str(marker)!r}, 'w').close()\n", 1))
    return path, marker


def _session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Session:
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")  # on, so that a run of the file would happen if anything asked for it
    s = Session(memory_path=str(tmp_path / "mem.sqlite3"), static=True)
    s.warm_up()
    return s


def test_finding_sizes_without_running_the_file_does_not_infer(tmp_path, monkeypatch):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HTAM_INFER", "1")
    path, marker = _marked_copy(tmp_path)
    assert harness_sizes_noted(str(path), "vadd_kernel", run_code=False) == ({}, None)
    with pytest.raises(HarnessError) as exc:
        find_harness(path, "vadd_kernel", run_code=False)
    assert exc.value.missing
    assert not marker.exists() and not (tmp_path / "cache" / "inferred").exists()


def test_source_stage_is_published_at_once_without_running_the_file(tmp_path, monkeypatch):
    s = _session(tmp_path, monkeypatch)
    path, marker = _marked_copy(tmp_path)
    model = parse_text(path.read_text(), "python", str(path))
    (k,) = model.kernels
    got = _collect(s.profiles)
    e = s.source_stage(str(path), k, model)
    assert e is not None and got == [e]
    assert (e.stage, e.source, e.pending) == ("source", "disk", "compile (registers, spills, occupancy)")
    assert e.profile.extra["stage"] == "source" and e.profile.registers is None
    assert e.profile.bottleneck.cls  # classified from the source facts
    assert not marker.exists()  # the harness was not inferred by running the file's __main__ block
    view = s.profile_view(str(path), k)
    assert view.unfinished and not view.running  # the compile is still to be queued
    assert s.source_stage(str(path), k, model) is None  # once per kernel version
    s.close()


def test_source_stage_is_not_made_when_the_profile_is_measured(tmp_path, monkeypatch):
    s = _session(tmp_path, monkeypatch)
    path = tmp_path / "t.cu"
    shutil.copy(CORPUS / "transpose_naive.cu", path)
    model = parse_text(path.read_text(), "cuda", str(path))
    k = model.kernel("transpose_naive")
    s.gpu, s.static = "NVIDIA H200", False  # a saved file on a GPU machine: its first stage is the timer
    assert s.source_stage(str(path), k, model) is None
    s.gpu, s.static = None, True
    assert s.source_stage(str(path), k, model) is not None
    s.close()


@pytest.mark.skipif(find_nvcc() is None, reason="needs nvcc for the compiled stage")
def test_the_compile_follows_without_computing_the_source_stage_again(tmp_path, monkeypatch):
    s = _session(tmp_path, monkeypatch)
    path = tmp_path / "t.cu"
    shutil.copy(CORPUS / "transpose_naive.cu", path)
    text = path.read_text()
    model = parse_text(text, "cuda", str(path))
    k = model.kernel("transpose_naive")
    got = _collect(s.profiles)
    first = s.source_stage(str(path), k, model)
    assert first is not None
    assert s.start_profile(str(path), k, text, "cuda")  # an earlier stage alone does not count as profiled
    _wait(lambda: not s.busy, 120)
    assert [e.stage for e in got] == ["source", "compiled"]
    last = got[-1]
    assert last.error is None and last.pending is None and last.profile.registers is not None
    assert not s.start_profile(str(path), k, text, "cuda")  # finished: nothing more to queue
    s.close()


def _source(kernel_name: str = "k") -> Stage:
    return Stage("source", Profile(kernel_name, mode="static", extra={"stage": "source"}), "disk",
                 pending="compile (registers, spills, occupancy)")


def test_publish_first_never_overrides_a_job_or_a_profile_of_the_same_version():
    gate = threading.Event()

    def stages(path, name, text, lang, cancelled):
        gate.wait(10)
        yield Stage("compiled", Profile(name, mode="static"), "disk")

    cache = ProfileCache(stages=stages)
    got: list[ProfileEntry] = _collect(cache)
    k = _kernel()
    assert cache.start("/f.cu", k, SRC.format(c=2), "cuda")
    assert cache.publish_first("/f.cu", k, _source()) is None  # a job of the kernel is running: its stages win
    gate.set()
    _wait(lambda: not cache.busy and got)
    assert [e.stage for e in got] == ["compiled"]
    assert cache.publish_first("/f.cu", k, _source()) is None  # a profile of this version exists
    k3 = _kernel(3)  # the kernel changed: its first stage is published
    e = cache.publish_first("/f.cu", k3, _source())
    assert e is not None and e.inline and cache.view("/f.cu", k3).unfinished
    # htam.profile's first answer: that published stage, at once; the job adds the compile
    firsts: list[ProfileEntry] = []
    gate.clear()
    assert cache.start("/f.cu", k3, SRC.format(c=3), "cuda", force=True, on_first=firsts.append)
    assert firsts == [e] and cache.busy
    gate.set()
    _wait(lambda: not cache.busy)
    assert [x.stage for x in got] == ["compiled", "source", "compiled"] and firsts == [e]
    cache.close()
