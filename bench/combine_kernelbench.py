"""Combine KernelBench result JSONs of one configuration run over several device calls into one result.

A device call has a time limit, so a level's problems can be split over calls (``HTAM_KB_IDS`` picks the ones
left). This reads the calls' ``*-kernelbench.json`` files (oldest first), keeps each problem's latest record
that ran, recomputes Correct / fast_p / geomean and the torch.compile columns
(:func:`htam_core.bench.kernelbench.combine_runs`), and writes the combined JSON and Markdown.

Run it from the repository root; relative paths are taken from the current directory:

    .venv/bin/python bench/combine_kernelbench.py bench/results/DIR/RUN1-kernelbench.json \
      bench/results/DIR/resume/RUN2-kernelbench.json --out bench/results/DIR/combined

Bad input (a missing or unreadable file, a file that is not a KernelBench result, the same file twice, runs
whose settings differ, an ``--out`` that cannot be written) gives one line on stderr and exit status 2; nothing
is written then.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from htam_core.bench.kernelbench import KernelBenchError, combine_runs  # noqa: E402
from htam_core.bench.report import kernelbench_markdown, write_json  # noqa: E402

PROG = "combine_kernelbench"
# The config settings whose values must agree for runs to be pooled (the ones combine_runs checks).
POOL_KEYS = ("engine", "steps", "timing_trials", "anchors")
_RESULT_HINT = "give a *-kernelbench.json that `htam bench kernelbench` wrote"


class InputError(Exception):
    """Bad input: its message is the one line printed on stderr (what happened, what to do)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors raise :class:`InputError` (one line) instead of printing usage."""

    def error(self, message: str) -> NoReturn:
        """Raise the usage error as one line.

        Raises:
            InputError: always.
        """
        raise InputError(f"{message}; run with --help for usage")


def _json_kind(v: Any) -> str:
    """The JSON name of ``v``'s type (object, array, string, number, true/false, null)."""
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, bool):
        return "true/false"
    if isinstance(v, (int, float)):
        return "a number"
    return "null"


def _not_result(name: str, why: str) -> InputError:
    """The error for a JSON file that is not a KernelBench result file."""
    return InputError(f"{name} is not a KernelBench result file: {why}; {_RESULT_HINT}")


def load_run(name: str) -> tuple[dict[str, Any], str]:
    """Read one KernelBench result file and check its shape.

    Args:
        name: the path as given on the command line (used in messages).

    Returns:
        The parsed document and the SHA-256 hex digest of the file's bytes.

    Raises:
        InputError: the file is missing, a directory, unreadable, not UTF-8, not valid JSON, or JSON that is
            not a KernelBench result (an object with a ``problems`` array of record objects, each with integer
            ``level`` and ``problem_id``, and a ``config`` object).
    """
    p = Path(name)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{name} does not exist (relative paths are taken from the current directory, "
                         f"{Path.cwd()}); check the path") from None
    except IsADirectoryError:
        raise InputError(f"{name} is a directory, not a result file; {_RESULT_HINT}") from None
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror or exc}; check its permissions") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _not_result(name, "it is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{name} is not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg}); "
                         f"{_RESULT_HINT}") from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{name} is not valid JSON ({exc}); {_RESULT_HINT}") from None
    if not isinstance(doc, dict):
        raise _not_result(name, f"it holds {_json_kind(doc)}, not an object with 'problems' and 'config'")
    if not isinstance(doc.get("problems"), list):
        raise _not_result(name, "it has no 'problems' array" if "problems" not in doc
                          else f"its 'problems' is {_json_kind(doc['problems'])}, not an array")
    if not isinstance(doc.get("config"), dict):
        raise _not_result(name, "it has no 'config' object" if "config" not in doc
                          else f"its 'config' is {_json_kind(doc['config'])}, not an object")
    if doc.get("environment") is not None and not isinstance(doc["environment"], dict):
        raise _not_result(name, f"its 'environment' is {_json_kind(doc['environment'])}, not an object")
    wall = doc.get("wall_s")
    if wall is not None and (isinstance(wall, bool) or not isinstance(wall, (int, float))):
        raise _not_result(name, f"its 'wall_s' is {_json_kind(wall)}, not a number")
    for i, r in enumerate(doc["problems"]):
        if not isinstance(r, dict):
            raise _not_result(name, f"problems[{i}] is {_json_kind(r)}, not a record object")
        for k in ("level", "problem_id"):
            if isinstance(r.get(k), bool) or not isinstance(r.get(k), int):
                raise _not_result(name, f"problems[{i}] has no integer '{k}'")
    return doc, hashlib.sha256(raw).hexdigest()


def check_poolable(names: list[str], docs: list[dict[str, Any]]) -> None:
    """Refuse runs whose figures cannot be pooled, naming the files and only the settings that differ.

    Args:
        names: the files as given, in the order of ``docs``.
        docs: their documents (checked by :func:`load_run`).

    Raises:
        InputError: a measured run beside a static one, or runs whose ``config`` values of :data:`POOL_KEYS`
            differ.
    """
    measured = [n for n, d in zip(names, docs, strict=True) if d.get("measured")]
    static = [n for n, d in zip(names, docs, strict=True) if not d.get("measured")]
    if measured and static:
        raise InputError(f"cannot combine a measured run ({', '.join(measured)}) with a static one "
                         f"({', '.join(static)}): combine only runs measured on a GPU, or only static runs")
    parts = []
    for k in POOL_KEYS:
        by_value: dict[str, list[str]] = {}
        for n, d in zip(names, docs, strict=True):
            by_value.setdefault(json.dumps(d["config"].get(k), default=str), []).append(n)
        if len(by_value) > 1:
            parts.append(f"{k} (" + "; ".join(f"{v} in {', '.join(ns)}" for v, ns in by_value.items()) + ")")
    if parts:
        raise InputError(f"the runs differ in {', '.join(parts)}: their figures cannot be pooled; "
                         "combine only runs made with the same settings")


