"""Measure ``codexmem site`` against the shape of channels: how many, and how many options a field has.

    .venv/bin/python -m bench.site_channels [--channels 1,10,50,200] [--items 2000] [--options 8,100,700] [--no-browser]

For each channel count it copies the bundled example store into a fresh git repository and adds
that many bug tracker channels, the ``--items`` spread evenly over them (so only the number of
channels varies), then builds the site in this process, search included:

* cold: a fresh output folder, without the manifest;
* no change: the same build again;
* one item edited: one item's title changed, then the build.

Each row gives the build's wall and CPU time, the files written, the largest HTML page, the
search parts (Pagefind bundles) and their bytes. Then, in Chromium through Playwright, the
first search on the search page: milliseconds from the navigation to the results shown, and
the requests to the search bundles it made (median of 3 fresh pages).

Then, for each ``--options`` count, one channel of ``--items`` items whose schema gains a select
field (``component``) of that many options, without colours (each takes the next of the
default palette, as a person's schema does): the same builds, with an item's page and the
channel's first view.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from bench.args import counts
from bench.site_build import record_id
from bench.site_shape import example_store, first_search, print_table, timed_build
from codexmem.models.records import Item
from codexmem.render.site.search import PAGEFIND_DIR, PARTS_FILE
from codexmem.store.layout import CHANNEL, ITEM
from codexmem.store.store import Store
from codexmem.timeutil import parse_ts
from scripts.bugs_channel import BUGS_SCHEMA, bug_values

AT = "2026-11-20T09:00:00.000Z"
BATCH = 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--channels",
        type=counts("channel counts", "1 or 1,10,50"),
        default=[1, 10, 50, 200],
        help="channels the items are spread over",
    )
    parser.add_argument("--items", type=counts("item counts", "2000"), default=[2000], help="items in all (one number)")
    parser.add_argument(
        "--options",
        type=counts("option counts", "8 or 8,700"),
        default=[8, 100, 700],
        help="options of one select field",
    )
    parser.add_argument("--no-browser", action="store_true", help="skip the first search in Chromium")
    args = parser.parse_args()
    if len(args.items) != 1:
        parser.error(f"argument --items: give one number, got {len(args.items)}")
    total = args.items[0]
    columns = [("search parts", "parts"), ("search bytes", "search_bytes")]
    if not args.no_browser:
        columns += [("first search", "first_search"), ("search requests", "requests")]

    def measure(tmp: Path, channels: int) -> list[dict[str, Any]]:
        return _measure(tmp, channels, total, browser=not args.no_browser)

    print_table(f"channels ({total:,} items in all)", args.channels, measure, columns)
    print()

    def measure_options(tmp: Path, options: int) -> list[dict[str, Any]]:
        return _measure(tmp, 1, total, browser=False, options=options)

    pages = [("item page", "item_bytes"), ("channel page", "channel_bytes")]
    print_table(f"options of one field ({total:,} items)", args.options, measure_options, pages)


def _measure(tmp: Path, channels: int, total: int, *, browser: bool, options: int = 0) -> list[dict[str, Any]]:
    store = example_store(tmp)
    first, channel = add_channels(store, channels, total, options)
    out = tmp / "site"
    pages = {"item_bytes": f"channels/{channel}/{first}/index.html", "channel_bytes": f"channels/{channel}/index.html"}
    rows = [_build(store, out, "cold", pages, full=True, browser=browser)]
    rows.append(_build(store, out, "no change", pages, full=False, browser=False))
    with store.transaction("cli:bench", at=AT) as txn:
        current = txn.get(ITEM, first, channel)
        updated = {**current, "version": int(current["version"]) + 1, "updated_at": AT}
        updated["values"] = {**current["values"], "title": current["values"]["title"] + " (edited)"}
        txn.put(ITEM, updated, event_type="updated", changed=["title"])
    rows.append(_build(store, out, "one item edited", pages, full=False, browser=False))
    return rows


def add_channels(store: Store, channels: int, total: int, options: int = 0) -> tuple[str, str]:
    """``channels`` copies of the bug tracker (``bench_1``...), ``total`` items spread evenly, and
    with ``options`` a select field of that many options; the first item's id and channel."""
    rng = random.Random(7)
    ids = [f"bench_{n + 1}" for n in range(channels)]
    fields = list(BUGS_SCHEMA["fields"])
    if options:
        choices = [{"value": f"c{n}", "label": f"Component {n}"} for n in range(options)]
        fields.append({"key": "component", "label": "Component", "type": "select", "config": {"options": choices}})
    with store.transaction("cli:bench", at=AT) as txn:
        for cid in ids:
            schema = {**BUGS_SCHEMA, "fields": fields, "record_channel_id": cid, "name": f"Tracker {cid}", "version": 1}
            txn.put(CHANNEL, schema, event_type="created", changed=[])
    items = []
    for n in range(total):
        values = bug_values(rng, n + 1)
        if options:
            values["component"] = f"c{rng.randrange(options)}"
        items.append(
            Item(
                item_id=record_id("item", parse_ts(AT), rng),
                record_channel_id=ids[n % channels],
                version=1,
                created_at=AT,
                updated_at=AT,
                values=values,
            )
        )
    for start in range(0, len(items), BATCH):
        with store.transaction("cli:bench", at=AT) as txn:
            for item in items[start : start + BATCH]:
                txn.put(ITEM, item, event_type="created", changed=[])
    return items[0].item_id, ids[0]


def _build(store: Store, out: Path, name: str, pages: dict[str, str], *, full: bool, browser: bool) -> dict[str, Any]:
    """One timed build, its search parts and bundle bytes, the sizes of ``pages`` (row key -> path),
    and with ``browser`` the first search of a visit."""
    row = timed_build(store, out, name, full=full)
    row.update({key: (out / path).stat().st_size for key, path in pages.items()})
    bundles = out / PAGEFIND_DIR
    parts = json.loads((bundles / PARTS_FILE).read_text(encoding="utf-8"))["parts"]
    row["parts"] = f"{len(parts):,}"
    row["search_bytes"] = sum(p.stat().st_size for p in bundles.rglob("*") if p.is_file())
    if browser:
        ms, requests = first_search(out)
        row["first_search"] = f"{ms:.0f} ms"
        row["requests"] = f"{requests:,}"
    else:
        row["first_search"] = row["requests"] = "-"
    return row


if __name__ == "__main__":
    main()
