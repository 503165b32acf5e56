"""Helpers shared by the store tests: real stores, real git repositories, record factories.

Imported explicitly (``from store_fixtures import ...``) rather than through conftest.py, so each
test module says what it uses.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from codexmem.errors import CodexmemError
from codexmem.models.records import Handoff, ImportAudit, Note, ScopeRef, Session
from codexmem.store.ids import new_id
from codexmem.store.init import init_store
from codexmem.store.layout import HANDOFF, IMPORT, NOTE, SESSION, Kind
from codexmem.store.store import Store
from codexmem.timeutil import now_ts

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

# Keep the developer's global and system git config out of the repositories the tests build.
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}

SCOPE = ScopeRef(system_id="sys_test", project_id="proj_test", workspace_id="ws_test_main")
ACTOR = "cli:tester"


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the real git binary with a clean configuration."""
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=check, capture_output=True, text=True)


def make_repo(path: Path, *, remote: str | None = None) -> Path:
    """A git work tree with a local identity and one commit on ``main``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test User")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "commit.gpgsign", "false")
    if remote is not None:
        git(path, "remote", "add", "origin", remote)
    (path / "README.md").write_text("hello\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "init")
    return path


def commit_all(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def new_store(root: Path, *, secrets: str = "refuse") -> Store:
    """A shared store (no project) at ``root``, created by ``init_store`` outside any repository."""
    init_store(root, cwd=root.parent, system_name="test", shared=True)
    if secrets != "refuse":
        config = root / "codexmem.yaml"
        config.write_text(config.read_text().replace("secrets: refuse", f"secrets: {secrets}"))
    return Store(root)


def session_model(*, scope: ScopeRef = SCOPE, session_id: str | None = None, at: str | None = None) -> Session:
    at = at or now_ts()
    return Session(
        session_id=session_id or new_id("sess"),
        version=1,
        scope=scope,
        status="active",
        task="test task",
        started_at=at,
        updated_at=at,
    )


def note_model(session_id: str, *, scope: ScopeRef = SCOPE, title: str = "a note", **fields: Any) -> Note:
    at = now_ts()
    values: dict[str, Any] = {
        "note_id": new_id("note"),
        "version": 1,
        "scope": scope,
        "session_id": session_id,
        "type": "discovery",
        "title": title,
        "importance": 3,
        "created_at": at,
        "updated_at": at,
        "content": f"content of {title}",
    }
    values.update(fields)
    return Note(**values)


def handoff_model(session_id: str, *, scope: ScopeRef = SCOPE, **fields: Any) -> Handoff:
    at = now_ts()
    values: dict[str, Any] = {
        "handoff_id": new_id("handoff"),
        "version": 1,
        "scope": scope,
        "session_id": session_id,
        "kind": "final",
        "task": "a task",
        "status": "open",
        "next_steps": ["next"],
        "created_at": at,
        "updated_at": at,
        "summary": "a summary",
    }
    values.update(fields)
    return Handoff(**values)


def import_model(session_id: str, *, scope: ScopeRef = SCOPE, **fields: Any) -> ImportAudit:
    at = now_ts()
    values: dict[str, Any] = {
        "import_id": new_id("import"),
        "version": 1,
        "scope": scope,
        "session_id": session_id,
        "source": "watcher_import",
        "imported_at": at,
        "updated_at": at,
    }
    values.update(fields)
    return ImportAudit(**values)


def start_session(store: Store, *, scope: ScopeRef = SCOPE) -> str:
    """Write a new active session; return its id."""
    model = session_model(scope=scope)
    with store.transaction(ACTOR) as txn:
        txn.put(SESSION, model, event_type="created", changed=[])
    return model.session_id


def write_note(store: Store, session_id: str, *, title: str = "a note", **fields: Any) -> str:
    model = note_model(session_id, scope=fields.pop("scope", SCOPE), title=title, **fields)
    with store.transaction(ACTOR) as txn:
        txn.put(NOTE, model, event_type="created", changed=[])
    return model.note_id


def bump(store: Store, kind: Kind, rid: str, changes: dict[str, Any], *, event_type: str = "updated") -> int:
    """Write the next version of a record with ``changes`` applied; return the new version."""
    with store.transaction(ACTOR) as txn:
        current = txn.get(kind, rid)
        assert current is not None, f"{kind.name} {rid} does not exist"
        data = {**current, **changes, "version": int(current["version"]) + 1, "updated_at": now_ts()}
        txn.put(kind, data, event_type=event_type, changed=sorted(changes))
    return int(data["version"])


def shard_events(root: Path) -> list[dict[str, Any]]:
    """Every well-formed event line of every shard of a store, in file order."""
    from codexmem.store import events as ev

    out: list[dict[str, Any]] = []
    for _rel, path in ev.list_shards(root / "events"):
        out.extend(line.event for line in ev.read_lines(path) if line.event is not None)
    return out


def index_snapshot(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Every record of every memory kind as the index holds it, in a stable order."""
    index = store.index
    order = [("id", False)]
    return {kind.name: index.select(kind, order=order) for kind in (SESSION, NOTE, HANDOFF, IMPORT)}


