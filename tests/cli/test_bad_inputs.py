"""Every CLI command against every known bad input: one exact line, a documented exit code, no traceback,
and nothing lost (store row counts and file bytes are compared before and after).

Cases that need a real second process or a real operating-system condition use one: a closed stdout
(``suggest`` into a pipe whose reader is gone), a second process holding the SQLite write lock, and a
read-only folder (``chmod`` for a normal user; for root, which ignores permissions, a read-only bind mount
in a private mount namespace through ``unshare``; skipped where neither is possible).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from htam_core.cli.errors import EXIT_CODES
from htam_core.cli.main import main
from htam_core.memory import Outcome, Record, open_store

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
STATE = {"class=memory-bound": 1.0}

pytestmark = pytest.mark.usefixtures("private_htam_env")


@pytest.fixture(autouse=True)
def _private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pending files of read-only stores go under XDG_STATE_HOME: keep them in tmp."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("HTAM_DEBUG", raising=False)


# ---- helpers ---------------------------------------------------------------------------------------
def _count(store: Path) -> int:
    """Rows of the records table, read without htam (read-only URI, so the check changes nothing)."""
    conn = sqlite3.connect(store.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM records").fetchone()[0])
    finally:
        conn.close()


def _files(folder: Path) -> dict[str, bytes]:
    """Every regular file under ``folder`` (SQLite side files excluded) -> its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


def _store(path: Path, n: int = 2) -> Path:
    with open_store(path) as st:
        for i in range(n):
            st.record([], STATE, "vectorize_loads", Outcome(1.2, True, True, "win"), f"k{i}", "H200", time=1.0 + i)
    return path


def _record_json(**change: object) -> dict:
    rec = Record((), dict(STATE), "vectorize_loads", "memory_access", Outcome(1.1, True, True, "win"), "kx", "H200",
                 5.0, uuid.uuid4().hex).to_json()
    rec.update(change)
    return rec


def _export_file(path: Path, records: list[dict]) -> Path:
    """An export with one record per line: record i starts on line i + 2."""
    body = ",\n".join(json.dumps(r) for r in records)
    path.write_text('{"format": "htam-memory", "schema": 1, "records": [\n' + body + "\n]}\n", encoding="utf-8")
    return path


def _err_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.splitlines()


def _htam(*args: str, env: dict[str, str] | None = None, prefix: list[str] | None = None,
          **kw: object) -> subprocess.CompletedProcess[str]:
    """Run ``python -m htam_core.cli.main ARGS`` in a fresh process (the real console entry point)."""
    cmd = [*(prefix or []), sys.executable, "-m", "htam_core.cli.main", *args]
    return subprocess.run(cmd, env={**os.environ, **(env or {})}, text=True, capture_output=True, timeout=300,
                          **kw)  # type: ignore[call-overload]


