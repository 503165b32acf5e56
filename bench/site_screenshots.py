"""Screenshots of the example store's site for the README: a channel, an item, a search; desktop and phone.

    .venv/bin/python -m bench.site_screenshots [--out docs/screenshots] [--now 2026-03-31]

Builds a copy of ``store-example/`` (so its folder is untouched), serves it on 127.0.0.1 under a
sub-path as GitHub Pages would, and has Debian's Chromium (through Playwright) take each page at
1280x800 and at 390x844 (a phone), in the light scheme. ``--now`` fixes the day formulas are
computed at, so the pictures do not change from day to day.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
from pathlib import Path

from bench.site_shape import CHROMIUM_ARGS
from codexmem.cli.site_cmd import parse_now
from codexmem.render.site import build_site
from codexmem.render.site.serve import make_server
from codexmem.store.layout import ITEM
from codexmem.store.store import Store

REPO = Path(__file__).resolve().parent.parent
SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


def shots(out: Path, now: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="site-shots-"))
    made: list[Path] = []
    try:
        shutil.copytree(REPO / "store-example", work / "store", ignore=shutil.ignore_patterns(".cache", ".lock"))
        store = Store(work / "store")
        build_site(store, work / "_site", now=parse_now(now))
        # Of the items with the most versions (the longest history), the one with the shortest
        # description: the whole page, facts to history, fits a picture.
        items = store.fresh_index().select(ITEM, where={"channel": "bugs"}, order=[("id", False)])
        most = max(int(i["version"]) for i in items)
        item = min(
            (i for i in items if int(i["version"]) == most),
            key=lambda i: (len(str(i["values"].get("description", ""))), i["item_id"]),
        )
        server = make_server(work / "_site", port=0, prefix="/codexmem/", quiet=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}/codexmem/"
        pages = {
            "channel": ("channels/bugs/?sort=-severity&status=in_progress", False),
            "item": (f"channels/bugs/{item['item_id']}/", True),
            "search": ("search/?q=idempotency", False),
        }
        out.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for size, viewport in SIZES.items():
                context = browser.new_context(viewport=viewport, color_scheme="light", device_scale_factor=1)
                page = context.new_page()
                for name, (url, full) in pages.items():
                    page.goto(base + url)
                    page.wait_for_load_state("load")
                    page.wait_for_function("!document.querySelector('[aria-busy=true]')")
                    if name == "search":
                        page.locator("[data-search-results] .result").first.wait_for(timeout=20_000)
                    target = out / f"{name}-{size}.png"
                    page.screenshot(path=str(target), full_page=full)
                    made.append(target)
                context.close()
            browser.close()
        server.shutdown()
        server.server_close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--now", default="2026-03-31", help="the day formulas are computed at")
    args = parser.parse_args()
    for path in shots(args.out, args.now):
        print(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
