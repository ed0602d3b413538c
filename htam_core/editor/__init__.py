"""The engine side of the editor (no LSP types): what the language server's handlers delegate to.

One module per job:

* :mod:`~htam_core.editor.buffer`: an open file's text, changed cheaply per keystroke, parsed off the event loop
  into snapshots;
* :mod:`~htam_core.editor.profiles`: the profile cache per kernel version, background profiling, listeners for
  later profile stages;
* :mod:`~htam_core.editor.history`: the steps applied to each kernel;
* :mod:`~htam_core.editor.ranking`: one HTAM ranking per kernel version and profile, read by hover and code actions;
* :mod:`~htam_core.editor.makeable`: which ranked steps can be made on a kernel version (checked once, cached):
  code actions, advice and skipped steps;
* :mod:`~htam_core.editor.proposals`: a ranked step into edits, through the generator registry, once per kernel
  version and strategy;
* :mod:`~htam_core.editor.record`: an applied step's outcome into the memory (the shared outcome rule);
* :mod:`~htam_core.editor.memory`: the memory store and ranker behind one lock, and its summary;
* :mod:`~htam_core.editor.harness`: where a kernel's harness comes from, found in a helper process, cached;
* :mod:`~htam_core.editor.jobs`: long-running jobs (auto-optimize) and their cancellation;
* :mod:`~htam_core.editor.autooptimize`: an auto-optimize run's task, progress lines and ending;
* :mod:`~htam_core.editor.render`: the text shown to the user (hover Markdown, action titles, profile facts);
* :mod:`~htam_core.editor.settings`: the validated settings and how they reach the session;
* :mod:`~htam_core.editor.session`: :class:`Session`, the parts wired together.

The language server imports this package and nothing else of ``htam_core``: what its handlers need is re-exported
here.
"""

from htam_core import __version__
from htam_core.editor import autooptimize, render
from htam_core.editor.buffer import Buffer, Located, Snapshot
from htam_core.editor.harness import HarnessChecks, HarnessProbe
from htam_core.editor.history import AppliedStep, History
from htam_core.editor.jobs import Jobs
from htam_core.editor.makeable import Makeability, Plan, Verdict
from htam_core.editor.profiles import ProfileCache, ProfileEntry, ProfileView, content_hash
from htam_core.editor.proposals import Proposal, Proposals
from htam_core.editor.ranking import Analysis, Rankings, unranked_reason
from htam_core.editor.record import outcome_from_profiles
from htam_core.editor.session import Session
from htam_core.editor.settings import Settings, apply_to_session, parse_settings
from htam_core.generate.edits import FileEdits, minimal_edit
from htam_core.harness.spec import table_header
from htam_core.harness.status import HarnessStatus
from htam_core.runtime.children import hide_own_environ
from htam_core.runtime.worker import kill_all
from htam_core.source import MAX_SOURCE_BYTES, ByteSpan, Kernel, SourceModel, incomplete_reason, too_large
from htam_core.source.parse_problems import problem_message
from htam_core.source.positions import LineIndex
from htam_core.transforms.base import TextEdit

#: What the language server uses of the engine: the server imports ``htam_core.editor`` and nothing else of it.
__all__ = [
    "MAX_SOURCE_BYTES", "Analysis", "AppliedStep", "Buffer", "ByteSpan", "FileEdits", "HarnessChecks", "HarnessProbe",
    "HarnessStatus", "History", "Jobs", "Kernel", "LineIndex", "Located", "Makeability", "Plan", "ProfileCache",
    "ProfileEntry", "ProfileView", "Proposal", "Proposals", "Rankings", "Session", "Settings", "Snapshot",
    "SourceModel", "TextEdit", "Verdict", "__version__", "apply_to_session", "autooptimize", "content_hash",
    "hide_own_environ", "incomplete_reason", "kill_all", "minimal_edit", "outcome_from_profiles", "parse_settings",
    "problem_message", "render", "table_header", "too_large", "unranked_reason",
]