def assert_index_equals_rebuild(store: Store) -> dict[str, list[dict[str, Any]]]:
    """The index as kept equals one rebuilt from the files; returns what it held."""
    snapshot = index_snapshot(store)
    store.index.rebuild()
    assert index_snapshot(store) == snapshot
    return snapshot


def index_event_ids(store: Store) -> set[str]:
    return {r[0] for r in store.index.conn.execute("SELECT event_id FROM events")}


# ---------------------------------------------------------------- writer processes


def append_to_note(store: Store, note_id: str, marker: str, *, optimistic: bool) -> int:
    """Append ``marker`` as a line of a note's content; return the version written.

    ``optimistic`` reads outside the lock and relies on the version check (retrying on a
    conflict), as an agent editing from an earlier read does; otherwise reads under the lock.
    """
    while True:
        seen = store.read_file(NOTE, note_id) if optimistic else None
        try:
            with store.transaction(ACTOR) as txn:
                current = seen or txn.get(NOTE, note_id)
                assert current is not None
                data = {
                    **current,
                    "content": current["content"] + "\n" + marker,
                    "version": int(current["version"]) + 1,
                    "updated_at": now_ts(),
                }
                txn.put(NOTE, data, event_type="updated", changed=["content"])
            return int(data["version"])
        except CodexmemError as exc:
            if exc.code != "ERR_VERSION_CONFLICT" or not optimistic:
                raise


def concurrent_writer(
    root: str, worker: int, writes: int, shared: list[str], session: str, start: Any, results: Any
) -> None:
    """One of several processes writing to one store at once (run under multiprocessing)."""
    store = Store(Path(root))
    acked: list[tuple[str, str, int]] = []
    start.wait()
    for n in range(writes):
        if n % 3 == 0:
            note_id = shared[(worker + n) % len(shared)]
            version = append_to_note(store, note_id, f"w{worker}-{n}", optimistic=n % 2 == 0)
            acked.append(("update", note_id, version))
        else:
            acked.append(("create", write_note(store, session, title=f"w{worker} n{n}"), 1))
    results.put((worker, acked))


def crash_writer(root: Path, wfd: int, seed: int, shared: list[str], session: str) -> None:
    """Write forever (until SIGKILL), reporting each acknowledged write on ``wfd`` after it returns."""
    import random

    rng = random.Random(seed)
    store = Store(root)
    own: list[str] = []
    n = 0
    while True:
        n += 1
        roll = rng.random()
        if roll < 0.5:
            note_id = write_note(store, session, title=f"crash {seed} {n}", content="x\n" * rng.randint(1, 400))
            own.append(note_id)
            line = f"put note {note_id} 1"
        elif roll < 0.75:
            note_id = rng.choice(shared)
            line = f"put note {note_id} {append_to_note(store, note_id, f's{seed}-{n}', optimistic=True)}"
        elif roll < 0.9:
            note = note_model(session, title=f"imported {seed} {n}", source="watcher_import")
            audit = import_model(session, durable_memory_id=note.note_id, external_id=f"watcher:{seed}:{n}")
            with store.transaction(ACTOR) as txn:
                txn.put(NOTE, note, event_type="created", changed=[])
                txn.put(IMPORT, audit, event_type="created", changed=[])
            line = f"put note {note.note_id} 1\nput import {audit.import_id} 1"
        elif own:
            note_id = own.pop(rng.randrange(len(own)))
            # Announced first: killed mid-delete, the note may be gone before its event is logged.
            os.write(wfd, f"try del note {note_id}\n".encode())
            with store.transaction(ACTOR) as txn:
                txn.delete(NOTE, note_id)
            line = f"del note {note_id} 2"
        else:
            continue
        os.write(wfd, (line + "\n").encode())