@contextmanager
def _read_only(folder: Path) -> Iterator[tuple[list[str], str]]:
    """Make ``folder`` read-only for commands run with the yielded prefix; yield (prefix, expected strerror)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield [], "Permission denied"
        finally:
            folder.chmod(0o755)
        return
    if shutil.which("unshare") is None:
        pytest.skip("root ignores permissions and unshare is missing: no read-only folder to test with")
    probe = subprocess.run(["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && ! touch "$0/.probe"',
                            str(folder)], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("root ignores permissions and a read-only bind mount is not allowed here")
    yield ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && shift && exec "$@"', str(folder), "--"], \
        "Read-only file system"


def _kernel_dir(tmp_path: Path, toml: bytes | None = None) -> Path:
    """A copy of examples/vector_add.py (kernel add_kernel), with ``toml`` as its htam.toml when given."""
    d = tmp_path / "proj"
    d.mkdir()
    shutil.copy(EXAMPLES / "vector_add.py", d / "vector_add.py")
    (d / "htam.toml").write_bytes(toml if toml is not None else (EXAMPLES / "htam.toml").read_bytes())
    return d


# ---- the exit codes are documented ------------------------------------------------------------------
def test_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for code, meaning in EXIT_CODES.items():
        assert f"  {code:<4} {meaning}" in out


# ---- memory import --------------------------------------------------------------------------------
def test_import_of_a_binary_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(tmp_path / "m.sqlite3")
    bad = tmp_path / "photo.json"
    bad.write_bytes(b"\xff\xfe\x00binary\n")
    assert main(["memory", "--memory", str(store), "import", str(bad)]) == 2
    assert _err_lines(capsys) == [
        f"htam: error: {bad} is not UTF-8 text (byte 0xff at line 1, offset 0: a binary file?); expected a file "
        "written by `htam memory export`"]
    assert _count(store) == 2 and bad.read_bytes() == b"\xff\xfe\x00binary\n"


def test_import_of_invalid_records_imports_nothing_and_names_the_lines(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(tmp_path / "m.sqlite3")
    no_device = _record_json()
    del no_device["device"]
    src = _export_file(tmp_path / "export.json",
                       [_record_json(), _record_json(time=float("nan")), no_device, _record_json()])
    before = src.read_bytes()
    assert b"NaN" in before  # what json.dumps writes for a NaN, and what the old import stored as NULL
    assert main(["memory", "--memory", str(store), "import", str(src)]) == 2
    assert _err_lines(capsys) == [
        f"htam: error: {src}: 2 invalid record(s), nothing was imported ({src}:3: time is NaN: numbers must be "
        f"finite; {src}:4: missing field device). Fix them, or pass --skip-invalid to import the 2 valid record(s) (any already in the store are skipped)"]
    assert _count(store) == 2 and src.read_bytes() == before
    assert main(["memory", "--memory", str(store), "import", str(src), "--skip-invalid"]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"imported 2 records (0 already present) into {store}\n"
    assert captured.err == (f"htam: warning: skipped 2 invalid record(s) of {src}: {src}:3: time is NaN: numbers "
                            f"must be finite; {src}:4: missing field device\n")
    assert _count(store) == 4


def test_import_into_a_missing_folder_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _export_file(tmp_path / "export.json", [_record_json()])
    store = tmp_path / "typo" / "m.sqlite3"
    assert main(["memory", "--memory", str(store), "import", str(src)]) == 3
    assert _err_lines(capsys) == [
        f"htam: error: no memory store at {store}: its folder {store.parent} does not exist (a mistyped --memory "
        "or HTAM_MEMORY?). Check the path, or create the folder first to start a new store there"]
    assert not store.parent.exists()


# ---- a second writer holds the lock -----------------------------------------------------------------
@contextmanager
def _lock_held(store: Path) -> Iterator[None]:
    """A second process holds the SQLite write lock (BEGIN IMMEDIATE) until the block ends."""
    code = ("import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\nsys.stdin.readline()\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(store)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


def test_import_while_another_writer_holds_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HTAM_MEMORY_LOCK_TIMEOUT", "0.3")
    store = _store(tmp_path / "m.sqlite3")
    src = _export_file(tmp_path / "export.json", [_record_json(), _record_json()])
    with _lock_held(store):
        assert main(["memory", "--memory", str(store), "import", str(src)]) == 75
    assert _err_lines(capsys) == [
        f"htam: error: the memory store {store} is locked by another writer (waited 0.3 s). Close the other htam "
        "process or editor that is writing it, or raise HTAM_MEMORY_LOCK_TIMEOUT (seconds, default 60), then retry"]
    assert _count(store) == 2
    assert main(["memory", "--memory", str(store), "import", str(src)]) == 0  # the lock is gone: it works
    assert _count(store) == 4


def test_optimize_keeps_the_records_it_cannot_write_and_adds_them_later(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HTAM_MEMORY_LOCK_TIMEOUT", "0.3")
    d = _kernel_dir(tmp_path)
    kernel_before = _files(d)
    store = _store(tmp_path / "m.sqlite3")
    with _lock_held(store):
        code = main(["optimize", str(d / "vector_add.py"), "--kernel", "add_kernel", "--static", "--budget", "2",
                     "--out", str(tmp_path / "out"), "--memory", str(store), "--json"])
    assert code == 0 and "Traceback" not in capsys.readouterr().err
    result = json.loads((tmp_path / "out" / "report.json").read_text())
    pending = Path(str(store) + ".pending.jsonl")
    kept = pending.read_text().splitlines()
    lost = [w for w in result["warnings"] if w.startswith("could not record step")]
    assert len(kept) == len(result["steps"]) == len(lost) >= 1
    assert all(f"The record was kept in {pending} and is added to the store the next time htam opens it for "
               "writing" in w and "locked by another writer (waited" in w for w in lost)
    assert _count(store) == 2
    with open_store(store) as st:  # the next writable open adds them, exactly once
        assert st.count() == 2 + len(kept)
        assert f"added {len(kept)} pending record(s) from {pending} to {store}" in st.warnings
    assert not pending.exists() and _count(store) == 2 + len(kept)
    assert _files(d) == kernel_before


# ---- reset --move-aside -----------------------------------------------------------------------------
@pytest.mark.parametrize("what", ["folder", "text file"])
def test_move_aside_refuses_what_is_not_an_sqlite_store(tmp_path: Path, what: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "kernel.cu").write_text("__global__ void k() {}\n")
    target = project if what == "folder" else project / "kernel.cu"
    before = _files(tmp_path)
    assert main(["memory", "reset", "--move-aside", "--yes", "--memory", str(target)]) == 3
    kind = "a folder" if what == "folder" else "not an SQLite file"
    assert _err_lines(capsys) == [
        f"htam: error: refusing to move {target} aside: it is {kind}, not an HTAM memory store (it does not start "
        "with the SQLite header). Check --memory/HTAM_MEMORY; htam only renames SQLite store files"]
    assert _files(tmp_path) == before and project.is_dir()


# ---- suggest --memory -------------------------------------------------------------------------------
def test_suggest_refuses_a_mistyped_store_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = str(EXAMPLES / "vector_add.py")
    typo = tmp_path / "memroy" / "m.sqlite3"
    assert main(["suggest", kernel, "--kernel", "add_kernel", "--static", "--memory", str(typo)]) == 3
    assert _err_lines(capsys) == [
        f"htam: error: no memory store at {typo}: its folder {typo.parent} does not exist (a mistyped --memory or "
        "HTAM_MEMORY?). Check the path, or create the folder first to start a new store there"]
    assert not typo.parent.exists()
    assert main(["suggest", kernel, "--kernel", "add_kernel", "--static", "--memory", str(tmp_path)]) == 3
    assert _err_lines(capsys) == [
        f"htam: error: {tmp_path} is a folder, not a memory store file; it was left untouched. Pass the path of a "
        f"store file, e.g. --memory {tmp_path / 'memory.sqlite3'}"]
    new = tmp_path / "new.sqlite3"
    assert main(["suggest", kernel, "--kernel", "add_kernel", "--static", "--memory", str(new)]) == 0
    assert f"  warning: created a new, empty memory store at {new}" in capsys.readouterr().out.splitlines()


def test_suggest_into_a_closed_pipe(tmp_path: Path) -> None:
    """``htam suggest ... | head -1``: the reader is gone before htam writes; no traceback, exit 141."""
    store = _store(tmp_path / "m.sqlite3")
    proc = subprocess.Popen([sys.executable, "-m", "htam_core.cli.main", "suggest", str(EXAMPLES / "vector_add.py"),
                             "--kernel", "add_kernel", "--static", "--memory", str(store), "--top", "20"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `head -1` exiting: every write now gets EPIPE
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141 and err == ""
    shell = subprocess.run(f"'{sys.executable}' -m htam_core.cli.main suggest '{EXAMPLES / 'vector_add.py'}' "
                           f"--kernel add_kernel --static --memory '{store}' --top 20 | head -1",
                           shell=True, capture_output=True, text=True, timeout=300)
    assert shell.stderr == "" and shell.stdout.startswith("add_kernel (triton")
    assert _count(store) == 2


# ---- a healthy store in a read-only folder ------------------------------------------------------------
def test_read_only_store_is_read_only_not_corrupt(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    store = _store(folder / "m.sqlite3")
    src = _export_file(tmp_path / "export.json", [_record_json()])
    before = _files(folder)
    warning = (f"htam: warning: the memory store {store} is not writable (permissions or a read-only file system): "
               "it was opened read-only, so reads work but new records are kept in a pending file until it is "
               "writable again")
    with _read_only(folder) as (prefix, _):
        stats = _htam("memory", "--memory", str(store), "stats", "--json", prefix=prefix)
        imp = _htam("memory", "--memory", str(store), "import", str(src), prefix=prefix)
        suggest = _htam("suggest", str(EXAMPLES / "vector_add.py"), "--kernel", "add_kernel", "--static", "--json",
                        "--memory", str(store), prefix=prefix)
    assert suggest.returncode == 0 and suggest.stderr.splitlines()[-1] == warning
    assert json.loads(suggest.stdout) and "Traceback" not in suggest.stderr
    assert stats.returncode == 0 and stats.stderr.splitlines() == [warning]
    assert json.loads(stats.stdout)["records"] == 2
    assert imp.returncode == 3 and imp.stderr.splitlines() == [
        warning, f"htam: error: cannot write the memory store {store}: it is not writable (it was opened "
                 "read-only). Fix the permissions of the file and its folder, or point --memory/HTAM_MEMORY at a "
                 "writable file"]
    assert _files(folder) == before and _count(store) == 2


def test_optimize_out_in_a_read_only_folder(tmp_path: Path) -> None:
    d = _kernel_dir(tmp_path)
    ro = tmp_path / "ro"
    ro.mkdir()
    before = _files(tmp_path)
    with _read_only(ro) as (prefix, strerror):
        res = _htam("optimize", str(d / "vector_add.py"), "--kernel", "add_kernel", "--static", "--budget", "1",
                    "--out", str(ro / "out"), "--memory", str(tmp_path / "m.sqlite3"), prefix=prefix)
    assert res.returncode == 4, res.stderr
    assert res.stderr.splitlines() == [
        f"htam: error: cannot create the output folder {ro / 'out'} (--out): {strerror}. Pass --out with a folder "
        "you can write"]
    assert _files(tmp_path) == before


# ---- a bad htam.toml next to the kernel -------------------------------------------------------------
BINARY_TOML = b"\xff\xd8\xff\xe0 not toml \x00\x01"


def _verify_and_optimize_refuse(tmp_path: Path, d: Path, line: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``verify`` and ``optimize`` of ``d/vector_add.py`` both exit 2 with ``line``; no existing file changes."""
    before = _files(tmp_path)
    kernel = str(d / "vector_add.py")
    assert main(["verify", kernel, "--kernel", "add_kernel"]) == 2
    assert _err_lines(capsys) == [f"htam: error: {line}"]
    assert main(["optimize", kernel, "--kernel", "add_kernel", "--static", "--budget", "1", "--out",
                 str(tmp_path / "out"), "--memory", str(tmp_path / "m.sqlite3")]) == 2
    assert _err_lines(capsys)[0] == f"htam: error: the harness of add_kernel cannot be used: {line}"
    after = _files(tmp_path)
    assert {k: after.get(k) for k in before} == before  # optimize may add its store: nothing existing changed


