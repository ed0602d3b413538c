"""Completing a measured-space table where the policies went.

A table built best-first under a candidate budget (:mod:`htam_core.bench.space`) holds the children of the
fastest wins only. A policy whose first win is another one (a second block size, the other grid-stride
variant) then finds none of its next candidates in the table: the replay reports them as
:data:`~htam_core.memory.records.NOT_IN_TABLE`, and every such step spends a trial that a live run would have
measured. The replay then measures the table's coverage as much as the policy.

This module closes that gap from the replays themselves, the way an active benchmark is completed: it reads
the runs of a replay, lists every candidate a policy asked for that the table did not hold (a *miss*: the
candidate's exact text, the table node it was derived from, the step), and writes them as a *fill list*.
``htam bench space --fill LIST`` then measures exactly those candidates on the GPU, as children of their
parents, with the same evaluator as every other node. A second replay over the filled table follows the
same policies further, and any new misses can be filled the same way, until the policies' paths are measured.

Misses are ordered by who asked: the headline policies (HTAM warm and cold, flat memory, random) before the
ablations, then by how many runs asked, then the shallower first, so a fill cut by its time budget has
measured what the targets read.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from htam_core.memory.records import NOT_IN_TABLE
from htam_core.optimize.replay import Table, text_key

__all__ = ["HEADLINE_POLICIES", "FillError", "Miss", "collect_misses", "read_misses", "write_misses"]

#: Policies whose misses are filled first: the ones the issue's targets compare.
HEADLINE_POLICIES = ("htam", "htam-cold", "flat", "random")


class FillError(Exception):
    """A fill list cannot be made or read (no replay runs, unreadable file); the message says what to do."""


@dataclass
class Miss:
    """One candidate a replay asked for and the table did not hold.

    Attributes:
        kernel: the table's kernel id; parent: the table key of the node it was derived from; key: its own key
            (SHA-256 of ``text``); text: the candidate's full file text; depth: its parent's depth + 1.
        strategy, direction, transform: the step that made it.
        asked_by: the policies (replay names) whose runs asked for it; runs: how many runs asked.
    """

    kernel: str
    parent: str
    key: str
    text: str
    depth: int
    strategy: str | None
    direction: str | None
    transform: str | None
    asked_by: list[str] = field(default_factory=list)
    runs: int = 0

    def tier(self) -> int:
        """Fill pass: 0 when a deterministic headline policy (HTAM warm or cold, flat memory) asked, 1 when
        random did, 2 for the ablations alone."""
        asked = set(self.asked_by)
        return 0 if asked & (set(HEADLINE_POLICIES) - {"random"}) else 1 if "random" in asked else 2

    def priority(self) -> tuple[int, int, int]:
        """Sort key, smallest first: asked by a headline policy, by more runs, shallower."""
        return (0 if self.tier() < 2 else 1, -self.runs, self.depth)


def collect_misses(work: str | Path, table: Table) -> list[Miss]:
    """Every candidate the replay runs under ``work`` asked for that ``table`` does not hold, deduplicated.

    Args:
        work: a replay's work folder (``htam bench replay --work``): its ``runs/*/report.json`` and the
            candidate files beside them are read.
        table: the table the replay read; a miss whose parent is not one of its nodes is left out (a live
            run would not have reached it either).

    Returns:
        The misses in fill order (:meth:`Miss.priority`).

    Raises:
        FillError: ``work`` holds no replay runs, or its runs replayed another table (another header line, or
            a run whose start is not a node of ``table``).
    """
    from htam_core.bench.replay import policy_of_run_folder

    reports = sorted(Path(work).glob("runs/*/report.json"))
    if not reports:
        raise FillError(f"{work} holds no replay runs (runs/*/report.json): give the --work folder of a "
                        "finished `htam bench replay`")
    found: dict[tuple[str, str], Miss] = {}
    checked: set[str] = set()
    foreign: list[str] = []
    for rp in reports:
        try:
            rep = json.loads(rp.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a run torn by a crash: the replay reruns it
        task = rep.get("task") or {}
        other = task.get("replay_table")
        if isinstance(other, str) and other not in checked:
            checked.add(other)
            if _other_table(other, table):
                raise FillError(f"the runs under {work} replayed {other}, another table than {table.path}: give "
                                "the --table the replay read, or replay this table first")
        kid = task.get("replay_kernel")
        policy = policy_of_run_folder(rp.parent.name)
        steps = rep.get("steps") or []
        if not kid or policy is None:
            continue
        start = _start_text(rp.parent, task)
        if start is not None and (kid, text_key(start)) not in table.rows:
            foreign.append(f"{kid} ({rp.parent.name})")
            continue
        paths = {s.get("index"): s.get("candidate_path") for s in steps}
        for s in steps:
            if s.get("status") != NOT_IN_TABLE:
                continue
            text = _text(rp.parent, s.get("candidate_path"))
            parent = s.get("parent", "start")
            parent_text = start if parent == "start" else _text(rp.parent, paths.get(parent))
            if text is None or parent_text is None:
                continue
            prow = table.rows.get((kid, text_key(parent_text)))
            key = text_key(text)
            if prow is None or (kid, key) in table.rows:
                continue
            m = found.setdefault((kid, key), Miss(kid, prow["key"], key, text, int(prow.get("depth", 0)) + 1,
                                                  s.get("strategy"), s.get("direction"), s.get("transform")))
            if policy not in m.asked_by:
                m.asked_by.append(policy)
            m.runs += 1
    if foreign:
        raise FillError(f"{len(foreign)} run(s) under {work} started from a kernel that is not a node of "
                        f"{table.path} (first: {foreign[0]}): they replayed another table, or the kernel's file "
                        "changed since; give the --table the replay read, or replay this table first")
    return sorted(found.values(), key=Miss.priority)


def _other_table(path: str, table: Table) -> bool:
    """Whether the table file a replay read (``path``, as its runs recorded it) is another table than ``table``:
    another file whose header line differs. A copy, or the same table grown by a fill since (both keep the
    header), is the same table; a file that is gone cannot be checked and counts as the same."""
    p = Path(path)
    try:
        if p.resolve() == table.path.resolve():
            return False
        with p.open(encoding="utf-8") as fh:
            head = json.loads(fh.readline())
    except (OSError, ValueError):
        return False
    return isinstance(head, dict) and head.get("type") == "header" and head != table.header


def _text(run_dir: Path, path: str | None) -> str | None:
    """A run's candidate file: at its recorded path, else at the same place under ``run_dir`` (a moved work
    folder), or ``None``."""
    if not path:
        return None
    p = Path(path)
    tail = p.parts[-3:] if "candidates" in p.parts else ()
    for q in (p, run_dir.joinpath(*tail) if tail else None):
        if q is not None and q.is_file():
            return q.read_text(encoding="utf-8")
    return None


def _start_text(run_dir: Path, task: dict[str, Any]) -> str | None:
    """The text the run started from: its ``candidates/00-start`` copy, else the kernel's file."""
    name = Path(str(task.get("path", ""))).name
    for q in (run_dir / "candidates" / "00-start" / name, Path(str(task.get("path", "")))):
        if name and q.is_file():
            return q.read_text(encoding="utf-8")
    return None


