"""The kernel-family suite: naive starting kernels grouped in families, read from a manifest.

``bench/families/manifest.json`` lists every kernel with its family, language, harness kind and what makes it
differ from its siblings (``varies``: dtype, shape, layout, epilogue, block, style), and per family the
external llm.c kernels that join it. A kernel's harness is either a ``[kernel.<name>]`` table of the
``htam.toml`` beside its file (``harness = "toml"``, validated here exactly as :func:`load_suite` validates a
suite table) or inferred by the product from the file's own ``main()``/``__main__`` (``harness =
"inferred"``: nothing is run here; the runner's ``htam optimize`` infers it).

The llm.c kernels are third-party and never copied into the project: they are read from a folder given by
the caller (``bench/data_paths.py llmc``, or ``$HTAM_LLMC``) and left out, with the reason, when it is absent.

Manifest format (version 1)::

    {"version": 1,
     "families": {"<family>": {"title": "...", "llmc": [{"path": "gelu_forward.cu", "kernel": "..."}]}},
     "kernels": [{"file": "<family>/<file>", "kernel": "<name>", "family": "<family>",
                  "lang": "cuda" | "triton", "harness": "toml" | "inferred",
                  "varies": {"dtype": "...", "shape": "...", "layout": "...", "epilogue": "...",
                             "block": "...", "style": "..."}}]}

:func:`makeable_steps` is the engine's view of a kernel's search space: the knowledge-base strategies that
apply to it and for which the rules engine makes a validated edit (what ``htam suggest`` marks
``makes_edit``), the count the suite's design is checked against.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_core.bench.suite import SuiteError, SuiteKernel, kernel_from_table
from htam_core.harness.base import HarnessError
from htam_core.harness.spec import SPEC_FILENAME, load_toml
from htam_core.memory import Ranker, load_knowledge
from htam_core.source import SourceError, load
from htam_core.source.model import Kernel, SourceModel
from htam_core.transforms.registry import resolve_step
from htam_core.types.language import traits
from htam_core.types.profile import Profile

#: The manifest's version this loader reads.
MANIFEST_VERSION = 1
#: Languages a family member may be written in.
LANGS = ("cuda", "triton")
#: How a member's harness is given.
HARNESS_KINDS = ("toml", "inferred")
#: The axes along which family members differ (``varies`` keys).
VARIES_KEYS = ("dtype", "shape", "layout", "epilogue", "block", "style")
#: Environment variable naming the llm.c corpus folder (overrides the caller's default).
LLMC_ENV = "HTAM_LLMC"


class FamiliesError(SuiteError):
    """The manifest cannot be used (missing, malformed, or naming a file, kernel or family that is not
    there); the message names the entry and how to fix it."""


@dataclass
class FamilyKernel:
    """One starting kernel of the family suite.

    Attributes:
        kernel: the suite kernel (name, absolute path, language, roofline bound and first input set; the
            bound and sizes are ``None``/empty for an inferred harness, which only the product reads).
        family: its family's key.
        harness: ``"toml"`` or ``"inferred"``.
        varies: what distinguishes it from its siblings (keys of :data:`VARIES_KEYS`).
        file: its path relative to the manifest's folder.
    """

    kernel: SuiteKernel
    family: str
    harness: str
    varies: dict[str, str] = field(default_factory=dict)
    file: str = ""

    @property
    def name(self) -> str:
        """The kernel's name."""
        return self.kernel.name

    @property
    def path(self) -> str:
        """Absolute path of its file."""
        return self.kernel.path


@dataclass
class ExternalKernel:
    """An llm.c kernel that joins a family, read from the corpus folder (never copied).

    Attributes:
        family: the family's key.
        relpath: its path inside the llm.c folder, as the manifest gives it.
        path: absolute path of the file.
        kernel: the kernel's name in that file.
    """

    family: str
    relpath: str
    path: str
    kernel: str


