"""Writing the site's files and its caches: whole or not at all, for a reader at any moment."""

from __future__ import annotations

import os
from pathlib import Path


def replace_file(target: Path, raw: bytes) -> None:
    """Readers of a served folder (or of a cache) never see half a file: a temporary file, then a
    rename. No fsync: a page or cache lost to a power cut is made again by the next build."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(raw)
    os.replace(tmp, target)
