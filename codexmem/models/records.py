"""One pydantic model per record type, defined once.

The same models validate hand-edited files (``extra="forbid"``: an unknown key is a finding, not
silently dropped), fix the key order of serialization, and shape MCP answers. Field order here
is the order in the files. Each set of allowed values is a ``Literal`` defined once; the tuples
beside it are derived from it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import Field

from codexmem.models.base import (
    ChannelId,
    HandoffId,
    ImportId,
    ItemId,
    MarkdownText,
    NoteId,
    ProjectId,
    SessionId,
    StrictModel,
    SystemId,
    Tag,
    Timestamp,
    Version,
    WorkspaceId,
)

NoteType = Literal["decision", "bugfix", "discovery", "constraint", "preference", "todo"]
NoteStatus = Literal["active", "resolved", "superseded", "retracted"]
NoteSource = Literal["codex_explicit", "watcher_import", "relay_import", "recovery_generated"]
HandoffKind = Literal["final", "checkpoint", "recovery"]
HandoffStatus = Literal["open", "completed", "abandoned", "retracted"]
HandoffSource = Literal["codex_explicit", "recovery_generated"]
ImportSource = Literal["watcher_import", "relay_import"]
SessionStatus = Literal["active", "paused", "ended", "recovered"]
NewNoteStatus = Literal["active", "resolved"]
NewNoteSource = Literal["codex_explicit", "watcher_import", "relay_import"]
NewHandoffKind = Literal["final", "checkpoint"]
NewHandoffStatus = Literal["open", "completed", "abandoned"]
"""What a caller may create: superseded needs a successor (memory_set_status moves it there),
retracted is a reviewer's word, and recovery handoffs and notes are written by codexmem only."""
RecordState = Literal[NoteStatus, HandoffStatus]
"""A note's or a handoff's status (memory_search and memory_set_status take either)."""
Intent = Literal["continuation", "decision", "bugfix", "discovery", "recent_activity", "general"]
"""What a search is for: its kind of result gets a bonus in the ranking."""

NOTE_TYPES: tuple[str, ...] = get_args(NoteType)
NOTE_STATUSES: tuple[str, ...] = get_args(NoteStatus)
NOTE_SOURCES: tuple[str, ...] = get_args(NoteSource)
HANDOFF_KINDS: tuple[str, ...] = get_args(HandoffKind)
HANDOFF_STATUSES: tuple[str, ...] = get_args(HandoffStatus)
IMPORT_SOURCES: tuple[str, ...] = get_args(ImportSource)
SERVED_NOTE_STATES = [s for s in NOTE_STATUSES if s != "retracted"]
SERVED_HANDOFF_STATES = [s for s in HANDOFF_STATUSES if s != "retracted"]
"""A retracted note or handoff is kept (references stay valid) but never served again."""

MAX_TITLE = 200
MAX_CONTENT = 6000
MAX_TAGS = 20
MAX_PATHS = 50
MAX_LIST_ITEMS = 50
MAX_LIST_ITEM_CHARS = 500
MAX_QUERY = 500
MAX_TASK = 500
MAX_SHORT = 300


class ScopeRef(StrictModel):
    """The three ids every record carries, so a shared store knows whose memory it is."""

    system_id: SystemId
    project_id: ProjectId
    workspace_id: WorkspaceId


GitObjectId = Annotated[str, Field(pattern=r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")]
"""A commit or blob id as git writes it (SHA-1, or SHA-256 in a repository made with it)."""


class Anchor(StrictModel):
    """The code a note describes, as it was when saved: the workspace's commit (HEAD) and the blob
    id git gives each named file, so ``codexmem stale`` and the tools can tell when it changed."""

    commit: GitObjectId
    files: dict[str, GitObjectId] = Field(default_factory=dict, max_length=MAX_PATHS)
    """path -> blob id (the file as it was; a path that did not exist then is left out)."""


# ``version`` defaults to 1 and ``updated_at`` is never written to a file: the version is left out of
# a file until its first change, and the time of a record's last change comes from its events.


class Session(StrictModel):
    session_id: SessionId
    version: Version = 1
    scope: ScopeRef
    status: SessionStatus
    task: str = ""
    branch_name: str = ""
    started_at: Timestamp
    ended_at: Timestamp | None = None
    updated_at: Timestamp | None = None


class Note(StrictModel):
    note_id: NoteId
    version: Version = 1
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
    status_reason: str | None = Field(default=None, max_length=MAX_SHORT)
    """Why a person retracted it (``codexmem retract --reason``)."""
    anchor: Anchor | None = None
    created_at: Timestamp
    updated_at: Timestamp | None = None
    content: MarkdownText = Field(min_length=1, max_length=MAX_CONTENT)


class Handoff(StrictModel):
    handoff_id: HandoffId
    version: Version = 1
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
    status_reason: str | None = Field(default=None, max_length=MAX_SHORT)
    created_at: Timestamp
    updated_at: Timestamp | None = None
    summary: MarkdownText = Field(min_length=1, max_length=MAX_CONTENT)


class ImportAudit(StrictModel):
    import_id: ImportId
    version: Version = 1
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
    updated_at: Timestamp | None = None


class Item(StrictModel):
    """One record of a channel; ``values`` are checked against the channel schema separately."""

    item_id: ItemId
    record_channel_id: ChannelId
    version: Version = 1
    created_at: Timestamp
    updated_at: Timestamp | None = None
    values: dict[str, Any] = Field(default_factory=dict)
