"""What the site's benches share: the example store in a fresh repository, one timed build and
the table they print (``site_history``, ``site_links``, ``site_channels``), and Chromium's flags
and the first search of a visit (``site_build``, ``site_channels``, ``site_screenshots``)."""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from codexmem.render.site.build import build_site
from codexmem.render.site.search import PAGEFIND_DIR
from codexmem.store.store import Store

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "store-example"
Row = dict[str, Any]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
"""Chromium's flags on this machine (Debian's package, no sandbox, no network of its own)."""
SEARCH_QUERY = "crashes"


def example_store(tmp: Path) -> Store:
    """The bundled example store, copied into a fresh git repository under ``tmp``."""
    store_path = tmp / "repo" / "store"
    shutil.copytree(EXAMPLE, store_path)
    _git(tmp / "repo", "init", "-q")
    _git(tmp / "repo", "add", "-A")
    _git(tmp / "repo", "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "example")
    return Store(store_path)


def timed_build(store: Store, out: Path, name: str, *, full: bool) -> Row:
    """One build in this process (no workers, as at this size): wall and CPU time, files written,
    the largest HTML page."""
    wall, cpu = time.perf_counter(), time.process_time()
    report = build_site(store, out, full=full, parallel=0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "build": name,
        "wall": wall,
        "cpu": cpu,
        "written": report.written,
        "largest": max(p.stat().st_size for p in out.rglob("*.html")),
    }


def print_table(
    first: str, counts: Iterable[int], measure: Callable[[Path, int], list[Row]], extra: list[tuple[str, str]]
) -> None:
    """A Markdown table: the count (``first``), the build's columns, then ``extra`` (header, row key);
    each count measured in a temporary folder of its own."""
    headers = [first, "build", "wall", "CPU", "files written", "largest page", *(h for h, _ in extra)]
    print("| " + " | ".join(headers) + " |")
    print("|---:|---|" + "---:|" * (len(headers) - 2))
    for count in counts:
        with tempfile.TemporaryDirectory(prefix="codexmem-bench-site-") as tmp:
            for row in measure(Path(tmp), count):
                cells = [
                    f"{count:,}",
                    row["build"],
                    f"{row['wall']:.2f} s",
                    f"{row['cpu']:.2f} s",
                    f"{row['written']:,}",
                    _kb(row["largest"]),
                ]
                cells += [_kb(row[key]) if key.endswith("_bytes") else str(row[key]) for _, key in extra]
                print("| " + " | ".join(cells) + " |", flush=True)


def first_search(site: Path, runs: int = 3, query: str = SEARCH_QUERY) -> tuple[float, int]:
    """Median milliseconds from opening ``search/?q=<query>`` to its results shown, and the requests
    to ``pagefind/`` one such page made, in Chromium through Playwright (each run a fresh context:
    nothing cached, as on a first visit)."""
    from playwright.sync_api import sync_playwright

    from codexmem.render.site.serve import make_server

    server = make_server(site, port=0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/search/?q={query}"
    times, requests = [], []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for _ in range(runs):
                context = browser.new_context()  # a fresh cache: the first search of a visit
                page = context.new_page()
                seen: list[str] = []
                page.on("request", lambda r, seen=seen: seen.append(r.url) if f"/{PAGEFIND_DIR}/" in r.url else None)
                page.goto(url)
                page.locator("[data-search-status]").filter(has_text=re.compile(r"results? for")).wait_for(
                    timeout=120_000
                )
                times.append(page.evaluate("performance.now()"))
                requests.append(len(seen))
                context.close()
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return statistics.median(times), int(statistics.median(requests))


def _kb(size: int) -> str:
    return f"{size / 1024:.0f} KB"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)
