"""``codexmem reindex``: rebuild the derived index from the files and events."""

from __future__ import annotations

import argparse
import time
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("reindex", parents=[common], help="rebuild .cache/index.sqlite from the files")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import count, open_store

    store = open_store(args)
    started = time.perf_counter()
    report = store.index.rebuild()
    elapsed = time.perf_counter() - started
    for bad in report.bad:
        print(f"{bad.path}: skipped: {bad.problem}")
    print(f"reindexed {count(report.parsed, 'record')} and {count(report.events_ingested, 'event')} in {elapsed:.2f} s")
    return 0
