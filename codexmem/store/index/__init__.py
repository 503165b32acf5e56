"""The derived index: ``.cache/index.sqlite``, rebuilt from the files and events at any time.

It holds what queries need (scope and status columns, full-text tables, event sequences,
idempotency keys) and the parsed record itself, so answering a call never re-reads YAML.

How the index keeps up with the files at a cost that does not grow with the store is told in
:mod:`codexmem.store.index.freshness`.
"""

from __future__ import annotations

from codexmem.store.index.base import IndexCorrupt
from codexmem.store.index.freshness import Freshness, FullScanPlan
from codexmem.store.index.ingest import BadFile, ScanReport
from codexmem.store.index.queries import Hit, Queries, TextQuery


class Index(Freshness, Queries):
    """One connection to the index of one store: freshness, ingestion and queries in one object.

    The parts live in modules named for what they hold: ``schema`` (the tables), ``base`` (the
    connection), ``ingest`` (files and event lines into rows), ``freshness`` (what changed on
    disk) and ``queries`` (what services ask).
    """

    def rebuild(self) -> ScanReport:
        """Throw the index away and build it again from the files and events."""
        with self._mutex:
            self.close()
            self.seed = False
            if self.path is not None:
                self._discard_file()
            return self.refresh(full=True)


__all__ = ["BadFile", "FullScanPlan", "Hit", "Index", "IndexCorrupt", "ScanReport", "TextQuery"]
