"""Helpers the hardening tests share: a seeded store, envelope checks, sentinels, raw stdio, mounts.

Imported explicitly (``from hardening_fixtures import ...``), like the other ``*_fixtures`` modules,
whose helpers are reused rather than copied.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.from_thread
import pytest
from mcp import Client
from memory_fixtures import make_repo, session_in
from records_fixtures import ALL_TYPES, BUGS_SCHEMA, bug_values

from codexmem.envelope import MAX_ANSWER_BYTES, compact
from codexmem.errors import ERROR_CODES, WARNING_CODES, Warnings
from codexmem.mcp.server import build_server
from codexmem.mcp.state import ServerState
from codexmem.memory import handoffs, imports, notes
from codexmem.models.records import ScopeRef
from codexmem.records import service
from codexmem.store.atomic import TMP_PREFIX
from codexmem.store.init import init_store
from codexmem.store.store import JOURNAL_DIR, Store

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
NOW = datetime(2026, 3, 13, 10, 30, tzinfo=UTC)
REMOTE = "git@github.com:example/order-web.git"
PROJECT = "proj_order_web"
MARKER = "CXM-SENTINEL-5b1e0c7d"
"""A string that exists only in sentinel files outside the store: it must never show up in an answer."""
PERSON = "cli:tester"


# ------------------------------------------------------------------ a seeded store


@dataclass
class Seeded:
    """A store with real records of every kind, and the ids a valid-looking call needs."""

    root: Path
    repo: Path
    scope: dict[str, Any]
    session_id: str
    ended_session_id: str
    note_ids: list[str] = field(default_factory=list)
    handoff_ids: list[str] = field(default_factory=list)
    items: dict[str, list[str]] = field(default_factory=dict)

    @property
    def channels(self) -> list[str]:
        return sorted(self.items)


def store_config(relations: list[dict[str, Any]] | None = None) -> str:
    """A shared store's codexmem.yaml declaring the order-web project (with its relations)."""
    config = {
        "format": 2,
        "system": {"id": "sys_order_platform", "name": "order-platform"},
        "projects": [
            {
                "id": PROJECT,
                "name": "order-web",
                "system": "sys_order_platform",
                "remotes": [REMOTE],
                "relations": relations or [],
            }
        ],
        "privacy": {"secrets": "refuse"},
    }
    return json.dumps(config, indent=1) + "\n"  # JSON is YAML


def seed_store(tmp: Path, *, relations: list[dict[str, Any]] | None = None, notes_count: int = 4) -> Seeded:
    """A shared store at ``tmp/store`` for the repository ``tmp/work/order-web``, filled through the services."""
    root = tmp / "store"
    init_store(root, cwd=tmp, system_name="order-platform", shared=True)
    (root / "codexmem.yaml").write_text(store_config(relations))
    repo = make_repo(tmp / "work" / "order-web", remote=REMOTE)
    store = Store(root)
    scope, session_id = session_in(store, repo, now=NOW, task="seed")
    ref = ScopeRef(**{k: scope[k] for k in ("system_id", "project_id", "workspace_id")})
    w = Warnings()
    seeded = Seeded(root, repo, scope, session_id, "")
    for n in range(notes_count):
        saved = notes.save_note(
            store,
            NOW,
            w,
            scope=ref,
            session_id=session_id,
            note_type="decision",
            title=f"Seed decision {n}",
            content=f"Payment enums come from the backend ({n}).",
            importance=3 + n % 3,
            tags=["billing"],
            file_paths=["src/order/validation.ts"],
        )
        seeded.note_ids.append(saved["note"]["note_id"])
    for n in range(2):
        saved = handoffs.save_handoff(
            store,
            NOW,
            w,
            scope=ref,
            session_id=session_id,
            kind="checkpoint",
            task=f"Seed task {n}",
            summary="Enums still diverge.",
            next_steps=["Confirm backend values"],
            status="open",
        )
        seeded.handoff_ids.append(saved["handoff"]["handoff_id"])
    imports.save_imported_note(
        store,
        NOW,
        w,
        scope=ref,
        session_id=session_id,
        source="watcher_import",
        external_id="watcher:event:1",
        payload_hash="sha256:0a1b2c3d4e5f",
        note_type="discovery",
        title="Imported",
        content="From the watcher.",
        importance=3,
    )
    _, ended = session_in(store, repo, now=NOW, task="ended")
    from codexmem.memory.lifecycle import end_session

    end_session(store, NOW, w, session_id=ended, status="ended")
    seeded.ended_session_id = ended
    service.add_channel(store, "bugs", BUGS_SCHEMA, actor=PERSON, now=NOW)
    import random

    rng = random.Random(7)
    seeded.items["bugs"] = [
        service.create_item(store, "bugs", bug_values(rng, n), actor=PERSON, now=NOW)["id"] for n in range(1, 5)
    ]
    service.add_channel(store, "everything", ALL_TYPES, actor=PERSON, now=NOW)
    seeded.items["everything"] = [
        service.create_item(store, "everything", {"text": "short", "number": 1}, actor=PERSON, now=NOW)["id"]
    ]
    store.index.close()
    return seeded


