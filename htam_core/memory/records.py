"""Records, outcomes and the running statistics of HTG nodes and edges.

A record is one applied step: (prefix, state, step, outcome, kernel fingerprint, device, time). Node and
edge statistics are running summaries of the records (count, wins, failures, and the mean and variance of
the step's *value* by Welford's online algorithm), plus when the node or edge was last seen and a
when/why/risk note.

The value of an outcome (our concrete design, used for both the statistics and transition attention):

* correct and measured with a speedup ``x > 0``: ``ln(x)``; but a ``neutral`` outcome (a gain inside the
  measured spread: noise, see :mod:`htam_core.measure.stats`) is ``0.0``: the memory learns no gain from noise;
* ``incorrect``: :data:`PENALTY_INCORRECT` (like a 2x slowdown: a wrong kernel is worse than a slow one);
* ``failed`` (did not compile or crashed): :data:`PENALTY_FAILED`;
* correct but not measured: no value (it counts as a trial, not as evidence of speed).

An *endpoint fault* (:data:`ENDPOINT_FAULT`: the LLM endpoint timed out, failed, or replied without code)
is an outcome of the endpoint, not of the strategy that was asked for: it is never an :class:`Outcome`,
so it can never enter the records the ranker learns from (:class:`Outcome` refuses the status).
"""

from __future__ import annotations

import math
import uuid
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from htam_core.memory.knowledge import KnowledgeBase

__all__ = ["MAX_ID_CHARS", "MAX_NOTE_CHARS", "MAX_PREFIX", "MAX_STATE_KEYS", "ENDPOINT_FAULT", "NOT_IN_TABLE", "NOT_LEARNED", "STATUSES", "PENALTY_INCORRECT", "PENALTY_FAILED", "Outcome", "Record", "Stats", "outcome_value",
           "value_of"]

#: Outcome statuses.
STATUSES = ("win", "loss", "neutral", "incorrect", "failed")
#: Step status of an LLM endpoint fault (deadline passed, HTTP error, refused connection, malformed reply, reply
#: without code): no candidate was produced, so nothing is known about the strategy.
ENDPOINT_FAULT = "endpoint_fault"
#: Step status of a replayed candidate that the measured-space table does not hold (:mod:`htam_core.optimize.replay`):
#: it was never measured, so nothing is known about the strategy.
NOT_IN_TABLE = "not_in_table"
#: Step statuses that are never recorded in the memory (the optimize loop skips them; :class:`Outcome` refuses them).
NOT_LEARNED = (ENDPOINT_FAULT, NOT_IN_TABLE)
#: Longest id-like string a record may hold (step, direction, prefix entries, uid, fingerprint, device, host,
#: gpu, tag, variant, state keys), in characters. htam writes at most a few hundred (a fingerprint is a URL,
#: a path and a kernel name); the bound keeps an imported file from growing the store without limit.
MAX_ID_CHARS = 4096
#: Longest outcome note, in characters (htam writes at most 300).
MAX_NOTE_CHARS = 4096
#: Most entries of a record's prefix (htam writes the last few steps) and keys of its state (htam writes a few
#: dozen features).
MAX_PREFIX, MAX_STATE_KEYS = 64, 1024
#: Value of an incorrect result, in log-speedup units (ln 0.5).
PENALTY_INCORRECT = math.log(0.5)
#: Value of a failed step (compile error, crash, timeout), in log-speedup units (ln 0.75).
PENALTY_FAILED = math.log(0.75)


@dataclass(frozen=True)
class Outcome:
    """What happened when a step was applied.

    Attributes:
        speedup: new time / old time inverted (``old_ms / new_ms``; 1.25 = 25% faster), or ``None`` when
            not measured.
        correct: the result matched the reference.
        measured: the speedup was measured on a GPU.
        status: ``"win" | "loss" | "neutral" | "incorrect" | "failed"``.
        note: free text (why it won or failed).
        spread: the measured relative spread of the speedup (0.02 = 2 %; a gain inside it is ``neutral``, see
            :mod:`htam_core.measure.stats`), or ``None`` when not measured (and in records older than it).

    Raises:
        ValueError: unknown status (an :data:`ENDPOINT_FAULT` included), a speedup that is not a finite
            positive number, or a negative spread.
    """

    speedup: float | None
    correct: bool
    measured: bool
    status: str
    note: str = ""
    spread: float | None = None

    def __post_init__(self) -> None:
        if self.status in NOT_LEARNED:
            raise ValueError(f"{self.status!r} is a fault of the LLM endpoint, not an outcome of the strategy: "
                             "it is never recorded in the memory")
        if self.status not in STATUSES:
            raise ValueError(f"unknown outcome status {self.status!r}; expected one of {', '.join(STATUSES)}")
        if self.speedup is not None and not (math.isfinite(self.speedup) and self.speedup > 0):
            raise ValueError(f"speedup must be a finite positive number or None, got {self.speedup!r}")
        if self.spread is not None and not (math.isfinite(self.spread) and self.spread >= 0):
            raise ValueError(f"spread must be a finite non-negative number or None, got {self.spread!r}")

    @property
    def is_failure(self) -> bool:
        """``incorrect`` or ``failed``."""
        return self.status in ("incorrect", "failed")


