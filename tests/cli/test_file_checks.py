"""The file checks every command shares, and the memory commands on a full disk.

Cases a probe reported:

* ``htam verify`` on a latin-1 or binary ``.cu`` said "no CUDA or Triton kernel was found ... pass --kernel"
  and offered an htam.toml template, while ``htam kernels`` said "not UTF-8": every command that reads a
  source file now runs one check and says the same line.
* A named pipe called ``x.cu`` was "not a folder"; it is now named as a named pipe, and never opened (opening a
  FIFO for reading blocks until a writer comes).
* A full disk during ``memory import`` exited 3 where the exit-code table says 4.
* ``memory export`` to a full disk left a 0-byte file and did not name the path.
* A failed open or import left a 0-byte (or empty) store that was not there before.

A full disk is simulated by making the write raise what the OS or SQLite raises on one (``ENOSPC``,
``SQLITE_FULL``), and by ``/dev/full`` where it exists.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from htam_core.cli.errors import EXIT_IO
from htam_core.cli.main import main
from htam_core.memory import Outcome, Record, open_store
from htam_core.memory import store as store_mod

ROOT = Path(__file__).resolve().parents[2]
STATE = {"class=memory-bound": 1.0}
LATIN1 = "// café: a comment in latin-1\n__global__ void k(float *x) { x[threadIdx.x] = 0.f; }\n".encode("latin-1")

pytestmark = pytest.mark.usefixtures("private_htam_env")

_SOURCE_COMMANDS = [
    ["kernels", "{p}"],
    ["profile", "{p}"],
    ["suggest", "{p}"],
    ["optimize", "{p}"],
    ["verify", "{p}"],
    ["harness", "infer", "{p}"],
]


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("argv", _SOURCE_COMMANDS, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize("content, byte, line", [(LATIN1, "0xe9", 1), (b"\x7fELF\x02\x01\x01\x00\xff\xfe", "0xff", 1)],
                         ids=["latin-1", "binary"])
def test_every_command_says_the_same_line_for_a_file_that_is_not_utf8(
        argv: list[str], content: bytes, byte: str, line: int, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "k.cu"
    src.write_bytes(content)
    assert main([a.replace("{p}", str(src)) for a in argv]) == 2
    got = _one_error_line(capsys)
    assert got.startswith(f"htam: error: {src} is not UTF-8 text (byte {byte} at line {line}: a binary file, or text "
                          "in another encoding such as latin-1), so htam cannot read it; save it as UTF-8")
    assert "no CUDA or Triton kernel" not in got and "htam.toml" not in got
    assert src.read_bytes() == content


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    p = tmp_path / "x.cu"
    os.mkfifo(p)
    return p


@pytest.mark.parametrize("argv", [*_SOURCE_COMMANDS, ["memory", "import", "{p}", "--memory", "m.sqlite3"],
                                  ["memory", "merge", "{p}", "--into", "team.sqlite3"]],
                         ids=lambda a: " ".join(a[:2]))
def test_a_named_pipe_is_named_as_such(argv: list[str], fifo: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([a.replace("{p}", str(fifo)) for a in argv]) == 2
    got = _one_error_line(capsys)
    assert got.startswith(f"htam: error: {fifo} is a named pipe (FIFO), not a regular file: pass the path of an "
                          "existing "), got
    assert not (tmp_path / "m.sqlite3").exists() and not (tmp_path / "team.sqlite3").exists()


def test_a_named_pipe_is_never_opened(fifo: Path) -> None:
    """In a fresh process with a deadline: opening the FIFO for reading would block forever (no writer)."""
    done = subprocess.run([sys.executable, "-m", "htam_core.cli.main", "kernels", str(fifo)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "is a named pipe (FIFO), not a regular file" in done.stderr


def test_a_named_pipe_as_the_store_is_refused(fifo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "--memory", str(fifo), "stats"]) == 3
    assert "is not a regular file (a named pipe, socket or device)" in _one_error_line(capsys)


def test_a_file_where_a_folder_is_expected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "suite.txt"
    f.write_text("x", encoding="utf-8")
    assert main(["bench", "suite", "--suite", str(f)]) == 2
    assert _one_error_line(capsys).startswith(f"htam: error: {f} is a file, not a folder: pass the path of an existing")


# ---- the memory on a full disk ----------------------------------------------------------------------------
def _full_error() -> sqlite3.OperationalError:
    exc = sqlite3.OperationalError("database or disk is full")
    exc.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
    return exc


class _FullOnBulkWrite(sqlite3.Connection):
    """A connection whose bulk insert fails as SQLite does on a full disk."""

    def executemany(self, *args: object, **kwargs: object) -> sqlite3.Cursor:  # type: ignore[override]
        raise _full_error()


def _connect_full(path: Path, mode: str = "rw") -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=0.1, isolation_level=None, check_same_thread=False,
                           factory=_FullOnBulkWrite)
    conn.execute("PRAGMA busy_timeout = 100")
    return conn


def _export(path: Path, n: int = 3) -> Path:
    recs = [Record((), dict(STATE), "vectorize_loads", "memory_access", Outcome(1.1, True, True, "win"), f"k{i}",
                   "H200", 5.0 + i, uuid.uuid4().hex).to_json() for i in range(n)]
    import json

    path.write_text(json.dumps({"format": "htam-memory", "schema": 4, "records": recs}, indent=1), encoding="utf-8")
    return path


def test_import_on_a_full_disk_exits_4_and_keeps_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "m.sqlite3"
    with open_store(store) as st:
        st.record([], STATE, "vectorize_loads", Outcome(1.2, True, True, "win"), "k", "H200", time=1.0)
    src = _export(tmp_path / "e.json")
    monkeypatch.setattr(store_mod, "_connect", _connect_full)
    assert main(["memory", "--memory", str(store), "import", str(src)]) == EXIT_IO
    got = _one_error_line(capsys)
    assert f"the memory store {store}" in got and "the disk is full" in got
    monkeypatch.undo()
    with open_store(store) as st:
        assert st.count() == 1


def test_a_failed_import_leaves_no_store_it_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "new.sqlite3"
    src = _export(tmp_path / "e.json")
    monkeypatch.setattr(store_mod, "_connect", _connect_full)
    assert main(["memory", "--memory", str(store), "import", str(src)]) == EXIT_IO
    assert "the disk is full" in _one_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.json"]


def test_a_failed_open_leaves_no_0_byte_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """SQLite creates the file on connect; the set-up then fails on the full disk."""
    def full(conn: sqlite3.Connection) -> None:
        raise _full_error()

    monkeypatch.setattr(store_mod._Db, "_migrate", staticmethod(full))
    store = tmp_path / "new.sqlite3"
    src = _export(tmp_path / "e.json")
    assert main(["memory", "--memory", str(store), "import", str(src)]) == EXIT_IO
    assert "the disk is full" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.json"]


def test_a_failed_merge_leaves_no_store_it_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    src = _export(tmp_path / "e.json")
    monkeypatch.setattr(store_mod, "_connect", _connect_full)

    def full_merge(self: object, recs: object) -> object:
        raise store_mod.MemoryStoreError("cannot use the memory store: the disk is full", tmp_path / "team.sqlite3",
                                         "io")

    monkeypatch.setattr(store_mod.Store, "merge_records", full_merge)
    assert main(["memory", "merge", str(src), "--into", str(tmp_path / "team.sqlite3")]) == EXIT_IO
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.json"]


@pytest.fixture
def store_with_records(tmp_path: Path) -> Path:
    store = tmp_path / "m.sqlite3"
    with open_store(store) as st:
        st.record([], STATE, "vectorize_loads", Outcome(1.2, True, True, "win"), "k", "H200", time=1.0)
    return store


@pytest.mark.parametrize("existing", [None, b"the previous export\n"], ids=["new file", "existing file"])
def test_export_to_a_full_disk_names_the_path_and_leaves_no_partial_file(
        existing: bytes | None, store_with_records: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out" / "team.json"
    out.parent.mkdir()
    if existing is not None:
        out.write_bytes(existing)
    real_write = os.write

    def write(fd: int, data: bytes) -> int:
        if fd > 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    assert main(["memory", "--memory", str(store_with_records), "export", str(out)]) == EXIT_IO
    monkeypatch.undo()
    got = _one_error_line(capsys)
    assert got.startswith(f"htam: error: cannot write the export to {out}: No space left on device (the disk is full")
    assert got.endswith("the file was left as it was")
    assert [p.name for p in out.parent.iterdir()] == ([] if existing is None else ["team.json"])
    if existing is not None:
        assert out.read_bytes() == existing


def test_export_to_dev_full(store_with_records: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    assert main(["memory", "--memory", str(store_with_records), "export", "/dev/full"]) == EXIT_IO
    assert _one_error_line(capsys).startswith("htam: error: cannot write the export to /dev/full: No space left")
    assert Path("/dev/full").is_char_device()


def test_export_still_round_trips(store_with_records: Path, tmp_path: Path) -> None:
    out = tmp_path / "e.json"
    assert main(["memory", "--memory", str(store_with_records), "export", str(out)]) == 0
    assert main(["memory", "--memory", str(tmp_path / "copy.sqlite3"), "import", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
