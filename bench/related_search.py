"""The first related search of a server process: a sibling store read from its files, or its index copied.

``memory_search`` (and ``memory_bootstrap_session``) with ``include_related_projects`` reads
the stores of related projects, another checkout's ``.codexmem`` opened read-only and indexed
in memory once per process. Read from its files, that index cost the first call 10.7 s at
5,000 notes; it now starts as a copy of the sibling's own index (kept by the codexmem of that
checkout), and only the files changed since are read.

For each size this generates (once, cached in ``bench/.stores/related-<notes>/``) a sibling
store of that many notes and as many channel items (``bench.site_build``'s generator), makes a
small store related to every project of it, and, each in a fresh process, times the first
related search and the median of the next five, for the sibling as it is (its own index) and
with its index deleted (its files read). ``--siblings K`` relates K copies of the sibling.

    .venv/bin/python -m bench.related_search [--sizes 1000,5000] [--siblings 1,4]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from bench.args import counts
from bench.search_pages import build as main_store
from bench.site_build import generate
from codexmem.errors import Warnings
from codexmem.memory import retrieval
from codexmem.models.records import ScopeRef
from codexmem.store.index.base import RACY_NS
from codexmem.store.store import Store

STORES = Path(__file__).resolve().parent / ".stores"
NOW = datetime(2026, 12, 3, tzinfo=UTC)


def sibling(notes: int) -> Path:
    """The cached sibling store of ``notes`` notes and items, with its own index built."""
    folder = STORES / f"related-{notes}"
    store = folder / "store"
    if not (folder / "done").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        started = time.perf_counter()
        generate(store, notes=notes, items=notes)
        (folder / "done").write_text("")
        print(f"generated a sibling of {notes:,} notes in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    # As the sibling's own codexmem leaves its index after its next command: files written in the
    # last 2 s are "racy" (read again by every full scan until they are older), so wait them out.
    time.sleep(RACY_NS / 1e9 + 0.1)
    own = Store(store)
    own.fresh_index(full=True)
    own.index.close()
    return store


def copy_of(store: Path, dest: Path, *, index: bool) -> Path:
    """A copy of the sibling (record files hard-linked: nothing is written to them), with or without its index."""
    shutil.copytree(store, dest, copy_function=os.link, ignore=shutil.ignore_patterns(".cache"))
    if index:
        (dest / ".cache").mkdir()
        shutil.copy2(store / ".cache" / "index.sqlite", dest / ".cache" / "index.sqlite")
    return dest


def relate(main: Path, siblings: list[Path]) -> None:
    """Relate the main store's project to every project of each sibling (paths relative to its folder)."""
    config = yaml.safe_load((main / "codexmem.yaml").read_text())
    scope = ScopeRef.model_validate_json((main.parent.parent / "scope.json").read_text())
    relations = []
    for other in siblings:
        theirs = yaml.safe_load((other / "codexmem.yaml").read_text())
        path = os.path.relpath(other, main.parent)
        relations += [{"project": p["id"], "relation_type": "depends_on", "store": path} for p in theirs["projects"]]
    config["projects"] = [
        {"id": scope.project_id, "name": "order-web", "system": scope.system_id, "relations": relations}
    ]
    (main / "codexmem.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def one_process(main: Path) -> dict[str, Any]:
    """In a fresh process (run by :func:`measure`): the first related search, and the next five."""
    scope = ScopeRef.model_validate_json((main.parent.parent / "scope.json").read_text())
    store = Store(main)
    times = []
    for _ in range(6):
        started = time.perf_counter()
        warnings = Warnings()
        found = retrieval.search(store, NOW, warnings, scope=scope, query="retry", include_related_projects=True)
        times.append((time.perf_counter() - started) * 1000)
        related = sum(1 for r in found["results"] if r.get("project_name") != "order-web" and "relation_type" in r)
    return {"first": times[0], "next": statistics.median(times[1:]), "related": related, "warnings": warnings.codes()}


def measure(main: Path) -> dict[str, Any]:
    os.sync()  # the copies are written out: their write-back does not run during the call
    args = [sys.executable, "-m", "bench.related_search", "--one-process", str(main)]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=counts("sizes", "1000,5000"), default="1000,5000", help="notes per sibling")
    parser.add_argument("--siblings", type=counts("sibling counts", "1,4"), default="1,4", help="siblings related")
    parser.add_argument("--one-process", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one_process:
        print(json.dumps(one_process(args.one_process)))
        return 0
    print("| sibling notes (and items) | siblings | sibling's index | first search | next (median of 5) |")
    print("|---:|---:|---|---:|---:|")
    for size in args.sizes:
        source = sibling(size)
        for count in args.siblings:
            for index in (True, False):
                with tempfile.TemporaryDirectory(prefix="codexmem-related-") as tmp:
                    work = Path(tmp)
                    shutil.copytree(main_store(100)[0].root.parent.parent, work / "main", symlinks=True)
                    siblings = [copy_of(source, work / f"sibling-{k}", index=index) for k in range(count)]
                    main = work / "main" / "memory" / "store"
                    relate(main, siblings)
                    got = measure(main)
                    if got["warnings"] or got["related"] == 0:
                        raise SystemExit(f"the related search found nothing of the siblings: {got}")
                    label = "copied" if index else "none: files read"
                    first, after = f"{got['first']:.0f} ms", f"{got['next']:.1f} ms"
                    print(f"| {size:,} | {count} | {label} | {first} | {after} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