def test_binary_htam_toml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _kernel_dir(tmp_path, BINARY_TOML)
    toml = d / "htam.toml"
    line = (f"{toml} is not a UTF-8 text file (byte 0xff at line 1: a binary file?), so it is not a valid htam.toml. "
            "Replace it with a text htam.toml (docs/HARNESS.md has a complete example) or remove it")
    _verify_and_optimize_refuse(tmp_path, d, line, capsys)
    assert main(["profile", str(d / "vector_add.py"), "--kernel", "add_kernel", "--static"]) == 0  # needs no harness
    assert _err_lines(capsys) == []
    assert (d / "htam.toml").read_bytes() == BINARY_TOML


def test_harness_file_outside_the_project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (EXAMPLES / "htam.toml").read_text().replace('file = "vector_add.py"', 'file = "../../etc/passwd"')
    d = _kernel_dir(tmp_path, text.encode())
    line_no = text.splitlines().index('file = "../../etc/passwd"') + 1
    line = (f"{d / 'htam.toml'}:{line_no}: [kernel.add_kernel] file = '../../etc/passwd' points outside the folder "
            f"of htam.toml ({d.resolve()}); a harness may only name files in that folder or below it. Copy the file "
            "there and name it relative to htam.toml")
    _verify_and_optimize_refuse(tmp_path, d, line, capsys)