# ------------------------------------------------------------------ the real client, in process


@contextlib.contextmanager
def in_process(state: ServerState) -> Iterator[tuple[Any, Client]]:
    """The real server in this process behind the real client (the legacy handshake Codex uses), for
    sync code: (portal, client); a call is ``portal.call(client.call_tool, name, arguments)``."""
    with (
        anyio.from_thread.start_blocking_portal(backend="asyncio") as portal,
        portal.wrap_async_context_manager(Client(build_server(state), mode="legacy")) as client,
    ):
        yield portal, client


# ------------------------------------------------------------------ answers


def check_envelope(text: str, structured: Any, is_error: bool | None) -> dict[str, Any]:
    """Assert one tool answer is a well-formed envelope within the budget; return it.

    Well-formed: one line of compact JSON, ``ok`` with ``data`` or ``error`` (a known ERR_ code, a
    message, fields naming inputs), known warning codes, the structured copy equal to the text.
    An "internal error" is a bug that escaped every check, never an acceptable refusal.
    """
    assert len(text.encode("utf-8")) <= MAX_ANSWER_BYTES, f"answer of {len(text.encode())} bytes"
    assert "\n" not in text
    envelope = json.loads(text)
    assert isinstance(envelope, dict)
    assert text == compact(envelope)
    if structured is not None:
        assert structured == envelope
    if is_error is not None:
        assert is_error is (not envelope["ok"])
    assert isinstance(envelope.get("warnings"), list)
    for w in envelope["warnings"]:
        assert set(w) == {"code", "message"} and w["code"] in WARNING_CODES, w
    if envelope["ok"] is True:
        assert set(envelope) == {"ok", "data", "warnings"} and isinstance(envelope["data"], dict)
    else:
        assert envelope["ok"] is False and set(envelope) == {"ok", "error", "warnings"}
        error = envelope["error"]
        assert error["code"] in ERROR_CODES, error
        assert isinstance(error["message"], str) and error["message"].strip(), error
        assert "internal error" not in error["message"], error
        for f in error.get("fields", []):
            assert isinstance(f, dict) and isinstance(f.get("field") or f.get("key"), str), f
    return envelope


def store_leftovers(root: Path) -> list[str]:
    """Partial files a finished call must never leave: temporary files and unfinished journals."""
    found = [p.relative_to(root).as_posix() for p in root.rglob(TMP_PREFIX + "*")]
    journal = root / JOURNAL_DIR
    if journal.is_dir():
        found += [p.relative_to(root).as_posix() for p in journal.glob("*.json")]
    return sorted(found)


