"""Costs flat in every dimension: p50 of the affected calls with the store's total fixed, smallest vs largest.

Two stores of exactly 10,000 notes (and 10,000 items) are built once and cached under /tmp:

* ``spread``, every dimension at its small end: 20 notes a session (450 sessions of the project
  over 45 workspaces, 10 sessions in the measured workspace), one handoff a session, 10 distinct
  tags in the project, a file path of its own for each note, one related project (1,000 notes),
  items in 50 channels of 200, every item at version 1;
* ``packed``, every dimension at its large end at once: all 9,000 notes of the project in one
  session, 2,000 handoffs in one session, 5,000 sessions in the measured workspace, 10,000
  distinct tags, one file path named by every note, 100 related projects (10 notes each), all
  10,000 items in one channel, one item edited 2,000 times (2,001 versions and events).

Each row is one call, measured in process through the services (no MCP transport), alternating
between the two stores in one run, each store a fresh working copy of the cached one. Both ends
are the same code, so a ratio above 1 is work that grows with the dimension. The largest case of
every dimension is in one store, so a flat row is flat in all of them at once.

    .venv/bin/python -m bench.flat [--repeat 15]

To compare with another checkout, run the same file with that checkout's interpreter (its
editable install provides ``codexmem``): ``/tmp/flat-base/.venv/bin/python bench/flat.py``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # run as a file (another checkout's interpreter): scripts/ and bench/
    sys.path.append(str(HERE.parent))

from bench import generate  # noqa: E402
from scripts import bugs_channel  # noqa: E402

FLAT_VERSION = 1
CACHE = Path(os.environ.get("CODEXMEM_FLAT_CACHE", "/tmp/codexmem-flat"))
NOTES = 10_000
ITEMS = 10_000
RELATED_NOTES = 1_000
START = datetime(2025, 11, 20, 9, 0, tzinfo=UTC)
SYSTEM_ID = "sys_flat"
APP = "proj_app"
TARGET = 1.5


@dataclass(frozen=True)
class Shape:
    """How one store spreads its fixed totals over the dimensions."""

    name: str
    notes_per_session: int
    sessions_in_workspace: int
    handoffs_in_one_session: int
    tag_pool: int
    shared_path: bool
    related_projects: int
    items_per_channel: int
    hot_item_edits: int


SPREAD = Shape("spread", 20, 10, 1, 10, False, 1, 200, 0)
PACKED = Shape("packed", NOTES - RELATED_NOTES, 5_000, 2_000, 10_000, True, 100, ITEMS, 2_000)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=generate.GIT_ENV, check=True, capture_output=True)


def _config(shape: Shape) -> dict[str, Any]:
    related = [f"proj_rel_{k}" for k in range(shape.related_projects)]
    projects: list[dict[str, Any]] = [
        {
            "id": APP,
            "name": "app",
            "system": SYSTEM_ID,
            "remotes": ["git@github.com:example/app.git"],
            "relations": [{"project": p, "relation_type": "depends_on"} for p in related],
        }
    ]
    projects += [{"id": p, "name": p[5:], "system": SYSTEM_ID} for p in related]
    return {
        "format": 2,
        "system": {"id": SYSTEM_ID, "name": "flat"},
        "projects": projects,
        "privacy": {"secrets": "refuse"},
        "sessions": {"idle_recovery_minutes": 120},
    }


def _ts(at: datetime) -> str:
    return generate._ts(at)


class Builder:
    """Writes one shape's records through ``Store.transaction``, ~500 puts a transaction."""

    def __init__(self, base: Path, shape: Shape) -> None:
        from codexmem.store.store import Store

        self.shape = shape
        self.rng = random.Random(17)
        self.store = Store(generate.store_dir(base))
        self.at = START
        self.puts: list[tuple[Any, Any]] = []

    def tick(self) -> datetime:
        self.at += timedelta(seconds=2)
        return self.at

    def put(self, kind: Any, record: Any) -> None:
        self.puts.append((kind, record))
        if len(self.puts) >= generate.BATCH:
            self.flush()

    def flush(self) -> None:
        if not self.puts:
            return
        with self.store.transaction("cli:bench", at=_ts(self.at)) as txn:
            for kind, record in self.puts:
                txn.put(kind, record, event_type="created", changed=[])
        self.puts = []

    def session(self, scope: Any) -> str:
        from codexmem.models.records import Session
        from codexmem.store.layout import SESSION

        at = self.tick()
        sid = self.store.new_id("sess", at)
        self.put(
            SESSION,
            Session(
                session_id=sid,
                version=1,
                scope=scope,
                status="ended",
                task="",
                branch_name="main",
                started_at=_ts(at),
                updated_at=_ts(at),
                ended_at=_ts(at),
            ),
        )
        return sid

    def note(self, scope: Any, sid: str, i: int) -> None:
        from codexmem.memory.notes import build_note
        from codexmem.store.layout import NOTE

        at = self.tick()
        area = self.rng.choice(generate.AREAS)
        tags = sorted({f"tag{self.rng.randrange(self.shape.tag_pool)}" for _ in range(3)})
        path = "src/orders/validate.py" if self.shape.shared_path else f"src/mod{i // 50}/file{i}.py"
        self.put(
            NOTE,
            build_note(
                note_id=self.store.new_id("note", at),
                scope=scope,
                session_id=sid,
                note_type=self.rng.choice(("decision", "bugfix", "discovery", "constraint", "todo")),
                title=f"{generate._capital(area)} note {i}",
                content=generate._content(self.rng, area),
                importance=self.rng.choice((2, 3, 3, 4, 5)),
                tags=tags,
                file_paths=[path],
                status="active",
                source="codex_explicit",
                at=_ts(at),
            ),
        )

    def handoff(self, scope: Any, sid: str, i: int, status: str) -> None:
        from codexmem.memory.handoffs import new_handoff
        from codexmem.store.layout import HANDOFF

        at = _ts(self.tick())
        self.put(
            HANDOFF,
            new_handoff(
                self.store.new_id("handoff", at),
                scope,
                sid,
                "final",
                status,
                at,
                task=f"Task {i % 300}",
                summary=f"Where task {i} stands.",
                next_steps=["Go on with it"],
                risks=["None known"],
            ),
        )


