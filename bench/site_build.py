"""Measure ``codexmem site`` at 1,000, 5,000 and 10,000 notes (each with a channel of as many items).

    .venv/bin/python -m bench.site_build [--sizes 1000,5000,10000] [--keep DIR] [--no-browser] [--cold-repeat N]

For each size it generates a store (notes with the sessions, handoffs and imports around them,
and a bug tracker channel, through ``Store.transaction``, many puts per transaction), then runs
each build in a fresh process, as a person runs ``codexmem site``:

* cold: an empty output folder and no manifest;
* no change: the same build again;
* one change: one note's body edited, then the build (its search part indexed again);
* with ``--cold-repeat N``, N more cold builds, each into a folder of its own and without the
  manifest (see ``_clear``: why the last output is not deleted first).

Before each build what the last one wrote is flushed to disk. Before the first, the bench
measures what creating a folder and a file costs on this disk at that moment (see
``creation_cost``): a cold build creates some 35,000 at 5,000 notes, and right after many files
were deleted that cost is several times higher here. It also times a fixed Python loop
(``cpu_speed``): on a shared machine the CPU itself runs slower at times.

Each row gives the wall time, the CPU time of the build process and of its children (Pagefind
and render workers; steadier than the wall time on a shared machine), the render time (pages
written; search parts are indexed meanwhile), the time search added after the last page, the
build process's own peak memory (``ru_maxrss``; and its render workers' when it forks them) and
the largest Pagefind process's peak beside it, and the largest HTML page.
Then, in Chromium through Playwright, the 10,000-item channel (the largest size's): the bytes of
its first view, the time to load every row, and the median time of a sort and of a filter from
the click to the redrawn table, and that page 2 holds rows 101-200; and the first search of a
visit, from the navigation to the results (all the search parts merged).

The stores are kept under ``--keep`` (default: a temporary folder, removed at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.args import note_sizes
from bench.site_shape import CHROMIUM_ARGS, SEARCH_QUERY, first_search
from codexmem.models.records import Handoff, ImportAudit, Item, Note, ScopeRef, Session
from codexmem.render.site import build_site
from codexmem.store.layout import CHANNEL, HANDOFF, IMPORT, ITEM, NOTE, SESSION
from codexmem.store.store import Store
from codexmem.store.yamlio import dump_yaml
from codexmem.timeutil import format_ts
from scripts.bugs_channel import BUGS_SCHEMA, bug_values

REPO = Path(__file__).resolve().parent.parent

SEED = 7
BATCH = 200
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
PROJECTS = ("proj_checkout_web", "proj_checkout_api", "proj_billing_worker", "proj_ledger")
NOTE_TYPES = ("decision", "bugfix", "discovery", "constraint", "preference", "todo")
TAGS = tuple(
    f"{w}"
    for w in (
        "api",
        "validation",
        "payments",
        "enum",
        "retry",
        "cache",
        "auth",
        "migration",
        "ui",
        "perf",
        "flaky-test",
        "config",
        "logging",
        "queue",
        "schema",
        "deps",
        "ci",
        "security",
        "i18n",
        "timezones",
        "export",
        "search",
        "sync",
        "billing",
        "ledger",
        "webhooks",
        "rate-limit",
        "db",
        "index",
        "locks",
    )
)
SENTENCES = (
    "The handler retries once and then gives up, which hides the real error from the caller.",
    "We decided to keep the enum in one generated module so the client and the server agree.",
    "The test was flaky because it depended on the order of a set; sorting the keys fixed it.",
    "Timeouts come from the connection pool, not the database: the pool is too small under load.",
    "Use the idempotency key from the request header; never derive it from the payload.",
    "The migration must run before the deploy, otherwise old workers write the dropped column.",
    "Cache entries expire after five minutes, which is longer than the token lifetime.",
    "Keep the retry budget per tenant so that one noisy account cannot starve the others.",
)


def _paragraph(rng: random.Random, size: int) -> str:
    return " ".join(rng.choice(SENTENCES) for _ in range(size))


def note_body(rng: random.Random, n: int) -> str:
    """About 1,600 characters of Markdown: headings, lists, code, a link."""
    return (
        f"## Context\n\n{_paragraph(rng, 3)}\n\n"
        f"- {rng.choice(SENTENCES)}\n- {rng.choice(SENTENCES)}\n- see `src/module_{n % 97}.py`\n\n"
        f"## What we found\n\n{_paragraph(rng, 4)}\n\n"
        f"```python\nretry(budget={n % 7}, backoff=0.{n % 9})\n```\n\n"
        f"{_paragraph(rng, 2)} Details in [the runbook](https://wiki.example.com/runbook/{n}).\n"
    )


def _ts(moment: datetime) -> str:
    return format_ts(moment)


def _scope(pid: str) -> ScopeRef:
    return ScopeRef(system_id="sys_checkout", project_id=pid, workspace_id=f"ws_{pid[5:]}_main")


def _put_all(store: Store, kind: Any, records: list[Any], actor: str = "cli:bench") -> None:
    """Many puts per transaction: each is still one file, journaled together."""
    for start in range(0, len(records), BATCH):
        chunk = records[start : start + BATCH]
        at = chunk[-1].model_dump()["updated_at"]
        with store.transaction(actor, at=at) as txn:
            for record in chunk:
                txn.put(kind, record, event_type="created", changed=[])


def generate(root: Path, *, notes: int, items: int) -> Store:
    """A store shaped like a busy team's: sessions, notes, handoffs, imports and a bug tracker."""
    rng = random.Random(SEED)
    root.mkdir(parents=True)
    config = {
        "format": 2,
        "system": {"id": "sys_checkout", "name": "checkout"},
        "projects": [{"id": p, "name": p[5:].replace("_", "-"), "system": "sys_checkout"} for p in PROJECTS],
        "site": {"title": "checkout memory"},
    }
    (root / "codexmem.yaml").write_text(dump_yaml(config), "utf-8")
    store = Store(root)
    span = timedelta(days=60)
    sessions = []
    for n in range(max(notes // 10, 1)):
        at = START + span * n / max(notes // 10, 1)
        pid = PROJECTS[n % len(PROJECTS)]
        sessions.append(
            Session(
                session_id=record_id("sess", at, rng),
                version=1,
                scope=_scope(pid),
                status="ended",
                task=f"{rng.choice(('Fix', 'Refactor', 'Investigate', 'Speed up'))} {rng.choice(TAGS)} #{n}",
                branch_name=f"work/{n}",
                started_at=_ts(at),
                ended_at=_ts(at + timedelta(hours=2)),
                updated_at=_ts(at + timedelta(hours=2)),
            )
        )
    _put_all(store, SESSION, sessions)
    paths = [f"src/{rng.choice(TAGS)}/module_{k}.py" for k in range(400)]
    note_models = []
    for n in range(notes):
        session = sessions[n * len(sessions) // notes]
        at = datetime.fromisoformat(session.started_at.replace("Z", "+00:00")) + timedelta(minutes=5 + n % 90)
        note_models.append(
            Note(
                note_id=record_id("note", at, rng),
                version=1,
                scope=session.scope,
                session_id=session.session_id,
                type=rng.choice(NOTE_TYPES),
                title=f"{rng.choice(SENTENCES)[:-1]} ({n})",
                importance=rng.randint(1, 5),
                tags=sorted(set(rng.sample(TAGS, rng.randint(1, 4)))),
                file_paths=sorted(set(rng.sample(paths, 2))),
                created_at=_ts(at),
                updated_at=_ts(at),
                content=note_body(rng, n),
            )
        )
    _put_all(store, NOTE, note_models)
    handoffs = []
    for n, session in enumerate(sessions):
        at = datetime.fromisoformat(session.ended_at.replace("Z", "+00:00"))  # type: ignore[union-attr]
        mine = [m.note_id for m in note_models if m.session_id == session.session_id][:5]
        handoffs.append(
            Handoff(
                handoff_id=record_id("handoff", at, rng),
                version=1,
                scope=session.scope,
                session_id=session.session_id,
                kind="final",
                task=session.task,
                status="open" if n >= len(sessions) - 12 else "completed",
                next_steps=[rng.choice(SENTENCES) for _ in range(3)],
                related_note_ids=mine,
                files_touched=sorted(set(rng.sample(paths, 3))),
                created_at=_ts(at),
                updated_at=_ts(at),
                summary=_paragraph(rng, 4),
            )
        )
    _put_all(store, HANDOFF, handoffs)
    imports = [
        ImportAudit(
            import_id=record_id("import", START + timedelta(hours=n), rng),
            version=1,
            scope=m.scope,
            session_id=m.session_id,
            source="watcher_import",
            external_id=f"watch-{n}",
            durable_memory_id=m.note_id,
            imported_at=m.created_at,
            updated_at=m.created_at,
        )
        for n, m in enumerate(note_models[:: max(notes // 100, 1)])
    ]
    _put_all(store, IMPORT, imports)
    _channel(store, rng, items)
    return store


def _channel(store: Store, rng: random.Random, count: int) -> None:
    schema = {**BUGS_SCHEMA, "version": 1}
    blocks = {"key": "blocks", "label": "Blocks", "type": "relation", "config": {"channel": "bugs"}}
    schema["fields"] = [*BUGS_SCHEMA["fields"], blocks]
    with store.transaction("cli:bench", at=_ts(START)) as txn:
        txn.put(CHANNEL, schema, event_type="created", changed=[])
    models: list[Item] = []
    for n in range(count):
        at = START + timedelta(minutes=40 * n)
        values = bug_values(rng, n + 1, status=rng.choice(("new", "triaged", "in_progress", "fixed")))
        values.update(
            owner=rng.choice(("aiko", "mika", "ren")),
            severity=rng.choice(("s1", "s2", "s3", "s4")),
            points=rng.choice((1, 2, 3, 5, 8)),
            area=rng.choice(("ui", "api", "storage", "sync")),
        )
        if models and rng.random() < 0.2:
            values["blocks"] = [rng.choice(models).item_id]
        models.append(
            Item(
                item_id=record_id("item", at, rng),
                record_channel_id="bugs",
                version=1,
                created_at=_ts(at),
                updated_at=_ts(at),
                values=values,
            )
        )
    _put_all(store, ITEM, models)


def record_id(prefix: str, at: datetime, rng: random.Random) -> str:
    from ulid import ULID

    return f"{prefix}_{ULID.from_int((int(at.timestamp() * 1000) << 80) | rng.getrandbits(80))}"


def change_one_note(store: Store) -> str:
    """Edit one note's body, stamped a minute after the store's latest event."""
    index = store.fresh_index()
    note = index.select(NOTE, order=[("id", False)], limit=1)[0]
    latest = max(e["at"] for e in index.events_after(0, limit=1_000_000))
    at = format_ts(datetime.fromisoformat(latest.replace("Z", "+00:00")) + timedelta(minutes=1))
    with store.transaction("cli:bench", at=at) as txn:
        current = txn.get(NOTE, note["note_id"])
        assert current is not None
        version = int(current["version"]) + 1
        updated = {**current, "version": version, "content": current["content"] + "\nEdited.\n", "updated_at": at}
        txn.put(NOTE, updated, event_type="updated", changed=["content"])
    return str(note["note_id"])


def build_once(store_path: Path, out: Path, full: bool) -> dict[str, Any]:
    """One build in this process (run in a child by :func:`measure`): its report and peaks."""
    started = time.perf_counter()
    report = build_site(Store(store_path), out, full=full)
    total = time.perf_counter() - started
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    self_kb = own.ru_maxrss
    largest = max(((p.stat().st_size, p.relative_to(out).as_posix()) for p in out.rglob("*.html")), default=(0, ""))
    return {
        "total": total,
        "render": report.seconds,
        "search": report.search_seconds or 0.0,
        "files": report.pages,
        "written": report.written,
        "parts": report.search.parts if report.search else 0,
        "indexed": report.search.indexed if report.search else 0,
        "pages_indexed": report.search.pages_indexed if report.search else 0,
        "cpu": own.ru_utime + own.ru_stime,
        "pagefind_cpu": children.ru_utime + children.ru_stime,  # and the render workers, if any
        "self_mb": self_kb / 1024,
        "workers": report.workers,
        "workers_mb": report.workers_peak_kb / 1024,
        "pagefind_mb": (report.search.peak_kb if report.search else 0) / 1024,
        "largest_kb": largest[0] / 1024,
        "largest": largest[1],
    }


def measure(store_path: Path, out: Path, *, full: bool) -> dict[str, Any]:
    """A build in a fresh process, as ``codexmem site`` runs: its figures as JSON.

    What the last step wrote is flushed to disk first (``os.sync``), so its write-back does not
    run during this build (a person's build does not follow another one by a second).
    """
    os.sync()
    args = [sys.executable, "-m", "bench.site_build", "--build-once", str(store_path), str(out)]
    done = subprocess.run([*args, "--full"] if full else args, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _clear(store_path: Path, out: Path) -> None:
    """No site and no manifest: the next build is cold.

    Each cold build goes to a folder that held nothing (the outputs are deleted at the end):
    on a filesystem without a journal, as this machine's ext4 is, creating a file right after
    thousands were deleted costs kernel time that grows with them (ext4 skips inodes freed in
    the last minutes, one by one). Deleting the last build's output before each cold build
    doubled its wall time here (13.5 s into an unused folder, 22.7 s right after 46,000 files
    were deleted; the children's system time 4.7 s against 18.7 s).
    """
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(store_path / ".cache" / "site", ignore_errors=True)


def creation_cost(folder: Path, count: int = 2000) -> float:
    """Milliseconds of CPU to create a folder and a 5 KB file in it, now, on this disk (mean of ``count``).

    A cold build creates some 35,000 files and folders at 5,000 notes (pages and search
    fragments). On a filesystem without a journal (ext4 here), creating one right after many
    were deleted costs several times more (ext4 skips inodes freed in the last minutes, one by
    one), so the same build takes seconds longer: this says which case a run measured.
    """
    folder.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=folder))  # a rerun with the same --keep gets a fresh one
    started = time.process_time()
    for n in range(count):
        sub = folder / f"f{n}"
        sub.mkdir()
        (sub / "index.html").write_bytes(b"x" * 5000)
    return (time.process_time() - started) * 1000 / count


def cpu_speed(loops: int = 10_000_000) -> float:
    """Seconds of CPU a fixed pure-Python loop takes, now: how fast this shared machine runs.

    A rough gauge of a slower machine against a slower build: on 2026-12-02 a loop like it took
    2.78 to 3.20 s of CPU at a quiet hour and 3.32 to 4.23 s at a busy one, while the same
    no-change build's CPU went from 1.9 to 3.3 s (a build also waits on memory, which neighbours
    share).
    """
    started = time.process_time()
    total = 0
    for n in range(loops):
        total += n * n % 7
    return time.process_time() - started


def du(folder: Path) -> tuple[float, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6, len(files)


def _row(size: int, step: str, r: dict[str, Any]) -> str:
    workers = f" ({r['workers']} workers: {r['workers_mb']:.0f} MB each at most)" if r["workers"] else ""
    return (
        f"| {size:,} | {step} | {r['total']:.2f} s | {r['cpu']:.1f} s / {r['pagefind_cpu']:.1f} s"
        f" | {r['render']:.2f} s | {r['search']:.2f} s"
        f" ({r['indexed']} of {r['parts']} parts, {r['pages_indexed']:,} pages) | {r['written']:,} of {r['files']:,}"
        f" | {r['self_mb']:.0f} MB{workers} | {r['pagefind_mb']:.0f} MB | {r['largest_kb']:.0f} KB |"
    )


# ------------------------------------------------------------------ the channel in Chromium


def browser_figures(site: Path, runs: int = 7) -> dict[str, Any]:
    """First view, load, sort and filter of the ``bugs`` channel, in Chromium through Playwright."""
    from playwright.sync_api import sync_playwright

    from codexmem.render.site.serve import make_server

    server = make_server(site, port=0, prefix="/site/", quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/site/channels/bugs/"
    first_view = (site / "channels/bugs/index.html").stat().st_size
    out: dict[str, Any] = {"first_view_kb": first_view / 1024}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(url)
            started = time.perf_counter()
            page.evaluate(
                "() => new Promise(r => { const t = setInterval(() => {"
                " if (performance.getEntriesByType('resource').filter(e => e.name.includes('.json')).length"
                " >= JSON.parse(document.querySelector('[data-table]').dataset.chunks).length)"
                " { clearInterval(t); r(); } }, 5); })"
            )
            out["load_all_ms"] = (time.perf_counter() - started) * 1000
            out["rows"] = page.evaluate("document.querySelector('[data-table]').dataset.total")
            sorts, filters = [], []
            for n in range(runs):
                sorts.append(_timed(page, "document.querySelector('#items thead th[data-key=points] button').click()"))
                value = ("fixed", "new")[n % 2]
                filters.append(
                    _timed(
                        page,
                        "(() => { const s = document.querySelector('select[name=status]');"
                        f" s.value = '{value}'; s.dispatchEvent(new Event('change')); }})()",
                    )
                )
            out["sort_ms"] = statistics.median(sorts)
            out["filter_ms"] = statistics.median(filters)
            page.goto(url + "?page=2")
            page.wait_for_function("!document.querySelector('[aria-busy=true]')")
            count = page.inner_text("[data-count]")
            out["page_2"] = count
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    out["search_ms"], out["search_requests"] = first_search(site)
    return out


def _timed(page: Any, action: str) -> float:
    """Milliseconds from the action to the table redrawn (the list's drawn event), in the page's clock."""
    ms: float = page.evaluate(
        "(action) => new Promise(resolve => {"
        " const t0 = performance.now();"
        " document.addEventListener('table:drawn', () => requestAnimationFrame(() => resolve(performance.now() - t0)),"
        " {once: true});"
        " (0, eval)(action); })",
        action,
    )
    return ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sizes", type=note_sizes, default="1000,5000,10000", help="note counts (each with as many items)"
    )
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium measurement")
    parser.add_argument(
        "--cold-repeat",
        type=int,
        default=0,
        metavar="N",
        help="N more cold builds per size, one row each (how much the machine's speed moves)",
    )
    parser.add_argument("--build-once", nargs=2, type=Path, metavar=("STORE", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--full", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_repeat < 0:
        parser.error(f"argument --cold-repeat: must be 0 or more, got {args.cold_repeat}")
    if args.keep is not None and args.keep.exists() and not args.keep.is_dir():
        parser.error(f"argument --keep: {args.keep} is a file; give a folder (made if missing)")
    if args.build_once:
        print(json.dumps(build_once(args.build_once[0], args.build_once[1], args.full)))
        return 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="site-bench-"))
    rows = []
    probes: dict[int, float] = {}
    speeds: dict[int, float] = {}
    browser: dict[str, Any] = {}
    try:
        sizes = args.sizes
        for size in sizes:
            root = work / f"store-{size}"
            if not (root / "codexmem.yaml").is_file():
                started = time.perf_counter()
                # Made aside and moved in whole: a run stopped halfway leaves no store that a
                # rerun with the same --keep would take for a finished one.
                partial = work / f".store-{size}.partial"
                shutil.rmtree(partial, ignore_errors=True)
                shutil.rmtree(root, ignore_errors=True)
                generate(partial, notes=size, items=size)
                partial.rename(root)
                print(f"generated {size:,} notes and items in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            out = work / f"site-{size}"
            _clear(root, out)
            os.sync()
            probes[size] = creation_cost(work / f"probe-{size}")
            speeds[size] = cpu_speed()
            rows.append((size, "cold", measure(root, out, full=True)))
            rows.append((size, "no change", measure(root, out, full=False)))
            change_one_note(Store(root))
            rows.append((size, "one note edited", measure(root, out, full=False)))
            for run in range(args.cold_repeat):
                # Into a folder of its own: deleting the last build's 20,000-odd files first would
                # slow this one's file creation (see _clear) and measure the deletion instead.
                again = work / f"site-{size}-cold-{run + 2}"
                _clear(root, again)
                rows.append((size, f"cold, run {run + 2}", measure(root, again, full=True)))
            mb, files = du(out)
            print(f"{size:,}: {files:,} files, {mb:.1f} MB", file=sys.stderr)
            if size == max(sizes) and not args.no_browser:
                browser = browser_figures(out)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
        else:  # deleted after the builds: deleting files slows the next creations (see _clear)
            for size in probes:
                shutil.rmtree(work / f"probe-{size}", ignore_errors=True)
    print(
        "| notes (and items) | build | wall | CPU build / children | render | search after the pages"
        " | files written | codexmem peak | Pagefind peak | largest page |"
    )
    print("|---:|---|---:|---:|---:|---|---:|---:|---:|---:|")
    for size, step, r in rows:
        print(_row(size, step, r))
    print()
    for size, probe in probes.items():
        print(
            f"Before the {size:,} builds, creating a folder and a 5 KB file in it cost {probe:.3f} ms of CPU,"
            f" and a fixed Python loop (bench.site_build.cpu_speed) took {speeds[size]:.2f} s of CPU."
        )
    if browser:
        print()
        print(
            f"Channel of {int(browser['rows']):,} items in Chromium: first view"
            f" {browser['first_view_kb']:.0f} KB of HTML;"
            f" every row loaded {browser['load_all_ms']:.0f} ms after the page; sort {browser['sort_ms']:.1f} ms,"
            f" filter {browser['filter_ms']:.1f} ms (median of 7, click to redrawn table); ?page=2 shows"
            f' "{browser["page_2"]}"'
        )
        print(
            f"First search of a visit (search/?q={SEARCH_QUERY}, a fresh browser context):"
            f" {browser['search_ms']:.0f} ms from the navigation to the results, {browser['search_requests']}"
            f" requests to the search bundles (median of 3)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