@dataclass
class FamilySuite:
    """The loaded manifest.

    Attributes:
        root: the manifest's folder.
        titles: family key -> its title, in manifest order.
        kernels: the project's starting kernels, in manifest order.
        external: the llm.c kernels found (empty when the folder is absent).
        external_note: why no llm.c kernel was loaded, or ``None`` when they were.
    """

    root: Path
    titles: dict[str, str]
    kernels: list[FamilyKernel]
    external: list[ExternalKernel] = field(default_factory=list)
    external_note: str | None = None

    def family(self, name: str) -> list[FamilyKernel]:
        """The members of one family, in manifest order."""
        return [k for k in self.kernels if k.family == name]

    def suite_kernels(self) -> list[SuiteKernel]:
        """The members as the suite runner's :class:`SuiteKernel` list, in manifest order."""
        return [k.kernel for k in self.kernels]

    def family_of(self) -> dict[str, str]:
        """Kernel name -> family key (for leave-one-out memories and per-family tables)."""
        return {k.name: k.family for k in self.kernels}


def default_manifest() -> Path:
    """``bench/families/manifest.json`` of this checkout (the folder is not installed with the package)."""
    return Path(__file__).resolve().parents[2] / "bench" / "families" / "manifest.json"


def llmc_folder(default: str | Path | None = None) -> Path | None:
    """The llm.c corpus folder: ``$HTAM_LLMC`` when set, else ``default``; ``None`` when neither is given."""
    env = os.environ.get(LLMC_ENV)
    if env:
        return Path(env)
    return Path(default) if default is not None else None


