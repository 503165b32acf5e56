"""Helpers every command shares: finding and opening the chosen store, and wording counts and paths."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from codexmem.store.locate import locate, require_store

MAX_DIGITS = 18

if TYPE_CHECKING:  # the store module pulls in pydantic models, YAML and SQLite: not before `serve` lists its tools
    from codexmem.store.store import Store


def store_path(args: argparse.Namespace) -> Path:
    """The store path the command means (it may not exist: ``serve`` starts without one)."""
    return locate(getattr(args, "store", None)).path


def existing_store(args: argparse.Namespace) -> Path:
    """The store the command means, or an error naming what the path is and where it came from."""
    return require_store(locate(getattr(args, "store", None)))


def open_store(args: argparse.Namespace) -> Store:
    from codexmem.store.store import Store

    return Store(existing_store(args))


def warn_unreadable(store: Store) -> None:
    """Say on stderr that files of the store were left out (a report built without them is not
    the whole store); ``check`` says what is wrong with each."""
    bad = store.fresh_index().bad_files()
    if bad:
        first = ", ".join(b.path for b in bad[:3]) + (", …" if len(bad) > 3 else "")
        print(
            f"codexmem: warning: {count(len(bad), 'unreadable file')} of the store left out ({first}): "
            "`codexmem check` says what is wrong",
            file=sys.stderr,
        )


def count(n: int, noun: str) -> str:
    """``1 item``, ``2 items``, ``0 items``: every count the CLI prints goes through here."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def positive_int(text: str) -> int:
    """An argparse type for limits and versions: a whole number of 1 or more, however large."""
    if text.isascii() and text.isdigit() and len(text) > MAX_DIGITS:
        return sys.maxsize  # more than any store holds; int() refuses 4,300+ digits
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of 1 or more, got {text[:40]!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def path_text(text: str) -> str:
    """An argparse type for paths: an empty one is refused, not read as "not given" (``--store "$DIR"``
    with ``DIR`` unset would otherwise mean the repository's own store)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give a path")
    return text


def shown(path: Path) -> str:
    """A path as a person reads it: relative to the current folder when inside it."""
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except (OSError, ValueError):  # the current folder is gone, or another drive
        return str(path)