def tree_digest(root: Path, *, skip: tuple[str, ...] = (".cache", ".lock", ".journal")) -> dict[str, str]:
    """Every file and symlink under ``root`` (except ``skip`` at the top) -> a digest of what it is."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d not in skip]
            filenames = [f for f in filenames if f not in skip]
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = (rel_dir / name).as_posix()
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            elif path.is_dir():
                out[rel] = "dir"
    return out


# ------------------------------------------------------------------ outside the store


def make_sentinel(root: Path) -> dict[str, Path]:
    """A tree outside the store holding the marker: files, an empty file (a valid empty SQLite
    database), a store-shaped folder, a YAML note lookalike. Returns the named targets."""
    root.mkdir(parents=True, exist_ok=True)
    secret = root / "secret.txt"
    secret.write_text(f"{MARKER}\n")
    empty = root / "empty.db"
    empty.write_bytes(b"")
    note = root / "note.md"
    note.write_text(_note_lookalike())
    item = root / "item.yaml"
    item.write_text(_item_lookalike())
    shard = root / "shard.jsonl"
    shard.write_text(json.dumps(_event_lookalike()) + "\n")
    # A folder that looks like any store folder: record files, a shard, a schema, a journal.
    folder = root / "folder"
    folder.mkdir()
    (folder / "inside.txt").write_text(f"{MARKER} inside\n")
    (folder / f"note_{GHOST}.md").write_text(_note_lookalike())
    (folder / f"item_{GHOST}.yaml").write_text(_item_lookalike())
    (folder / "2026-03.jsonl").write_text(json.dumps(_event_lookalike()) + "\n")
    (folder / "schema.yaml").write_text(f"record_channel_id: folder\nversion: 1\nname: {MARKER}\nfields: []\n")
    (folder / f"evt_{GHOST}.json").write_text(json.dumps({"entries": [], "events": [_event_lookalike()]}))
    (folder / "bugs").mkdir()
    (folder / "bugs" / "schema.yaml").write_text(f"name: {MARKER}\n")
    (folder / "writer0001").mkdir()
    (folder / "writer0001" / "2026-03.jsonl").write_text(json.dumps(_event_lookalike()) + "\n")
    return {"secret": secret, "empty": empty, "folder": folder, "note": note, "item": item, "shard": shard}


GHOST = "01KE6T7Q1RJHAEB2VWR68JYV1C"
"""The ULID of every planted record: an id that only a symlink answers to."""


def _item_lookalike() -> str:
    return (
        f"item_id: item_{GHOST}\nrecord_channel_id: bugs\nversion: 1\ncreated_at: '2026-03-13T10:30:00.000Z'\n"
        f"updated_at: '2026-03-13T10:30:00.000Z'\nvalues:\n  ticket: BUG-{GHOST[:4]}\n  title: {MARKER}\n"
        "  status: new\n"
    )


def _note_lookalike() -> str:
    return (
        f"---\nnote_id: note_{GHOST}\nversion: 1\nscope:\n  system_id: sys_order_platform\n"
        f"  project_id: {PROJECT}\n  workspace_id: ws_x\nsession_id: sess_01KE6T7Q1RJHAEB2VWR68JYV1C\n"
        f"type: decision\ntitle: {MARKER}\nimportance: 5\ncreated_at: '2026-03-13T10:30:00.000Z'\n"
        f"updated_at: '2026-03-13T10:30:00.000Z'\n---\n{MARKER}\n"
    )


def _event_lookalike() -> dict[str, Any]:
    return {
        "event_id": f"evt_{GHOST}",
        "at": "2026-03-13T10:30:00.000Z",
        "actor": MARKER,
        "kind": "item",
        "id": f"item_{GHOST}",
        "record_channel_id": "bugs",
        "type": "created",
        "version": 1,
        "changed": [],
    }


def snapshot_outside(*roots: Path) -> dict[str, tuple[Any, ...]]:
    """Names, types, sizes, modification times and contents of every entry under ``roots``."""
    out: dict[str, tuple[Any, ...]] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in sorted(dirnames + filenames):
                path = Path(dirpath) / name
                st = path.lstat()
                content = (
                    hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
                )
                out[str(path)] = (st.st_mode, st.st_size, st.st_mtime_ns, content)
    return out


# ------------------------------------------------------------------ raw JSON-RPC over stdio


class RawServer:
    """``codexmem serve`` in a child process, spoken to line by line (so any bytes can be sent)."""

    def __init__(self, store: Path, *, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "codexmem", "serve", "--store", str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env or dict(os.environ),
            cwd=cwd,
        )
        self._buf = b""
        self._next = 1

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.rstrip(b"\n") + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> int:
        rid = self._next
        self._next += 1
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode())
        return rid

    def read_message(self, timeout: float) -> dict[str, Any] | None:
        """The next JSON-RPC message, or None when nothing came within ``timeout`` seconds."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    def wait_for(self, rid: int, timeout: float = 30.0) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while True:
            message = self.read_message(max(0.0, deadline - time.monotonic()))
            if message is None or message.get("id") == rid:
                return message

    def initialize(self) -> None:
        rid = self.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hardening", "version": "1"}},
        )
        assert self.wait_for(rid) is not None, self.stderr()
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def call(self, name: str, arguments: Any, timeout: float = 30.0) -> dict[str, Any] | None:
        """A tool call; the envelope (checked), or None when no answer came."""
        rid = self.request("tools/call", {"name": name, "arguments": arguments})
        return tool_envelope(self.wait_for(rid, timeout))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        if self.alive():
            return ""
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode("utf-8", "replace")[-3000:]

    def close(self) -> int:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def tool_envelope(message: dict[str, Any] | None) -> dict[str, Any] | None:
    """The checked envelope of a tools/call response (a JSON-RPC error is a failure here)."""
    if message is None:
        return None
    assert "result" in message, f"a protocol error where an envelope was due: {message}"
    result = message["result"]
    return check_envelope(result["content"][0]["text"], result.get("structuredContent"), result.get("isError"))