_STR_FIELDS = ("kernel", "parent", "key", "text")


def _miss(d: Any) -> Miss | None:
    """``d`` as a :class:`Miss`, or ``None`` when it is not one (not an object, a missing or unknown field, a
    field of the wrong type)."""
    names = {f.name for f in fields(Miss)}
    if not isinstance(d, dict) or not set(d) <= names or not {*_STR_FIELDS, "depth"} <= set(d):
        return None
    if not all(isinstance(d[k], str) for k in _STR_FIELDS) or not isinstance(d["depth"], int):
        return None
    if not all(d.get(k) is None or isinstance(d.get(k), str) for k in ("strategy", "direction", "transform")):
        return None
    asked = d.get("asked_by", [])
    if not isinstance(asked, list) or not all(isinstance(a, str) for a in asked) or not isinstance(
            d.get("runs", 0), int):
        return None
    return Miss(**{"strategy": None, "direction": None, "transform": None, **d})


def write_misses(path: str | Path, misses: list[Miss], *, table: str | Path | None = None) -> Path:
    """Write the fill list (JSONL, one :class:`Miss` per line) and return its path.

    Args:
        path: where to write; an existing fill list there is replaced (atomically), anything else is refused.
        misses: the list (:func:`collect_misses`).
        table: the table the list was made from, which ``path`` must not be.

    Raises:
        FillError: ``path`` is ``table``, a folder, or an existing file that is not a fill list (left as it is).
    """
    p = Path(path)
    if table is not None and p.exists() and p.resolve() == Path(table).resolve():
        raise FillError(f"--out {p} is the table itself: writing the fill list there would replace the table; "
                        "give the list another path")
    if p.is_dir():
        raise FillError(f"--out {p} is a folder: give the fill list a file path (e.g. {p / 'fill.jsonl'})")
    if p.exists():
        try:
            read_misses(p)
        except FillError:
            raise FillError(f"--out {p} exists and is not a fill list, and was left as it is: give another path "
                            "or remove the file") from None
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text("".join(json.dumps(asdict(m)) + "\n" for m in misses), encoding="utf-8")
    tmp.replace(p)
    return p


def read_misses(path: str | Path) -> list[Miss]:
    """The fill list at ``path``, in fill order.

    Raises:
        FillError: the file cannot be read, or a line is not a miss (it names the line).
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise FillError(f"cannot read the fill list {path}: {exc}") from exc
    except UnicodeDecodeError:
        raise FillError(f"{path} is not a fill list: it is not UTF-8 text (make the list with "
                        "`htam bench misses`)") from None
    out = []
    for i, ln in enumerate(lines, 1):
        if not ln.strip():
            continue
        try:
            d = json.loads(ln)
        except ValueError:
            d = None
        m = _miss(d)
        if m is None:
            raise FillError(f"{path}:{i}: not a fill-list line (one JSON object per candidate, with its kernel, "
                            "parent, key, text and step); make the list with `htam bench misses`")
        if text_key(m.text) != m.key:
            raise FillError(f"{path}:{i}: the text does not match its key (the file was edited)")
        out.append(m)
    return sorted(out, key=Miss.priority)
