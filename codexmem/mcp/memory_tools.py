"""The memory tools: input models (the published schemas) and thin handlers over the services.

Schemas avoid ``$ref`` and ``anyOf`` because Codex turns both into a plain string for the model:
the nested scope is inlined and optional texts default to ``""`` rather than null. Services are
imported inside the handlers, so ``tools/list`` never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from codexmem.errors import Warnings
from codexmem.mcp.registry import ToolInput, ToolSpec
from codexmem.models.base import ProjectId, SessionId, SystemId, WorkspaceId
from codexmem.models.records import (
    MAX_CONTENT,
    MAX_LIST_ITEM_CHARS,
    MAX_LIST_ITEMS,
    MAX_PATHS,
    MAX_QUERY,
    MAX_SHORT,
    MAX_TAGS,
    MAX_TASK,
    MAX_TITLE,
    ImportSource,
    Intent,
    NewHandoffKind,
    NewHandoffStatus,
    NewNoteSource,
    NewNoteStatus,
    NoteType,
    RecordState,
    ScopeRef,
)

if TYPE_CHECKING:
    from codexmem.mcp.state import ServerState

MAX_CWD = 1024
MAX_ID = 100
Short = Annotated[str, Field(max_length=MAX_SHORT)]
Item = Annotated[str, Field(max_length=MAX_LIST_ITEM_CHARS)]
RelPath = Annotated[str, Field(max_length=MAX_SHORT)]
Items = Annotated[list[Item], Field(max_length=MAX_LIST_ITEMS)]
Paths = Annotated[list[RelPath], Field(max_length=MAX_PATHS)]


class ScopeInput(ToolInput):
    """The scope object memory_resolve_scope returns; only the three ids are read."""

    system_id: SystemId
    project_id: ProjectId
    workspace_id: WorkspaceId
    system_name: str = ""
    project_name: str = ""
    workspace_root: str = ""
    branch_name: str = ""
    resolved_by: str = ""

    def ref(self) -> ScopeRef:
        return ScopeRef(system_id=self.system_id, project_id=self.project_id, workspace_id=self.workspace_id)


Scope = Annotated[
    ScopeInput,
    WithJsonSchema(ScopeInput.model_json_schema()),
    Field(description="the scope returned by memory_bootstrap_session or memory_resolve_scope"),
]
Cwd = Annotated[str, Field(min_length=1, max_length=MAX_CWD, description="absolute working directory")]
RelatedReason = Annotated[Short, Field(description="why related projects matter for this task")]
IncludeRelated = Annotated[bool, Field(description="also read projects the store config declares related")]
PrivacyIntent = Annotated[
    str,
    Field(
        max_length=40,
        description="private, do_not_store or ephemeral_only: nothing is stored (an import keeps a suppressed audit)",
    ),
]
Title = Annotated[str, Field(min_length=1, max_length=MAX_TITLE)]
Content = Annotated[str, Field(min_length=1, max_length=MAX_CONTENT)]
Importance = Annotated[int, Field(ge=1, le=5, description="5 = must never be forgotten")]
Tags = Annotated[list[Short], Field(max_length=MAX_TAGS)]
NotePaths = Annotated[Paths, Field(description="paths relative to the repository root")]
ExternalId = Annotated[Short, Field(description="the artifact's id at its source, like watcher:event:392")]
PayloadHash = Annotated[Short, Field(description="a digest of the artifact, like sha256:4db5b7c6f2a9")]


class BootstrapInput(ToolInput):
    cwd: Cwd
    task: Annotated[str, Field(max_length=MAX_TASK)] = ""
    branch_name: Short = ""
    repo_remote: Item = ""
    include_related_projects: IncludeRelated = False
    related_reason: RelatedReason = ""
    max_notes: Annotated[int, Field(ge=1, le=20)] = 5
    max_handoffs: Annotated[int, Field(ge=1, le=5, description="open handoffs to show, latest first")] = 1


class ResolveInput(ToolInput):
    cwd: Cwd
    branch_name: Short = ""
    repo_remote: Item = ""
    project_name_hint: Short = ""
    system_name_hint: Short = ""


class StartSessionInput(ToolInput):
    scope: Scope
    task: Annotated[str, Field(max_length=MAX_TASK)] = ""
    branch_name: Short = ""


class SaveNoteInput(ToolInput):
    scope: Scope
    session_id: SessionId
    type: NoteType
    title: Title
    content: Content
    importance: Importance
    tags: Tags = Field(default_factory=list)
    file_paths: NotePaths = Field(default_factory=list)
    status: NewNoteStatus = "active"
    source: NewNoteSource = "codex_explicit"
    privacy_intent: PrivacyIntent = ""


class SaveHandoffInput(ToolInput):
    scope: Scope
    session_id: SessionId
    kind: NewHandoffKind
    task: Annotated[str, Field(min_length=1, max_length=MAX_TASK)]
    summary: Annotated[str, Field(min_length=1, max_length=MAX_CONTENT)]
    next_steps: Annotated[list[Item], Field(min_length=1, max_length=MAX_LIST_ITEMS)]
    status: NewHandoffStatus
    completed: Items = Field(default_factory=list)
    open_questions: Items = Field(default_factory=list)
    risks: Items = Field(default_factory=list)
    files_touched: Paths = Field(default_factory=list)
    related_note_ids: Annotated[list[Annotated[str, Field(max_length=MAX_ID)]], Field(max_length=MAX_LIST_ITEMS)] = (
        Field(default_factory=list)
    )
    privacy_intent: PrivacyIntent = ""


class SaveImportInput(ToolInput):
    scope: Scope
    session_id: SessionId
    source: ImportSource
    external_id: ExternalId = ""
    payload_hash: PayloadHash = ""
    privacy_intent: PrivacyIntent = ""


class SaveImportedNoteInput(ToolInput):
    scope: Scope
    session_id: SessionId
    source: ImportSource
    external_id: ExternalId = ""
    payload_hash: PayloadHash = ""
    type: NoteType
    title: Title
    content: Content
    importance: Importance
    tags: Tags = Field(default_factory=list)
    file_paths: NotePaths = Field(default_factory=list)
    status: NewNoteStatus = "active"
    privacy_intent: PrivacyIntent = ""


def _enum_text(values: tuple[str, ...], description: str) -> Any:
    """A string published as an enum but checked by the handler, so a bad value is ERR_INVALID_TARGET."""
    return WithJsonSchema({"type": "string", "enum": list(values), "description": description})


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class InstallAgentsInput(ToolInput):
    target: Annotated[
        str, _enum_text(("global", "project", "both"), "global: ~/.codex/AGENTS.md; project: AGENTS.md at the git root")
    ]
    mode: Annotated[
        str,
        _enum_text(
            ("safe", "append", "overwrite"),
            "safe: never touch an existing file; append: add or replace codexmem's marked block; overwrite: replace it",
        ),
    ]
    cwd: Annotated[str, Field(max_length=MAX_CWD, description="a directory inside the repository (project, both)")] = ""
    project_name: Short = ""
    system_name: Short = ""
    related_repositories: Annotated[list[Short], Field(max_length=20)] = Field(default_factory=list)
    preferred_tags: Annotated[list[Short], Field(max_length=MAX_TAGS)] = Field(default_factory=list)
    allow_related_project_memory: Annotated[
        bool | None,
        WithJsonSchema({"type": "boolean"}),
        Field(description="unset: as the store config says", json_schema_extra=_no_default),
    ] = None


class SearchInput(ToolInput):
    query: Annotated[
        str, Field(min_length=1, max_length=MAX_QUERY, description='words, each a prefix; "a phrase" in quotes')
    ]
    scope: Scope
    types: Annotated[list[NoteType], Field(max_length=6)] = Field(default_factory=list)
    states: Annotated[list[RecordState], Field(max_length=6, description="note and/or handoff states")] = Field(
        default_factory=list
    )
    min_importance: Annotated[int, Field(ge=1, le=5)] = 1
    limit: Annotated[int, Field(ge=1, le=20)] = 10
    include_handoffs: bool = False
    include_related_projects: IncludeRelated = False
    related_reason: RelatedReason = ""
    intent: Intent = "general"
    cursor: Annotated[
        str, Field(max_length=64, description="next_cursor of the previous page, with the same other arguments")
    ] = ""


class RecentInput(ToolInput):
    scope: Scope
    limit: Annotated[int, Field(ge=1, le=20)] = 5
    include_notes: bool = True
    include_handoffs: bool = True
    include_related_projects: IncludeRelated = False
    related_reason: RelatedReason = ""


class GetNoteInput(ToolInput):
    id: Annotated[str, Field(min_length=1, max_length=MAX_ID, description="a note_... or handoff_... id")]
    kind: Literal["note", "handoff"]


class SetStatusInput(ToolInput):
    id: Annotated[str, Field(min_length=1, max_length=MAX_ID)]
    kind: Literal["note", "handoff"]
    status: RecordState
    expected_version: Annotated[int, Field(ge=1, description="the version you last read")]
    superseded_by: Annotated[str, Field(max_length=MAX_ID, description="the note that replaces this one")] = ""
    reason: Annotated[Short, Field(description="why, for retracted: shown to reviewers and on the site")] = ""
    session_id: SessionId | None = Field(default=None, description="your session, so the change says who made it")


class EndSessionInput(ToolInput):
    session_id: SessionId
    status: Literal["ended", "paused"] = "ended"


# ------------------------------------------------------------------ handlers


def _bootstrap(state: ServerState, args: BootstrapInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.retrieval import bootstrap_session

    return bootstrap_session(
        state.store(),
        state.now(),
        warnings,
        cwd=args.cwd,
        task=args.task,
        branch_name=args.branch_name,
        repo_remote=args.repo_remote,
        include_related_projects=args.include_related_projects,
        max_notes=args.max_notes,
        max_handoffs=args.max_handoffs,
    )


def _resolve(state: ServerState, args: ResolveInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.scope import resolve_scope

    scope = resolve_scope(
        state.store(),
        warnings,
        cwd=args.cwd,
        branch_name=args.branch_name,
        repo_remote=args.repo_remote,
        project_name_hint=args.project_name_hint,
        system_name_hint=args.system_name_hint,
    )
    return {"scope": scope.as_dict(), "resolved_by": scope.resolved_by}


def _start_session(state: ServerState, args: StartSessionInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.sessions import require_known_scope, start_session

    require_known_scope(state.store(), args.scope.ref(), args.scope.workspace_root)
    return start_session(
        state.store(),
        state.now(),
        warnings,
        scope=args.scope.ref(),
        task=args.task,
        branch_name=args.branch_name or args.scope.branch_name,
    )


def _save_note(state: ServerState, args: SaveNoteInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.notes import save_note

    return save_note(
        state.store(),
        state.now(),
        warnings,
        scope=args.scope.ref(),
        session_id=args.session_id,
        note_type=args.type,
        title=args.title,
        content=args.content,
        importance=args.importance,
        tags=args.tags,
        file_paths=args.file_paths,
        status=args.status,
        source=args.source,
        privacy_intent=args.privacy_intent,
    )


def _save_handoff(state: ServerState, args: SaveHandoffInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.handoffs import save_handoff

    return save_handoff(
        state.store(),
        state.now(),
        warnings,
        scope=args.scope.ref(),
        session_id=args.session_id,
        kind=args.kind,
        task=args.task,
        summary=args.summary,
        next_steps=args.next_steps,
        status=args.status,
        completed=args.completed,
        open_questions=args.open_questions,
        risks=args.risks,
        files_touched=args.files_touched,
        related_note_ids=args.related_note_ids,
        privacy_intent=args.privacy_intent,
    )


def _save_import(state: ServerState, args: SaveImportInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.imports import save_import

    return save_import(
        state.store(),
        state.now(),
        warnings,
        scope=args.scope.ref(),
        session_id=args.session_id,
        source=args.source,
        external_id=args.external_id,
        payload_hash=args.payload_hash,
        privacy_intent=args.privacy_intent,
    )


def _save_imported_note(state: ServerState, args: SaveImportedNoteInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.imports import save_imported_note

    return save_imported_note(
        state.store(),
        state.now(),
        warnings,
        scope=args.scope.ref(),
        session_id=args.session_id,
        source=args.source,
        external_id=args.external_id,
        payload_hash=args.payload_hash,
        note_type=args.type,
        title=args.title,
        content=args.content,
        importance=args.importance,
        tags=args.tags,
        file_paths=args.file_paths,
        status=args.status,
        privacy_intent=args.privacy_intent,
    )


def _search(state: ServerState, args: SearchInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.retrieval import search

    return search(
        state.store(),
        state.now(),
        warnings,
        scope=args.scope.ref(),
        query=args.query,
        types=args.types,
        states=args.states,
        min_importance=args.min_importance,
        limit=args.limit,
        include_handoffs=args.include_handoffs,
        include_related_projects=args.include_related_projects,
        intent=args.intent,
        cursor=args.cursor,
    )


def _recent(state: ServerState, args: RecentInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.retrieval import get_recent

    return get_recent(
        state.store(),
        warnings,
        scope=args.scope.ref(),
        limit=args.limit,
        include_notes=args.include_notes,
        include_handoffs=args.include_handoffs,
        include_related_projects=args.include_related_projects,
    )


def _get_note(state: ServerState, args: GetNoteInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.retrieval import get_record

    return get_record(state.store(), warnings, record_id=args.id, kind=args.kind)


def _set_status(state: ServerState, args: SetStatusInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.lifecycle import set_status

    return set_status(
        state.store(),
        state.now(),
        warnings,
        record_id=args.id,
        kind=args.kind,
        status=args.status,
        expected_version=args.expected_version,
        superseded_by=args.superseded_by or None,
        reason=args.reason,
        session_id=args.session_id,
    )


def _end_session(state: ServerState, args: EndSessionInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.memory.lifecycle import end_session

    return end_session(state.store(), state.now(), warnings, session_id=args.session_id, status=args.status)


def _install_agents(state: ServerState, args: InstallAgentsInput, warnings: Warnings) -> dict[str, Any]:
    from codexmem.render.agents import install_agents

    return install_agents(
        state.store,
        warnings,
        target=args.target,
        mode=args.mode,
        cwd=args.cwd,
        project_name=args.project_name,
        system_name=args.system_name,
        related_repositories=args.related_repositories or None,
        preferred_tags=args.preferred_tags or None,
        allow_related_project_memory=args.allow_related_project_memory,
    )


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "memory_bootstrap_session",
        "Call first in every conversation. Resolves the scope of cwd, starts a new session and returns the latest "
        "open handoff, recent high-value notes and a startup brief. Use the returned scope and session_id in writes.",
        BootstrapInput,
        _bootstrap,
        read_only=False,
        title="Bootstrap a session",
    ),
    ToolSpec(
        "memory_resolve_scope",
        "Resolve the system, project and workspace a directory belongs to. Writes nothing.",
        ResolveInput,
        _resolve,
        read_only=True,
        idempotent=True,
        title="Resolve scope",
    ),
    ToolSpec(
        "memory_start_session",
        "Start a new session in a resolved scope (memory_bootstrap_session already starts one); a scope no "
        "folder resolves to and no session has is refused.",
        StartSessionInput,
        _start_session,
        read_only=False,
        title="Start a session",
    ),
    ToolSpec(
        "memory_save_note",
        "Save a lasting note for future sessions: a decision, bugfix, discovery, constraint, preference or todo. "
        "Saving the same note again in a session returns the first one.",
        SaveNoteInput,
        _save_note,
        read_only=False,
        idempotent=True,
        title="Save a note",
    ),
    ToolSpec(
        "memory_save_handoff",
        "Before stopping, record where the task stands and the next steps, so the next session can continue. "
        "Open handoffs are what memory_bootstrap_session returns; status completed or abandoned closes this "
        "workspace's open handoffs for the same task (listed in closed_handoffs).",
        SaveHandoffInput,
        _save_handoff,
        read_only=False,
        title="Save a handoff",
    ),
    ToolSpec(
        "memory_save_import",
        "Record that a watcher or relay imported an artifact (external_id and/or payload_hash), without a note. "
        "A replay of the same artifact returns the first import with suppressed: true and writes nothing.",
        SaveImportInput,
        _save_import,
        read_only=False,
        idempotent=True,
        title="Record an import",
    ),
    ToolSpec(
        "memory_save_imported_note",
        "Save an imported artifact as a note together with its import audit, in one write. An explicit note saying "
        "the same wins (materialized: false); a replay of the same artifact reuses the first note.",
        SaveImportedNoteInput,
        _save_imported_note,
        read_only=False,
        idempotent=True,
        title="Save an imported note",
    ),
    ToolSpec(
        "memory_search",
        "Search this project's notes (and handoffs with include_handoffs) by words, each matching as a prefix; "
        'a "quoted phrase" matches its words in order. '
        "Results are ranked and show a short summary; memory_get_note returns a record in full. has_more: "
        "send next_cursor as cursor for the next page.",
        SearchInput,
        _search,
        read_only=True,
        idempotent=True,
        title="Search memory",
    ),
    ToolSpec(
        "memory_get_recent",
        "The latest handoffs and high-value notes of this workspace, then of the rest of the project.",
        RecentInput,
        _recent,
        read_only=True,
        idempotent=True,
        title="Recent memory",
    ),
    ToolSpec(
        "memory_get_note",
        "One note or handoff by id, in full.",
        GetNoteInput,
        _get_note,
        read_only=True,
        idempotent=True,
        title="Get a note or handoff",
    ),
    ToolSpec(
        "memory_set_status",
        "Move a note (active -> resolved or superseded, resolved -> superseded) or a handoff (open -> completed "
        "or abandoned). Pass the version you last read as expected_version.",
        SetStatusInput,
        _set_status,
        read_only=False,
        destructive=True,
        title="Change a status",
    ),
    ToolSpec(
        "memory_end_session",
        "End a session (status ended, no more writes) or pause it.",
        EndSessionInput,
        _end_session,
        read_only=False,
        title="End a session",
    ),
    ToolSpec(
        "memory_install_agents",
        "Install codexmem's AGENTS.md instructions: global (~/.codex/AGENTS.md), project (at the git root of cwd) "
        "or both. safe never touches an existing file, append adds or replaces codexmem's marked block, overwrite "
        "replaces the file.",
        InstallAgentsInput,
        _install_agents,
        read_only=False,
        destructive=True,
        idempotent=True,
        title="Install AGENTS.md",
    ),
]