def value_of(speedup: float | None, correct: bool, measured: bool, status: str) -> float | None:
    """The value ``v`` of an outcome given as its fields (see :func:`outcome_value`)."""
    if status == "incorrect" or not correct and status != "failed":
        return PENALTY_INCORRECT
    if status == "failed":
        return PENALTY_FAILED
    if measured and speedup is not None and speedup > 0:
        return 0.0 if status == "neutral" else math.log(speedup)
    return None


def outcome_value(outcome: Outcome) -> float | None:
    """The value ``v`` of an outcome in log-speedup units, or ``None`` (see module docstring)."""
    return value_of(outcome.speedup, outcome.correct, outcome.measured, outcome.status)


@dataclass(frozen=True)
class Record:
    """One stored transition.

    Attributes:
        prefix: the last k strategy ids applied before this step, oldest first.
        state: the state vector (see :mod:`htam_core.memory.features`).
        step: the strategy id applied.
        direction: the direction of ``step`` when it was recorded.
        outcome: what happened.
        fingerprint: a stable hash of the kernel source (groups records per kernel).
        device: the device name, or the static target.
        time: seconds since the epoch.
        uid: globally unique id (import deduplicates on it).
        host: the machine that recorded it (``platform.node()``), or ``None`` (records older than schema 3).
        gpu: the GPU model it was measured on (``"NVIDIA H200"``), or ``None`` in static mode and in older records;
            the ranker can weight records of the GPU model it ranks for higher (``RankerConfig.same_gpu_weight``).
        tag: a user tag (``$HTAM_MEMORY_TAG``, e.g. who ran it), or ``None``.
        variant: which candidate of the step it was, as :func:`htam_core.memory.variants.variant_key` of the
            candidate's parameters (``'{"block":[256]}'``), or ``None`` (an LLM candidate, records older than
            schema 4); the ranker credits variants by it (``RankerConfig.variants``).
    """

    prefix: tuple[str, ...]
    state: dict[str, float]
    step: str
    direction: str
    outcome: Outcome
    fingerprint: str
    device: str
    time: float
    uid: str = field(default_factory=lambda: uuid.uuid4().hex)
    host: str | None = None
    gpu: str | None = None
    tag: str | None = None
    variant: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form used by export/import."""
        return {"uid": self.uid, "time": self.time, "prefix": list(self.prefix), "state": dict(self.state),
                "step": self.step, "direction": self.direction, "outcome": asdict(self.outcome),
                "fingerprint": self.fingerprint, "device": self.device, "host": self.host, "gpu": self.gpu,
                "tag": self.tag, "variant": self.variant}

    @classmethod
    def from_json(cls, d: Any) -> Record:
        """Inverse of :meth:`to_json`, validating every field.

        Raises:
            ValueError: a missing field, a field of the wrong type, or a number that is not finite (NaN and
                infinities are refused: a record must mean something). The message names the field.
        """
        if not isinstance(d, dict):
            raise ValueError(f"a record must be an object, got {type(d).__name__}")
        o = _field(d, "outcome", dict)
        speedup = o.get("speedup")
        if speedup is not None:
            speedup = _finite("outcome.speedup", speedup)
        note = o.get("note") or ""
        if not isinstance(note, str):
            raise ValueError(f"outcome.note must be a string, got {note!r}"[:200])
        outcome = Outcome(speedup, _field(o, "correct", bool, "outcome."), _field(o, "measured", bool, "outcome."),
                          _text("outcome.status", _field(o, "status", str, "outcome.")),
                          _text("outcome.note", note, MAX_NOTE_CHARS),
                          None if o.get("spread") is None else _finite("outcome.spread", o["spread"]))
        prefix = _field(d, "prefix", list)
        if not all(isinstance(p, str) for p in prefix):
            raise ValueError("prefix must be a list of strategy ids (strings)")
        if len(prefix) > MAX_PREFIX:
            raise ValueError(f"prefix has {len(prefix)} steps, more than {MAX_PREFIX}")
        raw_state = _field(d, "state", dict)
        if len(raw_state) > MAX_STATE_KEYS:
            raise ValueError(f"state has {len(raw_state)} keys, more than {MAX_STATE_KEYS}")
        state = {_text("a state key", str(k)): _finite(f"state.{k}"[:100], v) for k, v in raw_state.items()}
        return cls(tuple(_text("prefix", p) for p in prefix), state, _text("step", _field(d, "step", str)),
                   _text("direction", _field(d, "direction", str)), outcome,
                   _text("fingerprint", _field(d, "fingerprint", str)), _text("device", _field(d, "device", str)),
                   _finite("time", d.get("time")), _text("uid", _field(d, "uid", str)),
                   *(_optional(d, k) for k in ("host", "gpu", "tag", "variant")))

    def check_names(self, kb: KnowledgeBase) -> None:
        """Check that the step, the direction and every prefix entry are ids of the knowledge base ``kb``.

        A record of another knowledge base cannot be ranked here (the ranker keys its statistics by these
        ids), so an import refuses it rather than storing names nothing reads.

        Raises:
            ValueError: the first unknown id, named with its field.
        """
        if not kb.has_strategy(self.step):
            raise ValueError(f"step {_shown(self.step)} is not a strategy of the knowledge base v{kb.version}")
        if not kb.has_direction(self.direction):
            raise ValueError(f"direction {_shown(self.direction)} is not a direction of the knowledge base "
                             f"v{kb.version}")
        for p in self.prefix:
            if not kb.has_strategy(p):
                raise ValueError(f"prefix step {_shown(p)} is not a strategy of the knowledge base v{kb.version}")


def _shown(text: str) -> str:
    """``text`` quoted for a message, cut to 60 characters."""
    return repr(text) if len(text) <= 60 else repr(text[:60]) + "..."


def _text(name: str, value: str, limit: int = MAX_ID_CHARS) -> str:
    """``value`` when it is at most ``limit`` characters and encodes as UTF-8 (a JSON ``\\ud800`` escape
    decodes to a lone surrogate, which no UTF-8 file or SQLite text can hold).

    Raises:
        ValueError: too long, or a lone surrogate; the message names the field.
    """
    if len(value) > limit:
        raise ValueError(f"{name} is {len(value):,} characters long, more than {limit:,}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{name} holds a lone UTF-16 surrogate (\\u{ord(value[exc.start]):04x} at character "
                         f"{exc.start}), which is not text") from None
    return value


def _optional(d: dict[str, Any], name: str) -> str | None:
    """``d[name]`` when present and not null (then it must be a string), else ``None`` (older exports)."""
    value = d.get(name)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{name} must be a string or null, got {value!r}"[:200])
    return None if value is None else _text(name, value)


def _field(d: dict[str, Any], name: str, kind: type, where: str = "") -> Any:
    """``d[name]``, which must exist and be of ``kind``. Raises ValueError naming ``where + name``."""
    if name not in d:
        raise ValueError(f"missing field {where}{name}")
    value = d[name]
    if not isinstance(value, kind) or kind is not bool and isinstance(value, bool):
        raise ValueError(f"{where}{name} must be {_KIND_NAMES.get(kind, kind.__name__)}, got {value!r}"[:200])
    return value


_KIND_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "true or false"}


def _finite(name: str, value: Any) -> float:
    """``value`` as a finite float. Raises ValueError naming the field for non-numbers, NaN and infinities."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}"[:200])
    if not math.isfinite(value):
        spelled = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
        raise ValueError(f"{name} is {spelled}: numbers must be finite")
    return float(value)


