"""What an item edit costs as its channel's schema grows: options of a select field.

    .venv/bin/python -m bench.edit_options [--sizes 10,1000,10000] [--edits 15]

For each size, a shared store in a temporary folder with one channel whose select field has that
many options, one item, then ``--edits`` edits of that field through the service (as
``edit_record_item`` makes them, in process). Prints the median edit time. An edit is checked
against the channel's schema as its file stands, read again only when the file changed since the
index read it: the median should grow little with the options.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.args import counts
from codexmem.records import service
from codexmem.store.init import init_store
from codexmem.store.store import Store

NOW = datetime(2026, 3, 2, tzinfo=UTC)


def median_edit_ms(options: int, edits: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        init_store(root, cwd=Path(tmp), shared=True)
        store = Store(root)
        values = [f"s{k}" for k in range(options)]
        fields = [
            {"key": "title", "label": "Title", "type": "text"},
            {"key": "status", "label": "Status", "type": "select", "config": {"options": values}},
        ]
        service.add_channel(store, "c", {"name": "C", "fields": fields}, actor="cli", now=NOW)
        item = service.create_item(store, "c", {"title": "a", "status": values[0]}, actor="cli", now=NOW)["id"]
        took = []
        for k in range(edits):
            started = time.perf_counter()
            service.edit_item(
                store, "c", item, {"status": values[1 + k % min(5, options - 1)]}, expected_version=None,
                idempotency_key=None, actor="cli", now=NOW,
            )  # fmt: skip
            took.append((time.perf_counter() - started) * 1000)
        return statistics.median(took)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=counts("option counts", "10,1000"), default=[10, 1000, 10000])
    parser.add_argument("--edits", type=int, default=15, help="edits timed at each size")
    args = parser.parse_args()
    print("| options | edit (median) |\n|---:|---:|")
    for size in args.sizes:
        print(f"| {size:,} | {median_edit_ms(max(size, 2), args.edits):.1f} ms |", flush=True)


if __name__ == "__main__":
    main()
