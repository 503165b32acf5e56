"""Play a story into a store through the services the MCP tools and the CLI call.

Each step is one service call at the step's time (its ``now``). A person acts as the CLI does
(an item edit with no expected version); a session acts as Codex does over MCP (every write names
the session; an item edit sends the version it just read and an idempotency key). Each person's
clone is one :class:`~codexmem.store.store.Store` whose writer is that person in that clone, on no
branch, and every store draws ids from one seeded :class:`~codexmem.store.ids.IdMaker`, so the
same story always gives the same bytes.
Nothing here knows how the store lays out its files.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from codexmem.errors import CodexmemError, Warnings
from codexmem.memory.handoffs import save_handoff
from codexmem.memory.imports import save_import, save_imported_note
from codexmem.memory.lifecycle import end_session, recover_idle_sessions, set_status
from codexmem.memory.notes import save_note
from codexmem.memory.retrieval import get_recent, get_record
from codexmem.memory.sessions import MCP_ACTOR, start_session
from codexmem.models.records import ScopeRef
from codexmem.records import service
from codexmem.store.identity import Writer
from codexmem.store.ids import IdMaker
from codexmem.store.store import CLI_ACTOR, Store
from codexmem.store.yamlio import YamlError, load_yaml
from scripts.story import Step, Story, StoryError


class Player:
    """Plays one story into the store at ``root`` (created and configured beforehand)."""

    def __init__(self, story: Story, root: Path) -> None:
        self.story = story
        self.root = root
        self.ids = IdMaker(randbytes=random.Random(story.seed).randbytes)
        self.stores: dict[str, Store] = {}  # person -> their clone's store
        self.made: dict[str, str] = {}  # story key -> record id
        self.sessions: dict[str, tuple[str, ScopeRef]] = {}  # session key -> (person, scope)

    def play(self) -> None:
        """Every step in play order; a failing call becomes a :class:`StoryError` naming step and field."""
        try:
            for step in self.story.steps:
                self._play(step)
        finally:
            for store in self.stores.values():
                store.index.close()

    def _play(self, step: Step) -> None:
        store = self._store(step.by)
        store.fresh_index()  # as the server does per call: another clone may have written meanwhile
        warnings = Warnings()
        try:
            HANDLERS[step.action](self, step, store, step.at, warnings)
        except CodexmemError as exc:
            raise StoryError(step.where, *_field_and_message(exc)) from None
        if set(warnings.codes()) != step.expect:
            said = ", ".join(warnings.codes()) or "nothing"
            expected = ", ".join(sorted(step.expect)) or "nothing"
            raise StoryError(step.where, "expect", f"the service warned {said}; the story expects {expected}")

    def _store(self, by: str) -> Store:
        person = by if by in self.story.people else self.sessions[by][0]
        if person not in self.stores:
            writer = Writer(name=person, clone=self.story.people[person])
            self.stores[person] = Store(self.root, ids=self.ids, writer=writer, branch=None)
        return self.stores[person]

    def _session(self, step: Step) -> tuple[str, ScopeRef]:
        return self.made[step.by], self.sessions[step.by][1]

    # ------------------------------------------------------------------ memory

    def start_session(self, step: Step, store: Store, now: datetime, warnings: Warnings) -> None:
        """As ``memory_bootstrap_session`` starts one: a new session, then the workspace's idle ones recovered."""
        ws = self.story.workspaces[step.fields["workspace"]]
        scope = ScopeRef(system_id=ws.system_id, project_id=ws.project_id, workspace_id=ws.workspace_id)
        answer = start_session(
            store,
            now,
            warnings,
            scope=scope,
            task=step.fields.get("task", ""),
            branch_name=step.fields.get("branch_name", ""),
        )
        session_id = answer["session"]["session_id"]
        self.made[step.value] = session_id
        self.sessions[step.value] = (step.by, scope)
        recovered = recover_idle_sessions(store, now, warnings, workspace_id=scope.workspace_id, actor=session_id)
        if "recovery_handoff" in step.fields:
            self.made[step.fields["recovery_handoff"]] = self._recovery_handoff(step, store, scope, recovered)

    def _recovery_handoff(self, step: Step, store: Store, scope: ScopeRef, recovered: list[str]) -> str:
        """The handoff written for a session recovered on start, found as Codex sees it (memory_get_recent)."""
        recent = get_recent(store, Warnings(), scope=scope, limit=20, include_notes=False)["handoffs"]
        found = [h["handoff_id"] for h in recent if h["kind"] == "recovery" and h["session_id"] in recovered]
        if len(found) != 1:
            raise StoryError(step.where, "recovery_handoff", f"this start recovered {len(found)} handoffs, not one")
        return str(found[0])

    def save_note(self, step: Step, store: Store, now: datetime, warnings: Warnings) -> None:
        session_id, scope = self._session(step)
        f = step.fields
        answer = save_note(
            store,
            now,
            warnings,
            scope=scope,
            session_id=session_id,
            note_type=f["type"],
            title=f["title"],
            content=f["content"],
            importance=f["importance"],
            tags=f.get("tags", []),
            file_paths=f.get("file_paths", []),
            status=f.get("status", "active"),
            privacy_intent=f.get("privacy_intent", ""),
        )
        self._remember(step, answer.get("note"), "note_id")

    def save_handoff(self, step: Step, store: Store, now: datetime, warnings: Warnings) -> None:
        session_id, scope = self._session(step)
        f = step.fields
        answer = save_handoff(
            store,
            now,
            warnings,
            scope=scope,
            session_id=session_id,
            kind=f["kind"],
            task=f["task"],
            summary=f["summary"],
            next_steps=f["next_steps"],
            status=f.get("status", "open"),
            completed=f.get("completed", []),
            open_questions=f.get("open_questions", []),
            risks=f.get("risks", []),
            files_touched=f.get("files_touched", []),
            related_note_ids=[self.made[k] for k in f.get("related_notes", [])],
            privacy_intent=f.get("privacy_intent", ""),
        )
        self._remember(step, answer["handoff"], "handoff_id")

    def save_import(self, step: Step, store: Store, now: datetime, warnings: Warnings) -> None:
        session_id, scope = self._session(step)
        f = step.fields
        answer = save_import(
            store,
            now,
            warnings,
            scope=scope,
            session_id=session_id,
            source=f["source"],
            external_id=f.get("external_id", ""),
            payload_hash=f.get("payload_hash", ""),
            privacy_intent=f.get("privacy_intent", ""),
        )
        self._remember(step, answer["import"], "import_id")

    def save_imported_note(self, step: Step, store: Store, now: datetime, warnings: Warnings) -> None:
        """The key names the note the import produced (or the explicit note that made it redundant)."""
        session_id, scope = self._session(step)
        f = step.fields
        answer = save_imported_note(
            store,
            now,
            warnings,
            scope=scope,
            session_id=session_id,
            source=f["source"],
            external_id=f.get("external_id", ""),
            payload_hash=f.get("payload_hash", ""),
            note_type=f["type"],
            title=f["title"],
            content=f["content"],
            importance=f["importance"],
            tags=f.get("tags", []),
            file_paths=f.get("file_paths", []),
            status=f.get("status", "active"),
            privacy_intent=f.get("privacy_intent", ""),
        )
        self._remember(step, answer.get("note"), "note_id")

    def set_status(self, step: Step, store: Store, now: datetime, warnings: Warnings) -> None:
        """As Codex moves a record: read it (``memory_get_note``) for its version, then move it."""
        kind: Literal["note", "handoff"] = "note" if "note" in step.fields else "handoff"
        record_id = self.made[step.fields[kind]]
        current = get_record(store, warnings, record_id=record_id, kind=kind)["record"]
        superseded_by = step.fields.get("superseded_by")
        set_status(
            store,
            now,
            warnings,
            record_id=record_id,
            kind=kind,
            status=step.value,
            expected_version=current["version"],
            superseded_by=None if superseded_by is None else self.made[superseded_by],
            session_id=self.made.get(step.by) if step.by not in self.story.people else None,
            actor="cli" if step.by in self.story.people else MCP_ACTOR,
        )

    def end_session(self, step: Step, store: Store, now: datetime, warnings: Warnings) -> None:
        status: Literal["ended", "paused"] = "paused" if step.value == "paused" else "ended"  # checked: one of the two
        end_session(store, now, warnings, session_id=self.made[step.by], status=status)

    # ------------------------------------------------------------------ record channels

    def add_channel(self, step: Step, store: Store, now: datetime, warnings: Warnings) -> None:
        """As ``codexmem channels add ID --schema FILE`` does."""
        name = step.fields["schema"]
        try:
            schema = load_yaml(self.story.read_file(name), source=name)
        except (OSError, YamlError) as exc:
            raise StoryError(step.where, "schema", str(exc)) from None
        if not isinstance(schema, dict):
            raise StoryError(step.where, "schema", f"{name} must hold a YAML mapping")
        service.add_channel(store, step.value, schema, actor=CLI_ACTOR, now=now)

    def create_item(self, step: Step, store: Store, now: datetime, warnings: Warnings) -> None:
        item = service.create_item(store, step.value, step.fields["values"], actor=CLI_ACTOR, now=now)
        self.made[str(step.item)] = item["id"]

    def edit_item(self, step: Step, store: Store, now: datetime, warnings: Warnings) -> None:
        """A person edits whatever is current; a session sends the version it read and an idempotency key."""
        item_id = self.made[str(step.item)]
        session: str | None = None
        if step.by in self.story.people:
            version, key, actor = None, None, CLI_ACTOR
        else:
            version = service.read_item(store, step.value, item_id, now=now)["version"]
            session = self.made[step.by]
            key, actor = f"{session}:{item_id}:v{version}", MCP_ACTOR
        result = service.edit_item(
            store,
            step.value,
            item_id,
            step.fields["values"],
            expected_version=version,
            idempotency_key=key,
            actor=actor,
            now=now,
            session_id=session,
        )
        if result.redacted:
            warnings.add("WARN_SECRET_REDACTED", ", ".join(result.redacted))

    def delete_item(self, step: Step, store: Store, now: datetime, warnings: Warnings) -> None:
        service.delete_item(store, step.value, self.made[str(step.item)], actor=CLI_ACTOR, now=now)

    def _remember(self, step: Step, record: dict[str, Any] | None, id_field: str) -> None:
        if record is None:  # a private record: answered, never written
            raise StoryError(step.where, "privacy_intent", "the record was not stored, so no later step can name it")
        self.made[step.value] = record[id_field]


Handler = Callable[[Player, Step, Store, datetime, Warnings], None]
HANDLERS: dict[str, Handler] = {
    "start_session": Player.start_session,
    "save_note": Player.save_note,
    "save_handoff": Player.save_handoff,
    "save_import": Player.save_import,
    "save_imported_note": Player.save_imported_note,
    "set_status": Player.set_status,
    "end_session": Player.end_session,
    "add_channel": Player.add_channel,
    "create_item": Player.create_item,
    "edit_item": Player.edit_item,
    "delete_item": Player.delete_item,
}


def _field_and_message(exc: CodexmemError) -> tuple[str, str]:
    """The first field a service error names (item values as ``values.<key>``) and its message."""
    first = (exc.fields or [{}])[0]
    if "key" in first:
        return f"values.{first['key']}", f"{exc.code}: {first.get('message', exc.message)}"
    if "field" in first:
        return str(first["field"]), f"{exc.code}: {first.get('message', exc.message)}"
    return "", f"{exc.code}: {exc.message}"
