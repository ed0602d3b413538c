"""Run an ``htam`` command with :class:`htam_core.memory.ranker.RankerConfig` defaults overridden, for a before/after
replay of a change to the ranker (every ranker the command builds gets them).

Usage, from the repository root (e.g. the method before v11):
    python bench/memory_config_cli.py kernel_mass=false bench replay --table TABLE --out OUT --work W --fresh

The first argument is ``k=v,k=v`` (fields of ``RankerConfig``; booleans as ``true``/``false``); the rest is the
``htam`` command line. An unknown field ends the run with one line naming the fields.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memory_diagnose_replay import _parse_config, _set_defaults  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit("usage: memory_config_cli.py k=v[,k=v] HTAM-ARGS...")
    _set_defaults(_parse_config(sys.argv[1]))
    from htam_core.cli.main import main

    sys.exit(main(sys.argv[2:]))