def _read_manifest(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise FamiliesError(f"no family manifest at {path}: pass the path of bench/families/manifest.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FamiliesError(f"{path} is not a readable JSON manifest: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
        raise FamiliesError(f"{path}: expected a JSON object with \"version\": {MANIFEST_VERSION}")
    if not isinstance(data.get("families"), dict) or not isinstance(data.get("kernels"), list):
        raise FamiliesError(f"{path}: needs a \"families\" object and a \"kernels\" list")
    return data


def _tables(spec: Path, cache: dict[Path, dict[str, Any]]) -> dict[str, Any]:
    if spec not in cache:
        try:
            cache[spec] = (load_toml(spec).get("kernel") or {}) if spec.is_file() else {}
        except HarnessError as exc:
            raise FamiliesError(str(exc)) from exc
    return cache[spec]


def _member(root: Path, entry: Any, index: int, titles: dict[str, str],
            tables: dict[Path, dict[str, Any]]) -> FamilyKernel:
    where = f"manifest kernel #{index}"
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("file", "kernel", "family")):
        raise FamiliesError(f"{where}: needs string \"file\", \"kernel\" and \"family\"")
    name, fam, lang, kind = entry["kernel"], entry["family"], entry.get("lang"), entry.get("harness", "toml")
    where = f"manifest kernel {name!r} ({entry['file']})"
    if fam not in titles:
        raise FamiliesError(f"{where}: unknown family {fam!r}; the manifest's families: {', '.join(titles)}")
    if lang not in LANGS or kind not in HARNESS_KINDS:
        raise FamiliesError(f"{where}: lang must be one of {LANGS} and harness one of {HARNESS_KINDS}")
    varies = entry.get("varies") or {}
    bad = [k for k in varies if k not in VARIES_KEYS]
    if bad:
        raise FamiliesError(f"{where}: unknown varies key(s) {', '.join(bad)}; known: {', '.join(VARIES_KEYS)}")
    path = (root / entry["file"]).resolve()
    if not path.is_file():
        raise FamiliesError(f"{where}: the file does not exist")
    spec = path.parent / SPEC_FILENAME
    table = _tables(spec, tables).get(name)
    if kind == "toml":
        if table is None:
            raise FamiliesError(f"{where}: harness = \"toml\" but {spec} has no [kernel.{name}] table")
        sk = kernel_from_table(spec, name, table)
        if Path(sk.path) != path:
            raise FamiliesError(f"{where}: {spec} [kernel.{name}] names another file ({table['file']})")
    else:
        if table is not None:
            raise FamiliesError(f"{where}: harness = \"inferred\" but {spec} has a [kernel.{name}] table, which "
                                "would win over the inference; drop one of the two")
        sk = SuiteKernel(name, str(path), lang, None, None)
    if lang != sk.language:  # the entry's lang and its harness's language agree
        raise FamiliesError(f"{where}: lang {lang!r} but the harness says {sk.language!r}")
    return FamilyKernel(sk, fam, kind, {k: str(v) for k, v in varies.items()}, entry["file"])


def _external(families: dict[str, Any], llmc: Path | None) -> tuple[list[ExternalKernel], str | None]:
    if llmc is None:
        return [], f"no llm.c folder given (set ${LLMC_ENV} or pass llmc_dir)"
    if not llmc.is_dir():
        return [], f"the llm.c folder {llmc} is absent: its kernels are left out"
    out: list[ExternalKernel] = []
    for fam, info in families.items():
        for e in info.get("llmc") or []:
            if not isinstance(e, dict) or not isinstance(e.get("path"), str) or not isinstance(e.get("kernel"), str):
                raise FamiliesError(f"family {fam!r}: every llmc entry needs string \"path\" and \"kernel\"")
            p = (llmc / e["path"]).resolve()
            if not p.is_file():
                raise FamiliesError(f"family {fam!r}: llm.c file {e['path']} is not in {llmc}")
            out.append(ExternalKernel(fam, e["path"], str(p), e["kernel"]))
    return out, None


def load_families(manifest: str | Path | None = None, *, llmc_dir: str | Path | None = None,
                  families: list[str] | None = None) -> FamilySuite:
    """Read and validate the family manifest.

    Args:
        manifest: the manifest's path (default :func:`default_manifest`).
        llmc_dir: the llm.c corpus folder (``$HTAM_LLMC`` overrides it); absent or ``None``: the external
            kernels are left out and :attr:`FamilySuite.external_note` says why.
        families: keep only these families (in manifest order); ``None`` keeps all.

    Raises:
        FamiliesError: a missing or malformed manifest, an unknown family, a missing file, a ``toml`` member
            without its table (or an ``inferred`` one with a table), an invalid table, or a listed llm.c file
            missing from an existing llm.c folder.
    """
    path = Path(manifest) if manifest is not None else default_manifest()
    data = _read_manifest(path)
    titles = {k: str((v or {}).get("title", k)) for k, v in data["families"].items()}
    if families:
        unknown = [f for f in families if f not in titles]
        if unknown:
            raise FamiliesError(f"unknown famil{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
                                f"known: {', '.join(titles)}")
    tables: dict[Path, dict[str, Any]] = {}
    members = [_member(path.parent, e, i, titles, tables) for i, e in enumerate(data["kernels"])]
    seen: set[str] = set()
    for m in members:
        if m.name in seen:
            raise FamiliesError(f"manifest kernel {m.name!r} is listed twice (kernel names key the results)")
        seen.add(m.name)
    keep = set(families or titles)
    external, note = _external({k: v for k, v in data["families"].items() if k in keep}, llmc_folder(llmc_dir))
    return FamilySuite(path.parent, {k: v for k, v in titles.items() if k in keep},
                       [m for m in members if m.family in keep], external, note)


def find_kernel(path: str | Path, name: str) -> tuple[SourceModel, Kernel]:
    """Parse ``path`` with the source model and return it with its kernel ``name``.

    Raises:
        FamiliesError: the file cannot be parsed or has no kernel of that name.
    """
    try:
        model = load(str(path))
        return model, model.kernel(name)
    except (SourceError, KeyError) as exc:
        raise FamiliesError(f"{path}: {exc.args[0] if exc.args else exc}") from exc


def makeable_steps(model: SourceModel, kernel: Kernel, profile: Profile | None) -> list[str]:
    """The strategy ids the rules engine can make for ``kernel`` now: applicable in the knowledge base (the
    ranker's applicability, as the policies see it) and turned into at least one validated edit by
    :func:`htam_core.transforms.registry.resolve_step` (``htam suggest``'s ``makes_edit``), in
    knowledge-base order.

    Args:
        model, kernel: the parsed file and its kernel.
        profile: the kernel's profile (static or measured), or ``None``.
    """
    kb = load_knowledge()
    lang = traits(kernel.language).family
    out = []
    for s in Ranker(kb).applicable(kernel.features, lang, profile, kernel):
        if s.transform and resolve_step(s.title, s.transform, s.guidance, model, kernel, profile, llm_hint="-"):
            out.append(s.id)
    return out
