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
* :mod:`~htam_core.editor.session`: :class:`Session`, the parts wired together.
"""

from htam_core.editor.buffer import Buffer, Snapshot
from htam_core.editor.history import AppliedStep, History
from htam_core.editor.makeable import Makeability, Plan, Verdict
from htam_core.editor.profiles import ProfileCache, ProfileEntry, ProfileView, content_hash
from htam_core.editor.proposals import Proposal, Proposals
from htam_core.editor.ranking import Analysis, Rankings, unranked_reason
from htam_core.editor.record import outcome_from_profiles
from htam_core.editor.session import Session
from htam_core.generate.edits import FileEdits, minimal_edit

__all__ = [
    "Analysis", "AppliedStep", "Buffer", "FileEdits", "History", "Makeability", "Plan", "ProfileCache", "ProfileEntry", "ProfileView", "Rankings",
    "Proposal", "Proposals", "Session", "Snapshot", "Verdict", "content_hash", "minimal_edit", "outcome_from_profiles",
    "unranked_reason",
]