# ------------------------------------------------------------------ mounts (the tests run as root)


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A small tmpfs at ``path``; the test is skipped (reason printed) when mounting is refused."""
    path.mkdir(parents=True, exist_ok=True)
    done = _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
    if done.returncode != 0:
        reason = f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}): the full-disk test needs root"
        print(reason)
        pytest.skip(reason)
    try:
        yield path
    finally:
        unmount(path)


@contextlib.contextmanager
def read_only_view(source: Path, target: Path, *, read_only: bool = True) -> Iterator[Path]:
    """``source`` bind-mounted (read-only unless told) at ``target``; skipped (reason printed) when refused."""
    target.mkdir(parents=True, exist_ok=True)
    done = _mount("--bind", str(source), str(target))
    if done.returncode != 0:
        reason = f"cannot bind-mount here ({done.stderr.strip() or done.returncode}): the read-only test needs root"
        print(reason)
        pytest.skip(reason)
    try:
        again = _mount("-o", "remount,ro,bind", str(target)) if read_only else done
        if again.returncode != 0:
            reason = f"cannot remount read-only ({again.stderr.strip() or again.returncode})"
            print(reason)
            pytest.skip(reason)
        yield target
    finally:
        unmount(target)


def unmount(path: Path) -> None:
    for _ in range(50):
        if subprocess.run(["umount", str(path)], capture_output=True, check=False).returncode == 0:
            return
        if subprocess.run(["mountpoint", "-q", str(path)], check=False).returncode != 0:
            return
        time.sleep(0.1)
    subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


# ------------------------------------------------------------------ figures


def report(name: str, **figures: Any) -> None:
    """Print a figure line (``pytest -s`` shows it) and keep it in $HARDENING_FIGURES when set."""
    line = json.dumps({"test": name, **figures}, sort_keys=True)
    print(f"\nFIGURE {line}")
    target = os.environ.get("HARDENING_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
