"""Latency of the editor's first profile: ``didOpen`` to a hover with a profile, and a warm ``htam.profile``.

Driven through a real LSP client (pygls's ``LanguageClient``) over stdio against ``python -m htam_server``, on
a CUDA and a Triton kernel of the naive-kernel suite (``bench/suite``, with their ``htam.toml`` harnesses).
Every repeat starts a fresh server with an empty memory store and an empty compile cache (``HTAM_CACHE_DIR`` in
a new temp dir: cold compile cache), waits until it is ready (``htam/status``), then opens the file and polls the
hover (every ``--poll-ms``) at the kernel's name.

Measured per kernel (median, min, max over ``--repeats``):

* ``first_profile_s``: ``didOpen`` to the first hover that shows a profile (any stage). On a CPU machine that
  is the source-only static profile (stage 1, no compile); on a GPU the timer's measured time (stage 1).
* ``final_stage_s``: ``didOpen`` to the hover of the last stage (the compiled static profile without a GPU;
  the Nsight Compute counters with one).
* ``start_to_first_s``: from launching the server process to that first profile hover (its imports,
  ``initialize``, the memory's warm-up when it is waited for, and ``first_profile_s``). With ``--open-at-start``
  the file is opened right after ``initialized`` without waiting for ``ready``, as an editor that starts the
  server for the file it opens does; ``first_profile_s`` then counts from that ``didOpen``.
* GPU only, ``warm_profile_s``: ``htam.profile`` on the same server after the first profile finished (warm
  worker, compile cached, kernel unchanged): the command answers with stage 1; ``warm_final_s``: until the
  counters' stage lands.

Targets: first static profile <= 1 s on a CPU (median, cold compile cache); warm ``htam.profile``
<= 1 s on a GPU.

Robustness: every phase is bounded (``initialize`` and ``ready``: ``--init-timeout-s``, 60 s; each hover
wait and the warm command: ``--timeout-s``, 45 s); a phase that does not answer ends its repeat with a
timeout row (and the tail of that server's stderr log, kept under ``server-logs/``) instead of hanging. After
each repeat the server is shut down (bounded), and the server and every process it started (its workers run in
their own sessions, so they outlive a killed server: an earlier version of this script could leave a worker
holding the GPU between repeats) are killed if still alive. Each repeat's row is appended to ``rows.jsonl``
as it finishes and a progress line per phase is printed (flushed). ``--max-seconds`` (100 s) is the total
budget: no phase runs past it, no repeat starts after it, and the summary of what was measured is
written; the exit code is 0. The last server's shutdown adds at most about 25 s (bounded waits), so the
defaults end within about 125 s (the stage limit of bench/gpu_session.sh is 120 s by default: give it LSPGPU_S=150).

Run: ``python bench/bench_lsp_gpu.py --out bench/results/lsp-first-profile-<machine>-<date> [--repeats 3]``
(the GPU part runs when ``nvidia-smi`` finds a GPU; ``--cpu`` forces the CPU part). Writes ``result.json``,
``result.md`` (machine, date, command), ``rows.jsonl`` and ``server-logs/`` into the ``--out`` folder.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

HERE = Path(__file__).resolve().parent
SUITE = HERE / "suite"
#: (file in bench/suite, kernel, languageId)
KERNELS = [("axpy_tiny_block.cu", "axpy_tiny_block", "cuda"),
           ("bias_gelu_fused.py", "bias_gelu_residual_kernel", "python")]
TARGET_S = 1.0
NONE_YET = "**Profile:** none yet"


def gpu_name() -> str | None:
    """The first GPU's name from ``nvidia-smi``, or ``None`` without one."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    out = subprocess.run([exe, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def _name_position(text: str, name: str) -> types.Position:
    i = text.index(name + "(") if name + "(" in text else text.index(name)
    line = text.count("\n", 0, i)
    return types.Position(line=line, character=i - (text.rfind("\n", 0, i) + 1))


