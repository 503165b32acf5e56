"""What the benches of the site's shape (``site_history``, ``site_links``) share: the example
store in a fresh repository, one timed build, and the table they print."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from codexmem.render.site.build import build_site
from codexmem.store.store import Store

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "store-example"
Row = dict[str, Any]


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


def _kb(size: int) -> str:
    return f"{size / 1024:.0f} KB"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)
