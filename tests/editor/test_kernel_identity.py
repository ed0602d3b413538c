"""Kernels of one file that share a name (``f32::scale`` and ``f64::scale``, two overloads of ``scale``) are kept
apart by the editor: profiles, history and memory fingerprints are keyed by :attr:`Kernel.key`, and the profiler
is handed a key that selects the kernel it was asked about. A kernel whose name is its own keeps its plain name as
its key, so the records made before identities existed are still its own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htam_core.editor import Session
from htam_core.editor.history import AppliedStep, History
from htam_core.editor.profiles import ProfileCache, Stage
from htam_core.memory.fingerprint import kernel_fingerprint
from htam_core.source import Document, parse_text
from htam_core.types.profile import Profile
from tests.editor.test_profile_stages import _wait

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "identity"
PAIRS = {"namespaces.cu": ("f32::scale", "f64::scale"),
         "overloads.cu": ("scale(float*, float, int)", "scale(double*, double, int)")}


def _model(name: str, path: str | None = None):
    return parse_text((FIXTURES / name).read_text(), "cuda", path)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_shared_names_get_their_identity_as_key(name):
    model = _model(name)
    scales = [k for k in model.kernels if k.name == "scale"]
    assert tuple(k.key for k in scales) == PAIRS[name]
    for k in scales:  # the key is what the CLI's --kernel resolution takes for the kernel
        assert k.key == model.selector(k) and model.kernel(k.key) is k


def test_a_kernel_whose_name_is_its_own_keeps_its_name_as_key():
    only = _model("namespaces.cu").kernel("other::only")
    assert only.identity == "other::only" and only.key == "only"  # keys of unique kernels do not change
    k = parse_text("__global__ void k(float* x) { x[0] = 1; }\n", "cuda").kernels[0]
    assert k.key == k.name == "k"
    assert kernel_fingerprint("/p/a.cu", only.key) == kernel_fingerprint("/p/a.cu", "only")


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_an_edit_inside_one_body_keeps_the_keys(name):
    text = (FIXTURES / name).read_text()
    doc = Document(text, "cuda")
    assert doc.model.kernels  # the full parse; the kernel at a position after an edit is read by the fast path
    lines = [i for i, t in enumerate(text.splitlines()) if "x[i] = a * x[i];" in t]
    for line, key in zip(lines, PAIRS[name], strict=True):
        doc.apply_change(line, 4, line, 4, "/* tuned */ ")
        k = doc.kernel_at(line, 8)
        assert k is not None and "/* tuned */" in k.text and k.key == key


class _ByKey:
    """A stage function that profiles the kernel its key selects, read as the session reads it."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, path, key, text, lang, cancelled):
        self.asked.append(key)
        kernel = parse_text(text, lang, path).kernel(key)  # KeyError for a key that names several kernels
        yield Stage("compiled", Profile(kernel.name, mode="static", extra={"line": kernel.start_line}), "buffer")


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_profiles_of_the_pair_are_their_own(name):
    text = (FIXTURES / name).read_text()
    model = parse_text(text, "cuda", "/p/k.cu")
    a, b = (k for k in model.kernels if k.name == "scale")
    stages = _ByKey()
    cache = ProfileCache(stages=stages)
    assert cache.start("/p/k.cu", a, text, "cuda")
    _wait(lambda: cache.view("/p/k.cu", a).entry is not None and not cache.busy)
    assert cache.view("/p/k.cu", b).entry is None  # profiling one does not give the other a profile
    assert cache.start("/p/k.cu", b, text, "cuda")  # nor counts as the other's running or finished profile
    _wait(lambda: cache.view("/p/k.cu", b).entry is not None and not cache.busy)
    ea, eb = cache.view("/p/k.cu", a).entry, cache.view("/p/k.cu", b).entry
    assert stages.asked == list(PAIRS[name])
    assert (ea.kernel, eb.kernel) == PAIRS[name]
    assert (ea.profile.extra["line"], eb.profile.extra["line"]) == (a.start_line, b.start_line)
    assert cache.cancel_changed("/p/k.cu", model.kernels) == 0


def test_history_and_fingerprints_of_the_pair_are_apart():
    model = _model("namespaces.cu")
    a, b = (k for k in model.kernels if k.name == "scale")
    assert kernel_fingerprint("/p/k.cu", a.key) != kernel_fingerprint("/p/k.cu", b.key)
    h = History()
    h.add("/p/k.cu", a.key, AppliedStep("vectorize_float4", "memory", "float4", 0.0))
    assert [s.step for s in h.of("/p/k.cu", a.key)] == ["vectorize_float4"]
    assert h.of("/p/k.cu", b.key) == []


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_the_session_profiles_the_kernel_asked_about(tmp_path, monkeypatch, name):
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / name
    shutil.copy(FIXTURES / name, path)
    s = Session(memory_path=str(tmp_path / "mem.sqlite3"), static=True)
    try:
        model = parse_text(path.read_text(), "cuda", str(path))
        a, b = (k for k in model.kernels if k.name == "scale")
        ea = s.source_stage(str(path), a, model)
        assert ea is not None and ea.kernel == a.key
        assert s.profile_view(str(path), b).entry is None
        eb = s.source_stage(str(path), b, model)
        assert eb is not None and eb.kernel == b.key
        # the source stage read each kernel's own text: 4-byte floats for one, 8-byte doubles for the other
        ev_a, ev_b = (" ".join(e.profile.bottleneck.evidence) for e in (ea, eb))
        assert "8 B issued" in ev_a and "16 B issued" in ev_b
        assert s.profile_view(str(path), a).entry is ea and s.profile_view(str(path), b).entry is eb
    finally:
        s.close()


def test_an_auto_optimize_folder_of_a_shared_name_is_a_plain_folder_name():
    from htam_core.editor.autooptimize import out_dir
    from htam_core.optimize.task import OptimizeTask

    assert out_dir("/p/k.cu", "f64::scale") == "/p/htam-out/k-f64_scale"
    assert out_dir("/p/k.cu", "scale(double*, double, int)") == "/p/htam-out/k-scale_double_double_int"
    assert out_dir("/p/k.cu", "only") == "/p/htam-out/k-only"  # a plain name is unchanged
    assert OptimizeTask(path="/p/k.cu", kernel="f64::scale").resolved_out_dir().name == "k-f64_scale"