def output_paths(out: str, inputs: dict[Path, str]) -> tuple[Path, Path]:
    """The JSON and Markdown paths of ``--out`` (its suffix replaced), checked before anything is written.

    Args:
        out: ``--out`` as given.
        inputs: the input files' resolved paths, mapped to the names given.

    Returns:
        ``(<out>.json, <out>.md)``.

    Raises:
        InputError: ``out`` has no file name, is a directory, would overwrite an input, or one of the two
            outputs is a directory or lies under a file.
    """
    hint = "give an output path without suffix, e.g. bench/results/DIR/combined"
    o = Path(out)
    if not out.strip() or o.name in ("", ".", ".."):
        raise InputError(f"--out {out!r} has no file name; {hint}")
    if o.is_dir():
        raise InputError(f"--out {out} is a directory; give a path inside it without suffix, "
                         f"e.g. {o / 'combined'}")
    try:
        paths = (o.with_suffix(".json"), o.with_suffix(".md"))
    except ValueError:
        raise InputError(f"--out {out!r} is not a usable file name; {hint}") from None
    for p in paths:
        if p.is_dir():
            raise InputError(f"cannot write {p}: it is a directory; choose another --out")
        if p.resolve() in inputs:
            raise InputError(f"--out {out} would overwrite the input {inputs[p.resolve()]}; "
                             "choose another --out")
    for parent in paths[0].parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(f"cannot write {paths[0]}: {parent} is a file, not a directory; "
                                 "choose another --out")
            break
    return paths


def write_outputs(doc: dict[str, Any], md: str, json_path: Path, md_path: Path) -> None:
    """Write both outputs to temporary files beside them, then rename each over its target: a failure while
    writing (permissions, disk full) leaves both targets as they were, never half written.

    Args:
        doc: the combined document.
        md: its Markdown.
        json_path: where the JSON goes.
        md_path: where the Markdown goes (same directory as ``json_path``).

    Raises:
        InputError: the directory cannot be made or written (permissions, read-only file system, disk full).
    """
    tmps = [p.with_name(f".{p.name}.{os.getpid()}.tmp") for p in (json_path, md_path)]
    try:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        write_json(doc, tmps[0])
        tmps[1].write_text(md, encoding="utf-8")
        os.replace(tmps[0], json_path)
        os.replace(tmps[1], md_path)
    except OSError as exc:
        raise InputError(f"cannot write {json_path}: {exc.strerror or exc}; "
                         "choose an --out in a writable directory") from None
    finally:
        for t in tmps:
            t.unlink(missing_ok=True)


def combine(argv: list[str] | None = None) -> str:
    """Parse the arguments, check every input and ``--out``, combine, write ``<out>.json`` and ``<out>.md``.

    Args:
        argv: the command-line arguments (``sys.argv[1:]`` when None).

    Returns:
        The line to print on success.

    Raises:
        InputError: any bad input (see the module docstring); nothing has been written then.
    """
    ap = _Parser(prog="combine_kernelbench.py", description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="result JSON files (*-kernelbench.json), oldest first")
    ap.add_argument("--out", required=True, help="output path without suffix (writes <out>.json and <out>.md)")
    a = ap.parse_args(argv)
    seen: dict[Path, str] = {}
    for name in a.runs:
        r = Path(name).resolve()
        if r in seen:
            what = "is given twice" if seen[r] == name else f"is the same file as {seen[r]}"
            raise InputError(f"{name} {what}; give each call's result file once")
        seen[r] = name
    json_path, md_path = output_paths(a.out, seen)
    docs, digests = [], {}
    for name in a.runs:
        doc, digest = load_run(name)
        if digest in digests:
            raise InputError(f"{name} has the same content as {digests[digest]} (sha256 {digest[:12]}): "
                             "a copy of one call's result; give each call's result file once")
        digests[digest] = name
        docs.append(doc)
    check_poolable(a.runs, docs)
    try:
        doc = combine_runs(docs)
        md = kernelbench_markdown(doc)
    except KernelBenchError as exc:
        raise InputError(str(exc)) from None
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        raise InputError(f"the runs could not be combined ({type(exc).__name__}: {exc}); check that each input "
                         f"is an unedited *-kernelbench.json") from None
    replaced = json_path.exists() or md_path.exists()
    write_outputs(doc, md, json_path, md_path)
    return (f"combined {len(doc['problems'])} problems: {json_path}, {md_path}"
            + (" (replaced the earlier ones)" if replaced else ""))


def main(argv: list[str] | None = None) -> int:
    """Run :func:`combine`; print its line and return 0, or print one line on stderr and return 2 on bad
    input (a traceback is never shown for bad input)."""
    try:
        line = combine(argv)
    except InputError as exc:
        print(f"{PROG}: " + " ".join(str(exc).split()), file=sys.stderr)
        return 2
    print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
