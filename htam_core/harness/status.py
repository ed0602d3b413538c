"""What the editor shows and offers about a kernel's harness: where it came from (one line), what to add when
there is none, and the inferred table to save.

:func:`harness_status` runs :func:`htam_core.harness.find_harness` (an inferred Python harness records the
file's ``__main__`` block or tests in a child process: call this in a helper process, never in the server's)
and reduces its answer to plain, picklable data:

* ``origin``: ``"htam.toml"``, ``"inferred from __main__"``, ``"inferred from a test"``, ``"inferred from
  main()"``, ``"KernelBench pair"``, ``"main() run whole"`` (timed, not checked), ``"template"`` (none: the
  template is offered) or ``"error"`` (a broken ``htam.toml``: the message names the key, file and line);
* ``line``: the one line the hover shows (:meth:`Harness.description`, or the error);
* ``save_text``: for an inferred harness, the fully filled-in ``[kernel.<name>]`` table
  (:func:`htam_core.harness.toml_render.render_toml`) that *Save the inferred harness to htam.toml* appends.

The save rule: the action only ever **adds** a new ``[kernel.<name>]`` table (to the ``htam.toml`` beside the
kernel's file, created when missing); it is not offered when that ``htam.toml`` already has a table of this
name (another file's kernel of the same name), does not parse, or cannot be read, so an existing section is
never rewritten without the user editing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htam_core.harness.base import Harness, HarnessError
from htam_core.harness.find import find_harness
from htam_core.harness.spec import SPEC_FILENAME, load_toml
from htam_core.harness.template import write_template
from htam_core.harness.toml_render import render_toml
from htam_core.source import SourceError, load


@dataclass(frozen=True)
class HarnessStatus:
    """A kernel's harness as the editor sees it (plain data; see the module docstring).

    Attributes:
        origin: where the harness came from (one of the module docstring's words).
        line: one line for the hover, never empty.
        snippet: the template to add when there is no harness (``origin == "template"``), or when a ``.cu``
            program's ``main()`` is run whole because its launch could not be inferred; else ``None``.
        save_text: the inferred table to append to ``htam.toml``, or ``None`` when nothing may be saved.
        spec_path: the ``htam.toml`` that ``snippet``/``save_text`` go into.
        message: the finder's full message when there is no harness (or it is broken), else ``""``.
    """

    origin: str
    line: str
    snippet: str | None = None
    save_text: str | None = None
    spec_path: str | None = None
    message: str = ""


def origin_of(h: Harness) -> str:
    """The short origin word of a found harness (``"htam.toml"``, ``"inferred from a test"``, ...)."""
    if h.traits.origin is not None:
        return h.traits.origin
    src = h.source or ""
    if src.startswith("inferred from main()"):
        return "inferred from main()"
    if src.startswith("inferred from pytest"):
        return "inferred from a test"
    if src.startswith("inferred from __main__"):
        return "inferred from __main__"
    return h.kind


def _spec_has(spec: Path, kernel: str) -> bool | None:
    """Whether ``spec`` has a ``[kernel.<kernel>]`` table; ``None`` when it cannot be read or parsed."""
    if not spec.is_file():
        return False
    try:
        tables = load_toml(spec).get("kernel") or {}
    except HarnessError:
        return None
    return kernel in tables if isinstance(tables, dict) else None


def saveable_table(h: Harness) -> tuple[str, Path] | None:
    """``(table text, htam.toml path)`` for *Save the inferred harness*, or ``None`` when it may not be saved
    (not inferred, or the ``htam.toml`` already names the kernel or is broken: see the module docstring)."""
    if not h.traits.inferred:
        return None
    spec = Path(h.origin_path or h.path).parent / SPEC_FILENAME
    if _spec_has(spec, h.kernel) is not False:
        return None
    try:
        return render_toml(h), spec
    except HarnessError:
        return None


def harness_status(path: str, kernel: str, model: Any = None) -> HarnessStatus:
    """The :class:`HarnessStatus` of ``kernel`` in ``path`` (see the module docstring). Never raises."""
    try:
        h = find_harness(path, kernel, model)
    except HarnessError as exc:
        msg = exc.message.strip() or f"no harness for {kernel} (the finder gave no reason)"
        if exc.snippet and exc.path:
            return HarnessStatus("template", f"none — {msg.split(' Add a [kernel.')[0]}", snippet=exc.snippet,
                                 spec_path=exc.path, message=msg)
        return HarnessStatus("error", msg, message=msg)
    except Exception as exc:  # noqa: BLE001 - a finder bug must not break the hover or the action list
        return HarnessStatus("error", f"the harness finder failed ({type(exc).__name__}: {exc})",
                             message=str(exc))
    save = saveable_table(h)
    origin = origin_of(h)
    line = h.description()
    if not line.startswith(origin.split(" ")[0]):
        line = f"{origin}: {line}"
    template = _main_template(h, model)
    if template is not None:  # main() runs whole, unchecked: a table (a host launcher's, when there is one) helps
        return HarnessStatus(origin, line, snippet=template[0], spec_path=str(template[1]))
    return HarnessStatus(origin, line, save_text=save[0] if save else None,
                         spec_path=str(save[1]) if save else None)


def _main_template(h: Harness, model: Any) -> tuple[str, Path] | None:
    """``(template, htam.toml path)`` for a ``.cu`` program whose ``main()`` is run whole because its launch
    could not be inferred (and no program arguments were given), when ``htam.toml`` has no table for the
    kernel: the template (:func:`htam_core.harness.template.write_template`, ``launcher = "<host
    function>"`` when one launches the kernel) gives it a checked harness. ``None`` otherwise."""
    if not h.traits.whole_program or h.program_args or not any(n.startswith("no harness inferred") for n in h.notes):
        return None
    spec = Path(h.path).parent / SPEC_FILENAME
    if _spec_has(spec, h.kernel) is not False:
        return None
    try:
        m = model if model is not None else load(h.path)
        return write_template(m, m.kernel(h.kernel)), spec
    except (KeyError, OSError, ValueError, SourceError):
        return None
