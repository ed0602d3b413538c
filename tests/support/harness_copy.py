"""Copy a kernel fixture and its htam.toml into a test's temporary folder, editing the harness on the way."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path


def copy_with_harness(src_dir: Path, file_name: str, dst: Path, replace: Sequence[tuple[str, str]] = ()) -> Path:
    """Copy ``src_dir/file_name`` and ``src_dir/htam.toml`` into ``dst`` (created), applying each ``(old, new)``
    text replacement to the htam.toml; every ``old`` must occur (a stale replacement fails the test).

    Returns:
        The copied kernel file's path.
    """
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(src_dir / file_name, dst / file_name)
    toml = (src_dir / "htam.toml").read_text()
    for old, new in replace:
        assert old in toml, old
        toml = toml.replace(old, new)
    (dst / "htam.toml").write_text(toml)
    return dst / file_name
