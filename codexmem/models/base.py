"""What every model shares: the strict base, ids and timestamps as validated types.

The same checks run on a hand-edited file and on a tool's arguments, so a bad id or timestamp is
refused with the same message wherever it comes from.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from codexmem.errors import CodexmemError, validation_fields
from codexmem.store.ids import is_record_id, is_scope_id
from codexmem.timeutil import is_ts


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


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


MarkdownText = Annotated[str, AfterValidator(_lf)]
"""A Markdown body: its line ends are LF, however it came (CommonMark reads CR, LF and CRLF as one
line end, so nothing renders otherwise). A checkout with CRLF line ends (Git for Windows' default,
``core.autocrlf=true``) reads as the file codexmem wrote, and a body sent with CRLF is stored as
the LF file git would make of it, so a file and its events never differ by carriage returns."""
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
MAX_VERSION = 1_000_000_000
"""A record's version, far above any real count of changes and within what the index's integers hold
(a version line edited to 10**23 made every command that reads the index fail)."""
Version = Annotated[int, Field(ge=1, le=MAX_VERSION)]


M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=False)


def make_record(model: type[M], **values: Any) -> M:
    """A record model from normalized values; what the model refuses is the caller's input error."""
    try:
        return model(**values)
    except ValidationError as exc:
        fields = validation_fields(exc)
        first = fields[0]
        raise CodexmemError("ERR_INVALID_INPUT", f"{first['field']}: {first['message']}", fields=fields) from None