# ---- an unexpected exception ------------------------------------------------------------------------
def test_internal_error_is_one_line_with_the_traceback_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    import tempfile

    def boom(args: object) -> int:
        raise RuntimeError("something nobody expected\nsecond line")

    monkeypatch.setattr("htam_core.cli.kernels.run", boom)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["kernels", str(EXAMPLES / "vector_add.py")]) == 70
    lines = _err_lines(capsys)
    saved = sorted(tmp_path.glob("htam-crash-*.txt"))
    assert len(saved) == 1 and "RuntimeError: something nobody expected" in saved[0].read_text()
    assert lines == [f"htam: internal error: RuntimeError: something nobody expected. This is a bug in htam; the "
                     f"full traceback is in {saved[0]} (set HTAM_DEBUG=1 to print it). Please report it with that "
                     "file"]
    monkeypatch.setenv("HTAM_DEBUG", "1")
    assert main(["kernels", str(EXAMPLES / "vector_add.py")]) == 70
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and err.splitlines()[-1].startswith(
        "htam: internal error: RuntimeError: something nobody expected. This is a bug in htam; the full traceback "
        "is printed above")


_MISSING_COMMANDS = [
    ["kernels", "{p}"],
    ["profile", "{p}", "--kernel", "k", "--static"],
    ["suggest", "{p}", "--kernel", "k", "--static"],
    ["optimize", "{p}", "--kernel", "k"],
    ["verify", "{p}"],
    ["harness", "infer", "{p}"],
    ["bench", "suite", "--suite", "{p}"],
    ["bench", "space", "--suite", "{p}", "--out", "t.jsonl"],
    ["bench", "replay", "--table", "{p}"],
    ["memory", "import", "{p}", "--memory", "m.sqlite3"],
    ["memory", "merge", "{p}", "--into", "team.sqlite3"],
]


