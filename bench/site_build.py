"""Measure ``codexmem site`` on a large store and on store-example.

Generates a store of 2,000 notes (with the sessions, handoffs and imports around them) and a
2,000-item bug tracker channel through ``Store.transaction`` (many puts per transaction), then
measures a full build, an incremental build after one note changes, and the output (files and
size), and does the same for a copy of ``store-example/`` (copied so its folder is not touched).

    .venv/bin/python bench/site_build.py [--notes 2000] [--items 2000] [--keep DIR]

Prints a Markdown table. Render and Pagefind times are given apart: the render is incremental,
Pagefind always indexes the whole folder.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from codexmem.models.records import Handoff, ImportAudit, Item, Note, ScopeRef, Session
from codexmem.render.site import BuildReport, build_site
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
                session_id=_id("sess", at, rng),
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
                note_id=_id("note", at, rng),
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
                handoff_id=_id("handoff", at, rng),
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
            import_id=_id("import", START + timedelta(hours=n), rng),
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
                item_id=_id("item", at, rng),
                record_channel_id="bugs",
                version=1,
                created_at=_ts(at),
                updated_at=_ts(at),
                values=values,
            )
        )
    _put_all(store, ITEM, models)


def _id(prefix: str, at: datetime, rng: random.Random) -> str:
    from ulid import ULID

    return f"{prefix}_{ULID.from_int((int(at.timestamp() * 1000) << 80) | rng.getrandbits(80))}"


def change_one_note(store: Store) -> str:
    """Edit one note a minute after the store's latest event, as a team's next change would be.

    (A change stamped months later would also move the default ``now`` far enough to change
    every item's ``days_since`` formula, which measures formulas rather than incrementality.)
    """
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


def du(folder: Path) -> tuple[str, int]:
    """Disk usage as ``du -sh`` reports it (4 KiB blocks) and the bytes of the files, and the file count."""
    on_disk = subprocess.run(["du", "-sh", str(folder)], capture_output=True, text=True, check=True).stdout.split()[0]
    files = [p for p in folder.rglob("*") if p.is_file()]
    apparent = sum(p.stat().st_size for p in files) / 1e6
    return f"{on_disk} ({apparent:.1f} MB in files)", len(files)


def measure(name: str, store: Store, out: Path) -> dict[str, Any]:
    records = sum(store.fresh_index().count(k) for k in (SESSION, NOTE, HANDOFF, IMPORT, ITEM))
    started = time.perf_counter()
    full = build_site(store, out, full=True)
    full_total = time.perf_counter() - started
    change_one_note(store)
    started = time.perf_counter()
    incremental = build_site(store, out)
    incremental_total = time.perf_counter() - started
    size, files = du(out)
    return {
        "name": name,
        "records": records,
        "full": full,
        "full_total": full_total,
        "inc": incremental,
        "inc_total": incremental_total,
        "size": size,
        "files": files,
    }


def _row(r: dict[str, Any]) -> str:
    full: BuildReport = r["full"]
    inc: BuildReport = r["inc"]
    return (
        f"| {r['name']} | {r['records']:,} | {full.pages:,} | {full.seconds:.2f} s | {full.search_seconds or 0:.2f} s"
        f" | {r['full_total']:.2f} s | {inc.seconds:.2f} s ({inc.written} written, {inc.markdown} Markdown)"
        f" | {inc.search_seconds or 0:.2f} s | {r['inc_total']:.2f} s | {r['size']} | {r['files']:,} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="site-bench-"))
    results = []
    try:
        started = time.perf_counter()
        store = generate(work / "big", notes=args.notes, items=args.items)
        print(
            f"generated {args.notes:,} notes and {args.items:,} items in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        results.append(measure(f"{args.notes:,} notes + {args.items:,} items", store, work / "big_site"))
        example = REPO / "store-example"
        if (example / "codexmem.yaml").is_file():
            shutil.copytree(example, work / "example", ignore=shutil.ignore_patterns(".cache", ".lock"))
            results.append(measure("store-example", Store(work / "example"), work / "example_site"))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(
        "| store | records | pages | full render | Pagefind | full total | incremental render | Pagefind"
        " (whole folder) | incremental total | size | files |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    for r in results:
        print(_row(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