def build(shape: Shape, base: Path) -> None:
    """The store of ``shape`` at ``base`` (repo/.codexmem and ws/app, a real clone for bootstrap)."""
    from codexmem.errors import Warnings
    from codexmem.memory.scope import resolve_scope
    from codexmem.models.records import ScopeRef
    from codexmem.records import service
    from codexmem.store.atomic import atomic_write
    from codexmem.store.init import STORE_GITATTRIBUTES, STORE_GITIGNORE
    from codexmem.store.store import Store
    from codexmem.store.yamlio import dump_yaml

    if base.exists():
        shutil.rmtree(base)
    started = time.perf_counter()
    memory = generate.store_dir(base)
    memory.mkdir(parents=True)
    _git(memory.parent, "init", "-q", "-b", "main")
    atomic_write(memory / ".gitignore", STORE_GITIGNORE.encode())
    atomic_write(memory / ".gitattributes", STORE_GITATTRIBUTES.encode())
    atomic_write(memory / "codexmem.yaml", dump_yaml(_config(shape)).encode("utf-8"))
    _git(memory.parent, "add", "-A")
    _git(memory.parent, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "store")
    ws = base / "ws" / "app"
    ws.mkdir(parents=True)
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "remote", "add", "origin", "git@github.com:example/app.git")
    home = resolve_scope(Store(memory), Warnings(), cwd=str(ws)).ref()
    with generate.no_fsync(True):
        b = Builder(base, shape)
        app_notes = NOTES - RELATED_NOTES
        # Sessions of the measured workspace first; notes fill sessions in order, 10 sessions a
        # further workspace when the measured one's are not enough.
        sessions = [(b.session(home), home) for _ in range(shape.sessions_in_workspace)]
        while len(sessions) * shape.notes_per_session < app_notes:
            ws_id = f"ws_app_{len(sessions):08x}"
            scope = ScopeRef(system_id=SYSTEM_ID, project_id=APP, workspace_id=ws_id)
            sessions += [(b.session(scope), scope) for _ in range(10)]
        for i in range(app_notes):
            sid, scope = sessions[i // shape.notes_per_session]
            b.note(scope, sid, i)
        handoffs = 2_000
        for i in range(handoffs):
            sid, scope = sessions[0] if shape.handoffs_in_one_session > 1 else sessions[i % len(sessions)]
            b.handoff(scope, sid, i, "open" if i % 10 == 0 else "completed")
        for k in range(shape.related_projects):
            scope = ScopeRef(system_id=SYSTEM_ID, project_id=f"proj_rel_{k}", workspace_id=f"ws_rel_{k:08x}")
            per_project = RELATED_NOTES // shape.related_projects
            sid = ""
            for i in range(per_project):
                if i % 20 == 0:
                    sid = b.session(scope)
                b.note(scope, sid, 100_000 + k * per_project + i)
        b.flush()
        print(f"{shape.name}: memory written at {time.perf_counter() - started:.0f} s", file=sys.stderr)
        for c in range(ITEMS // shape.items_per_channel):
            schema = {**bugs_channel.BUGS_SCHEMA, "record_channel_id": f"bugs{c}"}
            service.add_channel(b.store, f"bugs{c}", schema, actor="cli:bench", now=b.tick())
        rng = random.Random(5)
        for c in range(ITEMS // shape.items_per_channel):
            for lo in range(0, shape.items_per_channel, generate.BATCH):
                _items(b, f"bugs{c}", c * shape.items_per_channel + lo, shape.items_per_channel - lo, rng)
        hot = b.store.index.select(_kind("item"), where={"channel": "bugs0"}, order=[("id", False)], limit=1)[0]
        for _ in range(shape.hot_item_edits):
            service.edit_item(
                b.store,
                "bugs0",
                hot["item_id"],
                bugs_channel.triage_values(rng, b.tick()),
                expected_version=None,
                idempotency_key=None,
                actor="cli:bench",
                now=b.tick(),
            )
        b.store.fresh_index(full=True)
        b.store.index.close()
    manifest = {"flat_version": FLAT_VERSION, "shape": shape.name, "seconds": round(time.perf_counter() - started, 1)}
    (base / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    print(f"built {shape.name} in {manifest['seconds']} s: {base}", file=sys.stderr)


def _kind(name: str) -> Any:
    from codexmem.store.layout import KINDS

    return KINDS[name]


def _items(b: Builder, channel: str, first: int, count: int, rng: random.Random) -> None:
    from codexmem.models.records import Item
    from codexmem.records import service
    from codexmem.records.fields import validate_values
    from codexmem.records.values import in_schema_order

    schema = service.get_schema(b.store, channel)
    with b.store.transaction("cli:bench", at=_ts(b.at)) as txn:
        for n in range(first, first + min(count, generate.BATCH)):
            at = _ts(b.tick())
            values = validate_values(
                schema, bugs_channel.bug_values(rng, n), existing=None, relation_exists=lambda c, r: True, partial=False
            )
            item = Item(
                item_id=b.store.new_id("item", at),
                record_channel_id=channel,
                version=1,
                created_at=at,
                updated_at=at,
                values=in_schema_order(schema, values),
            )
            txn.put(_kind("item"), item, event_type="created", changed=sorted(values))


def ensure(shape: Shape) -> Path:
    """The cached store of ``shape`` (built when missing or of another bench version); its index brought up to
    date by the codexmem running this (another checkout may rebuild it)."""
    from codexmem.store.store import Store

    base = CACHE / f"v{FLAT_VERSION}" / shape.name
    try:
        if json.loads((base / "manifest.json").read_text("utf-8"))["flat_version"] == FLAT_VERSION:
            store = Store(generate.store_dir(base))
            store.fresh_index(full=True)
            store.index.close()
            return base
    except (OSError, ValueError, KeyError):
        pass
    build(shape, base)
    return base


# ------------------------------------------------------------------------------ the calls


class Case:
    """One working copy of a shape's store and what the calls need to know about it."""

    def __init__(self, shape: Shape, base: Path, dest: Path) -> None:
        from codexmem.errors import Warnings
        from codexmem.memory.scope import resolve_scope
        from codexmem.store.layout import HANDOFF, ITEM, NOTE, SESSION
        from codexmem.store.store import Store

        self.shape = shape
        shutil.rmtree(dest, ignore_errors=True)
        generate.working_copy(base, dest)
        # The cached work tree itself (calls only read it): a workspace's id is derived from its
        # path, so a copy elsewhere would be another workspace holding none of the sessions.
        self.cwd = str(base / "ws" / "app")
        self.store = Store(generate.store_dir(dest))
        index = self.store.fresh_index(full=True)
        self.scope = resolve_scope(self.store, Warnings(), cwd=self.cwd).ref()
        # The session holding the most notes and the one holding the most handoffs (the first ones).
        home = {"workspace_id": self.scope.workspace_id}
        sessions = index.select(SESSION, where=home, order=[("created_at", False)], limit=1)
        self.session = sessions[0]["session_id"]
        self.note = index.select(NOTE, where={"session_id": self.session}, limit=1)[0]
        self.handoff = index.select(HANDOFF, where={"session_id": self.session}, limit=1)[0]
        self.hot = index.select(ITEM, where={"channel": "bugs0"}, order=[("id", False)], limit=1)[0]
        self.since = index.public_seq(index.last_seq() - 20)
        self.now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
        self.counter = itertools.count()
        self.reopen("paused")  # the generated session takes writes again (an ended one takes none)

    def tick(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now

    def reopen(self, status: str) -> None:
        """The measured session in ``status``, not ended, written as a bookkeeping change."""
        from codexmem.store.layout import SESSION

        with self.store.transaction("cli:bench") as txn:
            record = txn.get(SESSION, self.session)
            assert record is not None
            reopened = {k: v for k, v in record.items() if k != "ended_at"}
            txn.put(
                SESSION,
                {**reopened, "status": status, "version": record["version"] + 1},
                event_type="status_changed",
                changed=["status", "ended_at"],
            )


def _warn() -> Any:
    from codexmem.errors import Warnings

    return Warnings()


def reopen_idle(c: Case) -> None:
    """Before a recovery row: the measured session active again, and idle (the clock three hours on)."""
    c.now += timedelta(hours=3)
    c.reopen("active")


PREPARE: dict[str, Callable[[Case], None]] = {"memory_bootstrap_session (recovers a session)": reopen_idle}
"""Rows whose call needs a state set up before each timed call (untimed)."""


def calls() -> list[tuple[str, str, Callable[[Case], Any]]]:
    """(dimensions, call, run) for each row; ``PREPARE`` names the untimed set-up of some."""
    from codexmem.memory import handoffs, notes, retrieval
    from codexmem.records import service

    def save_new(c: Case) -> Any:
        n = next(c.counter)
        return notes.save_note(
            c.store,
            c.tick(),
            _warn(),
            scope=c.scope,
            session_id=c.session,
            note_type="decision",
            title=f"Bench decision {n}",
            content=f"Bench content {n}.",
            importance=3,
            tags=["tag1", f"tag{n}"],
            file_paths=["src/orders/validate.py"],
        )

    def save_same(c: Case) -> Any:
        got = notes.save_note(
            c.store,
            c.tick(),
            _warn(),
            scope=c.scope,
            session_id=c.session,
            note_type=c.note["type"],
            title=c.note["title"],
            content=c.note["content"],
            importance=3,
            tags=c.note["tags"],
            file_paths=c.note["file_paths"],
        )
        assert got["deduplicated"], got
        return got

    def save_handoff(c: Case) -> Any:
        return handoffs.save_handoff(
            c.store,
            c.tick(),
            _warn(),
            scope=c.scope,
            session_id=c.session,
            kind="checkpoint",
            task=c.handoff["task"],
            summary="Still going.",
            next_steps=["Continue"],
            status="open",
            risks=["None"],
        )

    def bootstrap(c: Case, related: bool = False) -> Any:
        return retrieval.bootstrap_session(c.store, c.tick(), _warn(), cwd=c.cwd, include_related_projects=related)

    def recovers(c: Case) -> Any:
        got = bootstrap(c)
        assert c.session in got["recovered_sessions"], got["recovered_sessions"]
        return got

    def recent(c: Case) -> Any:
        return retrieval.get_recent(c.store, _warn(), scope=c.scope)

    def search(c: Case, related: bool = False) -> Any:
        return retrieval.search(
            c.store, c.now, _warn(), scope=c.scope, query="payment validation", include_related_projects=related
        )

    def create_item(c: Case) -> Any:
        n = 900_000 + next(c.counter)
        values = {"ticket": f"NEW-{n}", "title": "Export stalls", "status": "new", "reporter": "ines@example.com"}
        return service.create_item(c.store, "bugs0", values, actor="cli:bench", now=c.tick())

    def edit_hot(c: Case) -> Any:
        values = {"points": 3 if next(c.counter) % 2 else 5}
        return service.edit_item(
            c.store,
            "bugs0",
            c.hot["item_id"],
            values,
            expected_version=None,
            idempotency_key=None,
            actor="cli:bench",
            now=c.tick(),
        )

    return [
        ("notes/session, tags, shared paths", "memory_save_note (new)", save_new),
        ("notes/session", "memory_save_note (duplicate)", save_same),
        ("handoffs/session", "memory_save_handoff (open, same task)", save_handoff),
        ("sessions/workspace, handoffs, notes", "memory_bootstrap_session", bootstrap),
        ("related projects", "memory_bootstrap_session (related)", lambda c: bootstrap(c, True)),
        ("notes/session", "memory_bootstrap_session (recovers a session)", recovers),
        ("sessions/workspace, handoffs", "memory_get_recent", recent),
        ("tags, shared paths, notes/session", "memory_search", search),
        ("related projects", "memory_search (related)", lambda c: search(c, True)),
        ("items/channel", "create_item (unique ticket)", create_item),
        (
            "items/channel",
            "list_items",
            lambda c: service.list_items(c.store, "bugs0", before_id=None, limit=20, now=c.now),
        ),
        (
            "events/record",
            "read_item (hot)",
            lambda c: service.read_item(c.store, "bugs0", c.hot["item_id"], now=c.now),
        ),
        ("events, versions/record", "edit_item (hot)", edit_hot),
        (
            "events/record",
            "poll_resource_events",
            lambda c: service.poll_events(c.store, since=c.since, channel_id=None, limit=50),
        ),
    ]


def measure(cases: list[Case], repeat: int) -> list[tuple[str, str, float, float]]:
    """p50 (ms) of each call in each case, the cases alternating call by call."""
    rows = []
    for dims, name, run in calls():
        times: list[list[float]] = [[] for _ in cases]
        prepare = PREPARE.get(name)
        for case in cases:
            if prepare is not None:
                prepare(case)
            run(case)  # warm: first-call caches, the bootstrap's first recovery
        for _ in range(repeat):
            for n, case in enumerate(cases):
                if prepare is not None:
                    prepare(case)
                started = time.perf_counter()
                run(case)
                times[n].append((time.perf_counter() - started) * 1000)
        small, large = (statistics.median(t) for t in times)
        rows.append((dims, name, small, large))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="calls per row and store (p50 of them)")
    parser.add_argument("--work", type=Path, default=CACHE / "work", help="where the working copies go")
    args = parser.parse_args(argv)
    import codexmem

    bases = [ensure(SPREAD), ensure(PACKED)]
    with generate.no_fsync(False):
        cases = [
            Case(s, b, args.work / f"{os.getpid()}-{s.name}") for s, b in zip((SPREAD, PACKED), bases, strict=True)
        ]
    rows = measure(cases, args.repeat)
    print(f"codexmem at {Path(codexmem.__file__).parent.parent}; load average {os.getloadavg()[0]:.2f}")
    print(f"{'dimension':38} | {'call':38} | {'small p50':>9} | {'large p50':>9} | ratio")
    print("-" * 38 + "-|-" + "-" * 38 + "-|-----------|-----------|------")
    worst = 0.0
    for dims, name, small, large in rows:
        ratio = large / small if small else float("inf")
        worst = max(worst, ratio)
        flag = "" if ratio <= TARGET else "  > target"
        print(f"{dims:38} | {name:38} | {small:7.2f}ms | {large:7.2f}ms | {ratio:4.2f}{flag}")
    print(f"worst ratio {worst:.2f} (target <= {TARGET}); load average now {os.getloadavg()[0]:.2f}")
    for case in cases:
        case.store.index.close()
        shutil.rmtree(case.store.root.parent.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