@pytest.mark.parametrize("argv", _MISSING_COMMANDS, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_a_path_that_does_not_exist_gets_the_same_message_from_every_command(
        argv: list[str], relative: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: each command worded a missing path its own way ("no such file: X", "X: no such file",
    "X does not exist: ...", "pass an existing .py file ..."). One helper now words them all."""
    monkeypatch.chdir(tmp_path)
    missing = "nope.cu" if relative else str(tmp_path / "nope.cu")
    assert main([a.replace("{p}", missing) for a in argv]) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1, out.err
    where = f" (looked in {tmp_path})" if relative else ""
    assert lines[0].startswith(f"htam: error: {missing} does not exist{where}: pass the path of an existing ")
    assert "Traceback" not in out.err


@pytest.mark.parametrize("argv", _MISSING_COMMANDS[:6], ids=lambda a: " ".join(a[:2]))
def test_a_folder_where_a_file_is_expected_is_named_as_such(argv: list[str], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main([a.replace("{p}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"htam: error: {tmp_path} is a folder: pass the path of an existing ") and "\n" not in err


def test_the_kernelbench_skip_uses_the_same_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from htam_core.cli.errors import missing_path_message

    # A --problems file the user named and that is not there is a usage error, worded as every other missing path.
    assert main(["bench", "kernelbench", "--problems", str(tmp_path / "p.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith(f"htam: error: {missing_path_message(tmp_path / 'p.jsonl', 'KernelBench problems file')}")


# ---- argparse's own errors are one line too --------------------------------------------------------------
@pytest.mark.parametrize("argv, names", [
    (["optimize", "x.py", "--kernel", "k", "--budget", "abc"], ("htam optimize: argument --budget", "'abc'")),
    (["bench", "suite", "--budget", "x"], ("htam bench suite: argument --budget",)),
    (["memory", "merge"], ("htam memory merge: the following arguments are required",)),
    (["no-such-command"], ("invalid choice: 'no-such-command'",)),
])
def test_option_errors_are_one_line(argv: list[str], names: tuple[str, ...],
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("htam: error: ") and "usage:" not in err, err
    assert all(n in err for n in names) and "--help` for the options" in err
