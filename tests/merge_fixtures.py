"""Helpers for the merge tests: a real repository with a store, branches, people and merges.

Every change goes through the services, as the tools and the CLI make it, from a store opened
afresh (as each CLI command and each server does). A hosting service's merge button is simulated
with ``* merge`` in ``.git/info/attributes``: it overrides the store's ``.gitattributes`` with
git's plain text merge, as GitHub's mergeability check and merge button do (neither runs a merge
driver nor ``merge=union``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from store_fixtures import git

from codexmem.check import CheckResult, check_store
from codexmem.errors import Warnings
from codexmem.memory.lifecycle import set_status
from codexmem.memory.notes import save_note
from codexmem.memory.retrieval import get_record
from codexmem.memory.sessions import start_session
from codexmem.models.records import ScopeRef
from codexmem.records import service
from codexmem.store.init import init_store
from codexmem.store.store import Store

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
BUG_SCHEMA: dict[str, Any] = {
    "name": "Bugs",
    "fields": [
        {"key": "title", "label": "Title", "type": "text", "is_required": True},
        {
            "key": "status",
            "label": "Status",
            "type": "select",
            "is_required": True,
            "config": {
                "options": [
                    {"value": v, "label": v.title(), "color": "#64748b"}
                    for v in ("new", "triaged", "fixed", "wont_fix")
                ]
            },
        },
        {
            "key": "owner",
            "label": "Owner",
            "type": "select",
            "config": {
                "options": [{"value": v, "label": v.title(), "color": "#a855f7"} for v in ("aiko", "mika", "ren")]
            },
        },
        {
            "key": "severity",
            "label": "Severity",
            "type": "select",
            "config": {"options": [{"value": v, "label": v.upper(), "color": "#ef4444"} for v in ("s1", "s2", "s3")]},
        },
        {"key": "points", "label": "Points", "type": "number", "config": {"min": 0, "max": 13}},
        {"key": "due", "label": "Due", "type": "date"},
        {"key": "notes", "label": "Notes", "type": "text"},
    ],
}


@dataclass
class Repo:
    """A work tree whose store is ``.codexmem`` at its root."""

    path: Path
    clock: datetime = T0

    @property
    def store_root(self) -> Path:
        return self.path / ".codexmem"

    def store(self) -> Store:
        """The store as a new process opens it."""
        return Store(self.store_root)

    def now(self) -> datetime:
        """The next moment (a minute apart): every change has its own time."""
        self.clock += timedelta(minutes=1)
        return self.clock

    def git(self, *args: str, check: bool = True) -> str:
        return git(self.path, *args, check=check).stdout

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message, "--allow-empty")

    def branch(self, name: str, start: str = "main") -> None:
        self.git("checkout", "-q", "-b", name, start)

    def checkout(self, name: str) -> None:
        self.git("checkout", "-q", name)

    def as_button(self) -> None:
        """From now on this clone merges as a hosting service's button does: plain text merge."""
        (self.path / ".git" / "info").mkdir(exist_ok=True)
        (self.path / ".git" / "info" / "attributes").write_text("* merge\n")

    def merge(self, branch: str) -> list[str]:
        """Merge ``branch`` into the branch checked out; the paths left conflicting ([] when clean)."""
        done = git(self.path, "merge", "--no-ff", "--no-edit", "-q", branch, check=False)
        if done.returncode == 0:
            return []
        return sorted(self.git("diff", "--name-only", "--diff-filter=U").split())

    def land(self, branch: str, how: str) -> list[str]:
        """Land ``branch`` on ``main`` as a hosting service's button does: ``merge`` (a merge
        commit), ``squash`` (one commit of the branch's changes) or ``rebase`` (its commits replayed
        on ``main``, which then moves to the last). The paths left conflicting ([] when clean)."""
        if how == "merge":
            return self.merge(branch)
        if how == "squash":
            done = git(self.path, "merge", "--squash", "-q", branch, check=False)
            if done.returncode == 0:
                self.commit(f"{branch} (squashed)")
                return []
            return sorted(self.git("diff", "--name-only", "--diff-filter=U").split())
        self.checkout(branch)
        done = git(self.path, "rebase", "-q", "main", check=False)
        if done.returncode != 0:
            conflicted = sorted(self.git("diff", "--name-only", "--diff-filter=U").split())
            self.git("rebase", "--abort")
            self.checkout("main")
            return conflicted
        self.checkout("main")
        self.git("merge", "-q", "--ff-only", branch)
        return []

    def squashed_then_gone_on(self, branch: str) -> str:
        """A bug, then ``branch``: a note and an edit, squash-merged into ``main``; then the branch
        goes on (another note and edit) unaware of the squash. Returns the bug; ``main`` is checked out."""
        bug = self.item(title="Totals off by a cent")
        self.commit("a bug")
        self.branch(branch)
        scope, session = self.session("Fix the totals")
        self.note(scope, session, "Round the sum, not each line")
        self.edit(bug, owner="aiko")
        self.commit("first round")
        self.checkout("main")
        assert self.land(branch, "squash") == []
        self.checkout(branch)
        self.note(scope, session, "Invoices are the legal document")
        self.edit(bug, severity="s2")
        self.commit("second round")
        self.checkout("main")
        return bug

    def check(self) -> CheckResult:
        return check_store(self.store_root)

    def person(self, name: str) -> None:
        """The git identity of the next writes (each Store reads it when it first writes)."""
        self.git("config", "user.name", name)

    # ------------------------------------------------------------------ memory

    def session(self, task: str = "work") -> tuple[ScopeRef, str]:
        store = self.store()
        config = store.config
        scope = ScopeRef(
            system_id=str(config.system.id if config.system else "sys_test"),
            project_id=config.projects[0].id,
            workspace_id="ws_test_main",
        )
        answer = start_session(store, self.now(), Warnings(), scope=scope, task=task)
        return scope, str(answer["session"]["session_id"])

    def note(self, scope: ScopeRef, session_id: str, title: str, content: str = "", **extra: Any) -> str:
        answer = save_note(
            self.store(),
            self.now(),
            Warnings(),
            scope=scope,
            session_id=session_id,
            note_type=extra.pop("note_type", "decision"),
            title=title,
            content=content or f"{title}: the details.",
            importance=extra.pop("importance", 4),
            **extra,
        )
        return str(answer["note"]["note_id"])

    def status(self, kind: Literal["note", "handoff"], record_id: str, status: str, **extra: Any) -> dict[str, Any]:
        store = self.store()
        version = get_record(store, Warnings(), record_id=record_id, kind=kind)["record"]["version"]
        return set_status(
            store,
            self.now(),
            Warnings(),
            record_id=record_id,
            kind=kind,
            status=status,
            expected_version=version,
            **extra,
        )

    # ------------------------------------------------------------------ a bug tracker

    def channel(self) -> None:
        service.add_channel(self.store(), "bugs", BUG_SCHEMA, actor="cli", now=self.now())

    def item(self, **values: Any) -> str:
        item = service.create_item(self.store(), "bugs", {"status": "new", **values}, actor="cli", now=self.now())
        return str(item["id"])

    def edit(self, item_id: str, **values: Any) -> service.EditResult:
        return service.edit_item(
            self.store(),
            "bugs",
            item_id,
            values,
            expected_version=None,
            idempotency_key=None,
            actor="cli",
            now=self.now(),
        )

    def values(self, item_id: str) -> dict[str, Any]:
        return dict(service.read_item(self.store(), "bugs", item_id, now=self.now())["values"])

    def version(self, item_id: str) -> int:
        return int(service.read_item(self.store(), "bugs", item_id, now=self.now())["version"])

    def item_path(self, item_id: str) -> Path:
        return self.store_root / "channels" / "bugs" / "items" / f"{item_id}.yaml"

    # ------------------------------------------------------------------ events

    def events(self) -> list[dict[str, Any]]:
        """Every event line of every event file in the work tree."""
        out = []
        for path in sorted((self.store_root / "events").rglob("*.jsonl")):
            out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return out


def new_repo(path: Path, *, person: str = "Alice Smith") -> Repo:
    """A repository with a store (the merge driver registered, as ``codexmem init`` does) and a
    bug channel, committed on ``main``."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", person)
    git(path, "config", "user.email", f"{person.split()[0].lower()}@example.com")
    git(path, "config", "commit.gpgsign", "false")
    (path / "README.md").write_text("a project\n")
    init_store(path / ".codexmem", cwd=path, system_name="shop", project_name="shop")
    repo = Repo(path)
    repo.channel()
    repo.commit("memory")
    return repo


def errors(result: CheckResult) -> list[str]:
    return [str(f) for f in result.errors]
