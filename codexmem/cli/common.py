"""Helpers every command shares: opening the chosen store."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from codexmem.store.locate import locate_store

if TYPE_CHECKING:  # the store module pulls in pydantic models, YAML and SQLite: not before `serve` lists its tools
    from codexmem.store.store import Store


def store_path(args: argparse.Namespace) -> Path:
    return locate_store(getattr(args, "store", None))


def open_store(args: argparse.Namespace) -> Store:
    from codexmem.store.store import Store

    return Store(store_path(args))
