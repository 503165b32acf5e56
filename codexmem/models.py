"""One pydantic model per record type, defined once.

The same models validate hand-edited files (``extra="forbid"``: an unknown key is a finding, not
silently dropped), fix the key order of serialization, and shape MCP answers. Field order here
is the order in the files.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from codexmem.store.ids import is_record_id, is_scope_id
from codexmem.timeutil import is_ts

NoteType = Literal["decision", "bugfix", "discovery", "constraint", "preference", "todo"]
NoteStatus = Literal["active", "resolved", "superseded"]
NoteSource = Literal["codex_explicit", "watcher_import", "relay_import", "recovery_generated"]
HandoffKind = Literal["final", "checkpoint", "recovery"]
HandoffStatus = Literal["open", "completed", "abandoned"]
HandoffSource = Literal["codex_explicit", "recovery_generated"]
ImportSource = Literal["watcher_import", "relay_import"]
SessionStatus = Literal["active", "paused", "ended", "recovered"]

NOTE_TYPES: tuple[str, ...] = ("decision", "bugfix", "discovery", "constraint", "preference", "todo")
NOTE_STATUSES: tuple[str, ...] = ("active", "resolved", "superseded")
NOTE_SOURCES: tuple[str, ...] = ("codex_explicit", "watcher_import", "relay_import", "recovery_generated")
HANDOFF_KINDS: tuple[str, ...] = ("final", "checkpoint", "recovery")
HANDOFF_STATUSES: tuple[str, ...] = ("open", "completed", "abandoned")
IMPORT_SOURCES: tuple[str, ...] = ("watcher_import", "relay_import")

# Input limits: every single record fits in one answer under Codex's output cap.
MAX_TITLE = 200
MAX_CONTENT = 6000
MAX_TAGS = 20
MAX_PATHS = 50
MAX_LIST_ITEMS = 50
MAX_LIST_ITEM_CHARS = 500
MAX_QUERY = 500
MAX_TASK = 500
MAX_SHORT = 300


def _ts(value: str) -> str:
    if not is_ts(value):
        raise ValueError("must be an RFC 3339 UTC timestamp with milliseconds, like 2026-03-13T10:52:00.123Z")
    return value


def _record_id(prefix: str) -> AfterValidator:
    def check(v: str) -> str:
        if not is_record_id(v, prefix):
            raise ValueError(f"must be an id of the form {prefix}_<ULID>")
        return v

    return AfterValidator(check)


def _scope_id(prefix: str, example: str) -> AfterValidator:
    def check(v: str) -> str:
        if not is_scope_id(v, prefix):
            raise ValueError(f"must be a {prefix}_ id like {example}")
        return v

    return AfterValidator(check)


Timestamp = Annotated[str, AfterValidator(_ts)]
SessionId = Annotated[str, _record_id("sess")]
NoteId = Annotated[str, _record_id("note")]
HandoffId = Annotated[str, _record_id("handoff")]
ImportId = Annotated[str, _record_id("import")]
ItemId = Annotated[str, _record_id("item")]
SystemId = Annotated[str, _scope_id("sys", "sys_order_platform")]
ProjectId = Annotated[str, _scope_id("proj", "proj_order_web")]
WorkspaceId = Annotated[str, _scope_id("ws", "ws_order_web_1a2b3c4d")]
ChannelId = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")]
Tag = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=False)


class ScopeRef(StrictModel):
    """The three ids every record carries, so a shared store knows whose memory it is."""

    system_id: SystemId
    project_id: ProjectId
    workspace_id: WorkspaceId


class Session(StrictModel):
    session_id: SessionId
    version: int = Field(ge=1)
    scope: ScopeRef
    status: SessionStatus
    task: str = ""
    branch_name: str = ""
    workspace_root: str = ""
    started_at: Timestamp
    ended_at: Timestamp | None = None
    updated_at: Timestamp


class Note(StrictModel):
    note_id: NoteId
    version: int = Field(ge=1)
    scope: ScopeRef
    session_id: SessionId
    type: NoteType
    title: str = Field(min_length=1, max_length=MAX_TITLE)
    importance: int = Field(ge=1, le=5)
    status: NoteStatus = "active"
    source: NoteSource = "codex_explicit"
    tags: list[Tag] = Field(default_factory=list, max_length=MAX_TAGS)
    file_paths: list[str] = Field(default_factory=list, max_length=MAX_PATHS)
    related_project_ids: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    superseded_by: NoteId | None = None
    created_at: Timestamp
    updated_at: Timestamp
    content: str = Field(min_length=1, max_length=MAX_CONTENT)


class Handoff(StrictModel):
    handoff_id: HandoffId
    version: int = Field(ge=1)
    scope: ScopeRef
    session_id: SessionId
    kind: HandoffKind
    task: str = Field(min_length=1, max_length=MAX_TASK)
    status: HandoffStatus
    source: HandoffSource = "codex_explicit"
    next_steps: list[str] = Field(min_length=1, max_length=MAX_LIST_ITEMS)
    completed: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    open_questions: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    risks: list[str] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    files_touched: list[str] = Field(default_factory=list, max_length=MAX_PATHS)
    related_note_ids: list[NoteId] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    created_at: Timestamp
    updated_at: Timestamp
    summary: str = Field(min_length=1, max_length=MAX_CONTENT)


class ImportAudit(StrictModel):
    import_id: ImportId
    version: int = Field(ge=1)
    scope: ScopeRef
    session_id: SessionId
    source: ImportSource
    external_id: str | None = None
    payload_hash: str | None = None
    durable_memory_id: str | None = None
    suppressed: bool = False
    suppression_reason: str | None = None
    content_changed: bool = False
    imported_at: Timestamp
    updated_at: Timestamp


class Item(StrictModel):
    """One record of a channel; ``values`` are checked against the channel schema separately."""

    item_id: ItemId
    record_channel_id: ChannelId
    version: int = Field(ge=1)
    created_at: Timestamp
    updated_at: Timestamp
    values: dict[str, Any] = Field(default_factory=dict)


# ---------------------------------------------------------------- store config


class Relation(StrictModel):
    project: str
    relation_type: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    store: str | None = None


class ProjectDecl(StrictModel):
    id: ProjectId
    name: str = Field(min_length=1, max_length=200)
    system: str | None = None
    remotes: list[str] = Field(default_factory=list)
    roots: list[str] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    preferred_tags: list[str] = Field(default_factory=list)


class SystemDecl(StrictModel):
    id: SystemId
    name: str = Field(min_length=1, max_length=200)


class PrivacyConfig(StrictModel):
    secrets: Literal["refuse", "redact"] = "refuse"


class SessionConfig(StrictModel):
    idle_recovery_minutes: int = Field(default=120, ge=1, le=60 * 24 * 30)


class SiteConfig(StrictModel):
    base_url: str | None = None
    title: str | None = None


STORE_FORMAT = 1


class StoreConfig(StrictModel):
    format: int
    system: SystemDecl | None = None
    projects: list[ProjectDecl] = Field(default_factory=list)
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    sessions: SessionConfig = Field(default_factory=SessionConfig)
    site: SiteConfig = Field(default_factory=SiteConfig)

    def project(self, project_id: str) -> ProjectDecl | None:
        return next((p for p in self.projects if p.id == project_id), None)


def dump_model(model: BaseModel) -> dict[str, Any]:
    """A record as plain data in field order, for files and answers."""
    return model.model_dump(mode="json")
