"""Default locations of the benchmark data inputs that do not ship with the project.

The KernelBench problems (third-party, never copied into the repository) are read from a sibling checkout's
data folder unless a path is given (``--problems``, ``HTAM_KB_PROBLEMS`` or ``KB_PROBLEMS``). The shell
scripts under ``bench/`` ask this file for the default, so the location is written in one place:
``python bench/data_paths.py kernelbench`` prints it.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Where the KernelBench problems file is looked for when no path is given.
KERNELBENCH_PROBLEMS = REPO.parent / "shared" / "data" / "kernelbench" / "problems.jsonl"
#: Where the corpus of naive kernels is looked for (the copies the tests need live in tests/fixtures/corpus).
CORPUS = REPO.parent / "shared" / "corpus"
#: Where llm.c's ``dev/cuda`` kernel progressions are looked for (third-party; read in place by
#: ``bench/bench_llmc.py``, never copied).
LLMC = CORPUS / "llmc"

DEFAULTS = {"kernelbench": KERNELBENCH_PROBLEMS, "corpus": CORPUS, "llmc": LLMC}


def main(argv: list[str]) -> int:
    """Print the default path of each named input (``kernelbench``, ``corpus``, ``llmc``); exit 2 on an unknown name."""
    for name in argv or ["kernelbench"]:
        if name not in DEFAULTS:
            print(f"unknown data input {name!r}; known: {', '.join(DEFAULTS)}", file=sys.stderr)
            return 2
        print(DEFAULTS[name])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
