"""``codexmem reindex``: rebuild the derived index from the files and events."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

from codexmem.progress import Progress


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("reindex", parents=[common], help="rebuild .cache/index.sqlite from the files")
    p.set_defaults(func=run)


STAGES = {
    "events": ("reading events", "read events:", "KiB"),
    "histories": ("linking histories", "linked histories:", "records"),
    "files": ("indexing", "indexed", "files"),
}
"""How each stage of a rebuild is drawn (see ``IndexConnection.on_progress``)."""


class StageBars:
    """One progress bar per stage of a rebuild, each closed as the next one starts."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.stage = ""
        self.bar: Progress | None = None

    def update(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage:
            self.close()
            doing, did, unit = STAGES[stage]
            self.stage = stage
            self.bar = Progress(total, self.stream, doing=doing, did=did, unit=unit, bar_from=1_000, lines_from=10_000)
        assert self.bar is not None
        self.bar.update(done, total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.done()
            self.bar = None


def run(args: argparse.Namespace) -> int:
    from codexmem.cli.common import count, open_store

    store = open_store(args)
    started = time.perf_counter()
    bars = StageBars(sys.stderr)
    try:
        report = store.build_index(bars.update, rebuild=True)
    finally:
        bars.close()
    elapsed = time.perf_counter() - started
    for bad in report.bad:
        print(f"{bad.path}: skipped: {bad.problem}")
    print(f"reindexed {count(report.parsed, 'record')} and {count(report.events_ingested, 'event')} in {elapsed:.2f} s")
    if store.index.path is None:
        print(f"in memory only: {store.layout.cache} cannot be written, so each command builds the index again")
    return 0