@dataclass
class Stats:
    """Running statistics of one node or edge.

    Attributes:
        count: trials.
        wins: outcomes with status ``win``.
        failures: ``incorrect`` or ``failed`` outcomes.
        n_values: trials that have a value (see :func:`outcome_value`).
        mean, m2: Welford mean and sum of squared deviations of the values.
        last_seen: time of the latest trial (epoch seconds), or ``None``.
        note_when, note_why, note_risk: the note: the state class in which it was last tried, the latest
            outcome note, the latest failure note.
    """

    count: int = 0
    wins: int = 0
    failures: int = 0
    n_values: int = 0
    mean: float = 0.0
    m2: float = 0.0
    last_seen: float | None = None
    note_when: str = ""
    note_why: str = ""
    note_risk: str = ""

    @property
    def variance(self) -> float | None:
        """Sample variance of the values, or ``None`` with fewer than two."""
        return self.m2 / (self.n_values - 1) if self.n_values > 1 else None

    def update(self, outcome: Outcome, value: float | None, time: float, when: str) -> None:
        """Add one trial (Welford's update for the value)."""
        self.count += 1
        self.wins += outcome.status == "win"
        self.failures += outcome.is_failure
        if value is not None:
            self.n_values += 1
            delta = value - self.mean
            self.mean += delta / self.n_values
            self.m2 += delta * (value - self.mean)
        self.last_seen = time if self.last_seen is None else max(self.last_seen, time)
        self.note_when = when
        if outcome.note:
            self.note_why = outcome.note
            if outcome.is_failure:
                self.note_risk = outcome.note

    def merged(self, other: Stats) -> Stats:
        """The statistics of both sets of trials (Chan et al.'s parallel combination of mean and M2)."""
        n = self.n_values + other.n_values
        if n == 0:
            mean, m2 = 0.0, 0.0
        else:
            delta = other.mean - self.mean
            mean = self.mean + delta * other.n_values / n
            m2 = self.m2 + other.m2 + delta * delta * self.n_values * other.n_values / n
        newer = other if (other.last_seen or 0) >= (self.last_seen or 0) else self
        seen = [t for t in (self.last_seen, other.last_seen) if t is not None]
        return Stats(self.count + other.count, self.wins + other.wins, self.failures + other.failures, n, mean,
                     m2, max(seen) if seen else None, newer.note_when or self.note_when or other.note_when,
                     newer.note_why or self.note_why or other.note_why,
                     newer.note_risk or self.note_risk or other.note_risk)

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)
