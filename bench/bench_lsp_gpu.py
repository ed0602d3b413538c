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
* GPU only, ``warm_profile_s``: ``htam.profile`` on the same server after the first profile finished (warm
  worker, compile cached, kernel unchanged): the command answers with stage 1; ``warm_final_s``: until the
  counters' stage lands.

Targets (issue 14): first static profile <= 1 s on a CPU (median, cold compile cache); warm ``htam.profile``
<= 1 s on a GPU.

Run: ``python bench/bench_lsp_gpu.py --out bench/results/lsp-first-profile-<machine>-<date> [--repeats 5]``
(the GPU part runs when ``nvidia-smi`` finds a GPU; ``--cpu`` forces the CPU part). Writes ``result.json`` and
``result.md`` (machine, date, command) into the ``--out`` folder.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
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


async def _start(workdir: Path, static: bool) -> tuple[LanguageClient, asyncio.Event]:
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

    env = {**os.environ, "HTAM_CACHE_DIR": str(workdir / "cache"), "HTAM_MEMORY": str(workdir / "mem.sqlite3")}
    await client.start_io(sys.executable, "-m", "htam_server", env=env)
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(general=types.GeneralClientCapabilities(position_encodings=["utf-16"])),
        initialization_options={"memoryPath": str(workdir / "mem.sqlite3"), "static": static}))
    client.initialized(types.InitializedParams())
    await asyncio.wait_for(ready.wait(), 180)
    return client, ready


async def _poll(client: LanguageClient, ident: types.TextDocumentIdentifier, pos: types.Position, gpu: bool,
                t0: float, poll_s: float, timeout_s: float, want: set[str]) -> tuple[float | None, str]:
    """Seconds from ``t0`` until the hover shows a stage in ``want`` (``None`` on timeout), and that hover."""
    md = ""
    while time.perf_counter() - t0 < timeout_s:
        h = await client.text_document_hover_async(types.HoverParams(text_document=ident, position=pos))
        md = h.contents.value if h is not None else ""
        if _stage_of(md, gpu) in want:
            return time.perf_counter() - t0, md
        await asyncio.sleep(poll_s)
    return None, md


async def one_repeat(file: str, kernel: str, lang: str, gpu: bool, poll_s: float, timeout_s: float) -> dict:
    """One fresh server: didOpen -> first and final profile; on a GPU also a warm ``htam.profile``."""
    with tempfile.TemporaryDirectory(prefix="htam-bench-fp-") as tmp:
        client, _ = await _start(Path(tmp), not gpu)
        try:
            path = SUITE / file
            text = path.read_text()
            uri = path.as_uri()
            ident = types.TextDocumentIdentifier(uri=uri)
            pos = _name_position(text, kernel)
            t0 = time.perf_counter()
            client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                uri=uri, language_id=lang, version=1, text=text)))
            first, md1 = await _poll(client, ident, pos, gpu, t0, poll_s, timeout_s, {"first", "final", "static",
                                                                                      "failed"})
            final, md2 = await _poll(client, ident, pos, gpu, t0, poll_s, timeout_s, {"final", "static", "failed"})
            out: dict[str, Any] = {"first_profile_s": first, "final_stage_s": final,
                                   "first_hover_head": next((ln for ln in md1.splitlines()
                                                             if ln.startswith("**Profile")), ""),
                                   "final_hover_head": next((ln for ln in md2.splitlines()
                                                             if ln.startswith("**Profile")), "")}
            if gpu:
                t1 = time.perf_counter()
                res = await client.workspace_execute_command_async(types.ExecuteCommandParams(
                    command="htam.profile", arguments=[{"uri": uri, "kernel": kernel}]))
                out["warm_profile_s"] = time.perf_counter() - t1
                out["warm_profile_reply"] = res.get("profiles") if isinstance(res, dict) else str(res)
                out["warm_final_s"], _ = await _poll(client, ident, pos, gpu, t1, poll_s, timeout_s,
                                                     {"final", "static", "failed"})
            return out
        finally:
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()


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
             f"- target: {TARGET_S:g} s (median)", "",
             "| kernel | metric | median s | min s | max s | n | timeouts | target met |", "|---|---|---|---|---|---|---|---|"]
    for k, entry in res["kernels"].items():
        for metric in ("first_profile_s", "final_stage_s", "warm_profile_s", "warm_final_s"):
            s = entry.get(metric)
            if s is None:
                continue
            targeted = metric in ("first_profile_s", "warm_profile_s")
            met = ("yes" if s["median_s"] is not None and s["median_s"] <= TARGET_S else "no") if targeted else "—"
            lines.append(f"| {k} | {metric} | {s['median_s']} | {s.get('min_s')} | {s.get('max_s')} | {s['n']} | "
                         f"{s['timeouts']} | {met} |")
    lines += ["", "Hover headers seen (first repeat):", ""]
    for k, entry in res["kernels"].items():
        lines.append(f"- {k}: first `{entry['first_hover_head']}`; final `{entry['final_hover_head']}`")
    lines += ["", "first_profile_s: didOpen to the first hover with a profile (CPU: the source-only static stage; "
              "GPU: the timer's stage). final_stage_s: to the last stage (CPU: compiled static, cold compile "
              "cache; GPU: Nsight Compute counters). warm_profile_s: `htam.profile` reply (stage 1) on a warm "
              "worker with the compile cached; warm_final_s: until its counters' stage lands.", ""]
    return "\n".join(lines)


async def run(repeats: int, cpu: bool, poll_s: float, timeout_s: float) -> dict:
    """All kernels, ``repeats`` fresh servers each."""
    gpu = None if cpu else gpu_name()
    res: dict[str, Any] = {"gpu": gpu, "repeats": repeats, "kernels": {}}
    for file, kernel, lang in KERNELS:
        reps = [await one_repeat(file, kernel, lang, gpu is not None, poll_s, timeout_s) for _ in range(repeats)]
        entry: dict[str, Any] = {m: _stats([r.get(m) for r in reps]) for m in reps[0] if m.endswith("_s")}
        entry["first_hover_head"], entry["final_hover_head"] = reps[0]["first_hover_head"], reps[0]["final_hover_head"]
        entry["raw"] = [{m: v for m, v in r.items() if not m.endswith("_head")} for r in reps]
        res["kernels"][f"{file}:{kernel}"] = entry
    return res


def main() -> int:
    """Parse arguments, run, write ``result.json`` and ``result.md`` into ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpu", action="store_true", help="the CPU part even with a GPU (static profiles)")
    ap.add_argument("--poll-ms", type=float, default=20.0)
    ap.add_argument("--timeout-s", type=float, default=120.0)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    res = asyncio.run(run(a.repeats, a.cpu, a.poll_ms / 1000.0, a.timeout_s))
    res.update({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "machine": f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs, "
                           f"load {os.getloadavg()[0]:.1f})",
                "command": " ".join([Path(sys.executable).name, *sys.argv]),
                "versions": {p: version(p) for p in ("pygls", "lsprotocol")}})
    (out / "result.json").write_text(json.dumps(res, indent=2))
    (out / "result.md").write_text(_markdown(res))
    print(_markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
