"""Writing the site's files and its caches: whole or not at all, for a reader at any moment."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

_TMP_NAME = re.compile(r"\..+\.[0-9]+\.tmp")
"""What :func:`replace_file` names its temporary files: ``.<name>.<pid>.tmp``."""


def write_new(target: Path, raw: bytes, *, named: Path | None = None) -> None:
    """Write a whole file. A failure names the file (``named``, else ``target``): a full disk's
    error comes from ``write``, which names none, and the person must know which folder is full."""
    try:
        with open(target, "wb") as fh:
            fh.write(raw)
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(named or target)) from exc
        raise


def replace_file(target: Path, raw: bytes) -> None:
    """Readers of a served folder (or of a cache) never see half a file: a temporary file, then a
    rename. No fsync: a page or cache lost to a power cut is made again by the next build. A
    temporary file that could not be written whole (a full disk) is removed, not left behind."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        write_new(tmp, raw, named=target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    os.replace(tmp, target)


def remove_leftovers(folder: Path) -> None:
    """Delete the temporary files of :func:`replace_file` under ``folder``: a render worker ended
    mid-write (the pool ends every worker when one fails, a full disk say) leaves its own behind.
    Builds into one folder take turns, so any such file there is a dead writer's."""
    for path in folder.rglob(".*.tmp"):
        if _TMP_NAME.fullmatch(path.name) and path.is_file():
            with contextlib.suppress(OSError):
                path.unlink()
