"""Regenerate ``tests/slow_tier.txt``, the test ids the quick tier (``make test-fast``) leaves out.

Usage: ``python -m pytest -n auto --junitxml=/tmp/full.xml`` (the full run), then
``python tests/slow_tier.py /tmp/full.xml [--over 2.0]``. Every test whose call took more than ``--over`` seconds
is listed; the per-transform dead-code tests stay in (the quick tier samples them itself).
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEADER = """# The quick tier's exclusions: tests that took over {over:g} s in one full run on a loaded 2-core machine
# (pytest --junitxml, then this list: every test id over {over:g} s). `make test-fast` (HTAM_TEST_TIER=fast)
# deselects them; `make test` runs them. Regenerate after adding slow tests: python tests/slow_tier.py JUNIT.xml
"""


def node_id(classname: str, name: str) -> str:
    """The pytest node id of a JUnit ``testcase`` (``tests.cli.test_x`` + ``test_y`` -> ``tests/cli/test_x.py::
    test_y``; a class-based test keeps its class)."""
    parts = classname.split(".")
    if parts[-1][:1].isupper():
        return "/".join(parts[:-1]) + ".py::" + parts[-1] + "::" + name
    return "/".join(parts) + ".py::" + name


def slow_ids(junit: Path, over: float) -> list[str]:
    """Sorted node ids of the tests in ``junit`` that took more than ``over`` seconds."""
    out = set()
    for tc in ET.parse(junit).iter("testcase"):
        nid = node_id(tc.get("classname", ""), tc.get("name", ""))
        if float(tc.get("time", "0")) > over and "test_transforms_dead_code" not in nid:
            out.add(nid)
    return sorted(out)


def main() -> None:
    """Write ``tests/slow_tier.txt`` from a JUnit XML file."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", type=Path)
    ap.add_argument("--over", type=float, default=2.0, help="seconds (default 2)")
    ap.add_argument("--replace", action="store_true",
                    help="write only this run's slow ids (default: add them to the ids already listed, so that a "
                         "run on a quieter machine does not bring slow tests back into the quick tier)")
    args = ap.parse_args()
    ids = slow_ids(args.junit, args.over)
    if not args.replace and (HERE / "slow_tier.txt").is_file():
        old = (HERE / "slow_tier.txt").read_text(encoding="utf-8").splitlines()
        ids = sorted(set(ids) | {ln.strip() for ln in old if ln.strip() and not ln.startswith("#")})
    (HERE / "slow_tier.txt").write_text(HEADER.format(over=args.over) + "".join(f"{i}\n" for i in ids))
    print(f"{len(ids)} test ids over {args.over:g} s written to {HERE / 'slow_tier.txt'}")


if __name__ == "__main__":
    main()