def _stage_of(md: str, gpu: bool) -> str | None:
    """Which stage a hover shows: ``None`` (no profile yet), ``"first"`` or ``"final"``."""
    if NONE_YET in md or "**Profile" not in md:
        return None
    head = next((ln for ln in md.splitlines() if ln.startswith("**Profile")), "")
    if "failed" in head:
        return "failed"
    if gpu and "measured on" not in head:
        return None if "follow" in head else "static"  # no harness / unsaved: static only
    return "first" if "follow" in head else "final"


def _descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, their children ...), from ``/proc`` (Linux; ``[]`` elsewhere).

    The server's workers run in their own sessions (so that a timeout kills what they started), hence they are
    not in the server's process group and survive a kill of the server: they are found here, by parent pid,
    while the server still lives."""
    parents: dict[int, list[int]] = {}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents.setdefault(int(fields[1]), []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in parents.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:  # a zombie (or a process on its way out) is not alive: it holds nothing
        return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:160]
    except OSError:
        return "?"


def _kill_tree(pids: list[int]) -> list[str]:
    """SIGKILL every process of ``pids`` still alive, and its process group (a worker's ncu and nvcc); returns
    ``"PID: command line"`` of each that was still alive."""
    left = [p for p in pids if _alive(p)]
    named = [f"{p}: {_cmd(p)}" for p in left]
    for p in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(p) == p:  # a worker leads its own group: its ncu, nvcc ... go with it
                os.killpg(p, signal.SIGKILL)
            os.kill(p, signal.SIGKILL)
    return named


#: The server, with its stderr moved to a log file: pygls's client gives the server a stderr pipe that it never
#: reads, so a chatty server could block on it, and a server that dies at start would say why to no one.
_SERVER = ("import os, runpy, sys; fd = os.open(sys.argv.pop(1), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644); "
           "os.dup2(fd, 2); sys.argv[0] = 'htam_server'; runpy.run_module('htam_server', run_name='__main__', "
           "alter_sys=True)")


class Phase(Exception):
    """A phase of a repeat did not finish in time (``phase`` names it)."""

    def __init__(self, phase: str, limit_s: float) -> None:
        super().__init__(f"{phase}: no answer within {limit_s:.0f} s")
        self.phase, self.limit_s = phase, limit_s


async def _bounded(aw: Any, phase: str, limit_s: float) -> Any:
    try:
        return await asyncio.wait_for(aw, max(0.1, limit_s))
    except TimeoutError as exc:
        raise Phase(phase, limit_s) from exc


async def _start(workdir: Path, static: bool, log: Path, init_s: float,
                 wait_ready: bool = True) -> tuple[LanguageClient, int]:
    """A fresh server on stdio, initialized and (``wait_ready``) ready; returns the client and the server's pid.

    Raises:
        Phase: ``initialize`` or ``ready`` did not answer within ``init_s`` seconds (the client is stopped).
    """
    client = LanguageClient("htam-bench-first-profile", "1")
    ready = asyncio.Event()

    @client.feature("htam/status")
    def _status(params: Any) -> None:
        server = params.get("server") if isinstance(params, dict) else getattr(params, "server", None)
        if server == "ready":
            ready.set()

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _create(params: Any) -> None:
        return None

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _diagnostics(params: Any) -> None:
        return None

    env = {**os.environ, "HTAM_CACHE_DIR": str(workdir / "cache"), "HTAM_MEMORY": str(workdir / "mem.sqlite3")}
    await client.start_io(sys.executable, "-c", _SERVER, str(log), env=env)
    pid = client._server.pid  # type: ignore[union-attr]
    try:
        await _bounded(client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(
                general=types.GeneralClientCapabilities(position_encodings=["utf-16"])),
            initialization_options={"memoryPath": str(workdir / "mem.sqlite3"), "static": static})),
            "initialize", init_s)
        client.initialized(types.InitializedParams())
        if wait_ready:
            await _bounded(ready.wait(), "ready", init_s)
    except Phase:
        await _stop(client, pid, [], graceful=False)  # it does not answer: no shutdown request to wait for
        raise
    return client, pid


async def _stop(client: LanguageClient, pid: int, workers: list[int], graceful: bool = True) -> dict[str, Any]:
    """Shut the server down (bounded; skipped when not ``graceful``), then kill it and every process it started
    that is still alive.

    Returns:
        ``{"shutdown": "clean"|"timeout"|"error: ...", "killed": [pids left alive and killed]}``.
    """
    workers = sorted(set(workers) | set(_descendants(pid)))
    how = "clean" if graceful else "killed (not answering)"
    try:
        if graceful:
            await asyncio.wait_for(client.shutdown_async(None), 10)
            client.exit(None)
    except TimeoutError:
        how = "timeout"
    except Exception as exc:  # noqa: BLE001 - a dead server: kill what is left
        how = f"error: {type(exc).__name__}"
    proc = client._server
    if proc is not None and graceful:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 10)
    if any(_alive(p) for p in [pid, *workers]):
        await asyncio.sleep(1.0)  # a worker killed at shutdown may still be on its way out
    killed = _kill_tree([pid, *workers])
    with contextlib.suppress(TimeoutError, Exception):
        await asyncio.wait_for(client.stop(), 5)
    return {"shutdown": how, "killed": killed}


async def _poll(client: LanguageClient, ident: types.TextDocumentIdentifier, pos: types.Position, gpu: bool,
                t0: float, poll_s: float, timeout_s: float, want: set[str]) -> tuple[float | None, str]:
    """Seconds from ``t0`` until the hover shows a stage in ``want`` (``None`` on timeout), and that hover."""
    md = ""
    while time.perf_counter() - t0 < timeout_s:
        try:
            h = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
                text_document=ident, position=pos)), max(0.1, timeout_s - (time.perf_counter() - t0)))
        except TimeoutError:
            break
        md = h.contents.value if h is not None else ""
        if _stage_of(md, gpu) in want:
            return time.perf_counter() - t0, md
        await asyncio.sleep(poll_s)
    return None, md


def _head(md: str) -> str:
    return next((ln for ln in md.splitlines() if ln.startswith("**Profile")), "")


def _tail(path: Path, n: int = 8) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-n:]
    except OSError:
        return []


async def one_repeat(file: str, kernel: str, lang: str, gpu: bool, poll_s: float, timeout_s: float,
                     init_s: float, log_dir: Path, tag: str, say: Any, deadline: float = float("inf"),
                     open_at_start: bool = False) -> dict:
    """One fresh server: didOpen -> first and final profile; on a GPU also a warm ``htam.profile``.

    Every phase is bounded (``initialize``/``ready`` by ``init_s``, the others by ``timeout_s``); a phase that
    does not finish ends the repeat with ``"timeout": PHASE`` in the row instead of hanging; no phase runs past
    ``deadline`` (a ``time.perf_counter()`` value). The server and every process it started are stopped
    (killed when they do not exit) before this returns.
    """

    def lim(cap: float) -> float:
        return max(0.1, min(cap, deadline - time.perf_counter()))

    out: dict[str, Any] = {"kernel": f"{file}:{kernel}", "repeat": tag, "timeout": None, "error": None}
    log = log_dir / f"server-{tag}.log"
    t_rep = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="htam-bench-fp-") as tmp:
        try:
            say(f"{tag}: starting the server")
            client, pid = await _start(Path(tmp), not gpu, log, lim(init_s), wait_ready=not open_at_start)
        except Phase as exc:
            out.update(timeout=exc.phase, error=str(exc), server_log_tail=_tail(log))
            return out
        out["start_s"] = round(time.perf_counter() - t_rep, 3)
        workers: list[int] = []
        try:
            path = SUITE / file
            text = path.read_text()
            uri = path.as_uri()
            ident = types.TextDocumentIdentifier(uri=uri)
            pos = _name_position(text, kernel)
            t0 = time.perf_counter()
            say(f"{tag}: {'initialized' if open_at_start else 'ready'} after {out['start_s']:.1f} s; didOpen")
            client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                uri=uri, language_id=lang, version=1, text=text)))
            first, md1 = await _poll(client, ident, pos, gpu, t0, poll_s, lim(timeout_s),
                                     {"first", "final", "static", "failed"})
            out.update(first_profile_s=first, first_hover_head=_head(md1),
                       start_to_first_s=None if first is None else round(t0 - t_rep + first, 3))
            say(f"{tag}: first profile {'timeout' if first is None else f'{first:.2f} s'}")
            if first is None:
                out["timeout"] = "first_profile"
                return out
            final, md2 = await _poll(client, ident, pos, gpu, t0, poll_s, time.perf_counter() - t0 + lim(timeout_s),
                                     {"final", "static", "failed"})
            out.update(final_stage_s=final, final_hover_head=_head(md2))
            say(f"{tag}: final stage {'timeout' if final is None else f'{final:.2f} s'}")
            if final is None:
                out["timeout"] = "final_stage"
                return out
            if gpu:
                workers = _descendants(pid)
                t1 = time.perf_counter()
                res = await _bounded(client.workspace_execute_command_async(types.ExecuteCommandParams(
                    command="htam.profile", arguments=[{"uri": uri, "kernel": kernel}])), "warm_profile",
                    lim(timeout_s))
                out["warm_profile_s"] = time.perf_counter() - t1
                out["warm_profile_reply"] = res.get("profiles") if isinstance(res, dict) else str(res)
                say(f"{tag}: warm htam.profile {out['warm_profile_s']:.2f} s")
                out["warm_final_s"], _ = await _poll(client, ident, pos, gpu, t1, poll_s,
                                                     time.perf_counter() - t1 + lim(timeout_s),
                                                     {"final", "static", "failed"})
                if out["warm_final_s"] is None:
                    out["timeout"] = "warm_final"
            return out
        except Phase as exc:
            out.update(timeout=exc.phase, error=str(exc))
            return out
        except Exception as exc:  # noqa: BLE001 - one bad repeat is a row, not a lost run
            out["error"] = f"{type(exc).__name__}: {exc}"
            return out
        finally:
            out.update(await _stop(client, pid, workers))
            if out.get("timeout") or out.get("error") or out.get("killed"):
                out["server_log_tail"] = _tail(log)
            out["wall_s"] = round(time.perf_counter() - t_rep, 3)


def _stats(xs: list[float | None]) -> dict[str, Any]:
    ok = [x for x in xs if x is not None]
    if not ok:
        return {"n": 0, "timeouts": len(xs), "median_s": None}
    return {"n": len(ok), "timeouts": len(xs) - len(ok), "median_s": round(statistics.median(ok), 3),
            "min_s": round(min(ok), 3), "max_s": round(max(ok), 3)}


def _markdown(res: dict) -> str:
    lines = [f"# Editor first-profile latency ({res['date']})", "", f"- machine: {res['machine']}",
             f"- GPU: {res['gpu'] or 'none (CPU part)'}", f"- command: `{res['command']}`",
             f"- repeats: {res['repeats']} (a fresh server, empty memory and compile cache each)",
             f"- didOpen: {'right after initialized (--open-at-start)' if res.get('open_at_start') else 'after the server said ready'}",
             f"- target: {TARGET_S:g} s (median)", "",
             "| kernel | metric | median s | min s | max s | n | timeouts | target met |", "|---|---|---|---|---|---|---|---|"]
    for k, entry in res["kernels"].items():
        for metric in ("first_profile_s", "final_stage_s", "start_to_first_s", "warm_profile_s", "warm_final_s"):
            s = entry.get(metric)
            if s is None:
                continue
            targeted = metric in ("first_profile_s", "warm_profile_s")
            met = ("yes" if s["median_s"] is not None and s["median_s"] <= TARGET_S else "no") if targeted else "—"
            lines.append(f"| {k} | {metric} | {s['median_s']} | {s.get('min_s')} | {s.get('max_s')} | {s['n']} | "
                         f"{s['timeouts']} | {met} |")
    if res.get("stopped"):
        lines += ["", f"**Cut short:** {res['stopped']} (wall {res.get('wall_s')} s)."]
    lines += ["", "Hover headers seen (first repeat):", ""]
    for k, entry in res["kernels"].items():
        lines.append(f"- {k}: first `{entry['first_hover_head']}`; final `{entry['final_hover_head']}`")
        for what in ("phase_timeouts", "errors"):
            if entry.get(what):
                lines.append(f"  - {what.replace('_', ' ')}: " + "; ".join(entry[what]))
        if entry.get("killed_after_shutdown"):
            lines.append(f"  - {entry['killed_after_shutdown']} process(es) were still alive after shutdown and "
                         "were killed")
    lines += ["", "first_profile_s: didOpen to the first hover with a profile (CPU: the source-only static stage; "
              "GPU: the timer's stage). final_stage_s: to the last stage (CPU: compiled static, cold compile "
              "cache; GPU: Nsight Compute counters). start_to_first_s: server process launch to that first hover. "
              "warm_profile_s: `htam.profile` reply (stage 1) on a warm "
              "worker with the compile cached; warm_final_s: until its counters' stage lands.", ""]
    return "\n".join(lines)


def summarize(rows: list[dict], gpu: str | None, repeats: int) -> dict[str, Any]:
    """Per kernel: the median, min and max of every ``*_s`` metric over its rows, the timeouts, and the raw rows."""
    res: dict[str, Any] = {"gpu": gpu, "repeats": repeats, "kernels": {}}
    for file, kernel, _ in KERNELS:
        name = f"{file}:{kernel}"
        reps = [r for r in rows if r.get("kernel") == name]
        if not reps:
            continue
        metrics = ["first_profile_s", "final_stage_s", "start_to_first_s"] + (
            ["warm_profile_s", "warm_final_s"] if gpu else [])
        entry: dict[str, Any] = {m: _stats([r.get(m) for r in reps]) for m in metrics}
        entry["first_hover_head"] = next((r["first_hover_head"] for r in reps if r.get("first_hover_head")), "")
        entry["final_hover_head"] = next((r["final_hover_head"] for r in reps if r.get("final_hover_head")), "")
        entry["phase_timeouts"] = [f"{r['repeat']}: {r['timeout']}" for r in reps if r.get("timeout")]
        entry["errors"] = [f"{r['repeat']}: {r['error']}" for r in reps if r.get("error") and not r.get("timeout")]
        entry["killed_after_shutdown"] = sum(len(r.get("killed") or []) for r in reps)
        entry["raw"] = [{m: v for m, v in r.items() if not m.endswith("_head")} for r in reps]
        res["kernels"][name] = entry
    return res


async def run(repeats: int, cpu: bool, poll_s: float, timeout_s: float, init_s: float, max_s: float,
              out: Path, open_at_start: bool = False) -> dict:
    """All kernels, ``repeats`` fresh servers each, the kernels interleaved (repeat 1 of each, then repeat 2 ...)
    so that a run cut short by ``max_s`` still has every kernel. Each row is appended to ``out/rows.jsonl`` as
    it finishes; a progress line per phase goes to stdout (flushed)."""
    gpu = None if cpu else gpu_name()
    t_start = time.perf_counter()
    rows_path = out / "rows.jsonl"
    rows_path.write_text("")
    log_dir = out / "server-logs"
    log_dir.mkdir(exist_ok=True)
    rows: list[dict] = []

    def left() -> float:
        return max_s - (time.perf_counter() - t_start)

    def say(line: str) -> None:
        print(f"[lspgpu {time.perf_counter() - t_start:6.1f}s] {line}", flush=True)

    say(f"GPU: {gpu or 'none (CPU part)'}; {repeats} repeats of {len(KERNELS)} kernels; budget {max_s:.0f} s")
    stopped = None
    for i in range(repeats):
        for file, kernel, lang in KERNELS:
            # a repeat needs its server start plus at least one phase; stop before one cannot fit
            if left() < min(init_s, timeout_s) / 2:
                stopped = f"stopped by --max-seconds {max_s:g} before repeat {i + 1} of {file}"
                break
            tag = f"{Path(file).stem}-{i + 1}"
            row = await one_repeat(file, kernel, lang, gpu is not None, poll_s, timeout_s, init_s, log_dir, tag,
                                   say, deadline=t_start + max_s, open_at_start=open_at_start)
            rows.append(row)
            with rows_path.open("a") as f:
                f.write(json.dumps(row) + "\n")
            say(f"{tag}: row written ({'timeout in ' + row['timeout'] if row.get('timeout') else 'ok'}"
                f"{', killed ' + str(row['killed']) if row.get('killed') else ''})")
        if stopped:
            say(stopped)
            break
    res = summarize(rows, gpu, repeats)
    res["stopped"] = stopped
    res["max_seconds"] = max_s
    res["open_at_start"] = open_at_start
    res["wall_s"] = round(time.perf_counter() - t_start, 1)
    return res


def _interrupt(signum: int, frame: object) -> None:
    """SIGINT handler: raise :class:`KeyboardInterrupt` (see :func:`main`)."""
    raise KeyboardInterrupt


def main() -> int:
    """Parse arguments, run, write ``result.json``, ``result.md`` and ``rows.jsonl`` into ``--out``. Exits 0 also
    when phases timed out or the budget cut the run short (the results say so)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpu", action="store_true", help="the CPU part even with a GPU (static profiles)")
    ap.add_argument("--poll-ms", type=float, default=20.0)
    ap.add_argument("--timeout-s", type=float, default=45.0, help="limit of each phase after the server is ready")
    ap.add_argument("--init-timeout-s", type=float, default=60.0, help="limit of initialize and of ready")
    ap.add_argument("--max-seconds", type=float, default=100.0,
                    help="total budget: no repeat starts after it, and the summary of what was measured is written")
    ap.add_argument("--open-at-start", action="store_true",
                    help="open the file right after initialized, without waiting for the server's ready status")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    # asyncio.run turns SIGINT into a cancellation of the main task, which a client still starting up (pygls's
    # initialize) can swallow: the run then went on as if nothing happened. A handler of our own is left alone by
    # asyncio and raises KeyboardInterrupt wherever the main thread is.
    signal.signal(signal.SIGINT, _interrupt)
    try:
        res = asyncio.run(run(a.repeats, a.cpu, a.poll_ms / 1000.0, a.timeout_s, a.init_timeout_s, a.max_seconds,
                              out, a.open_at_start))
    except KeyboardInterrupt:  # a stage limit's SIGINT: kill what this run started, keep the rows written so far
        killed = _kill_tree(_descendants(os.getpid()))
        rows = [json.loads(ln) for ln in (out / "rows.jsonl").read_text().splitlines() if ln.strip()] \
            if (out / "rows.jsonl").is_file() else []
        res = summarize(rows, None if a.cpu else gpu_name(), a.repeats)
        res["stopped"] = f"interrupted (SIGINT) after {len(rows)} rows; killed {len(killed)} leftover process(es)"
    res.update({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "machine": f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs, "
                           f"load {os.getloadavg()[0]:.1f})",
                "command": " ".join([Path(sys.executable).name, *sys.argv]),
                "versions": {p: version(p) for p in ("pygls", "lsprotocol")}})
    (out / "result.json").write_text(json.dumps(res, indent=2))
    (out / "result.md").write_text(_markdown(res))
    print(_markdown(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
