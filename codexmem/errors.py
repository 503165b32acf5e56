"""One exception family with stable codes.

Services raise :class:`CodexmemError`; the MCP layer turns it into the error envelope and the
CLI into a message on stderr with a non-zero exit. Codes are API: never rename one. They are
``Literal`` types, so a misspelt code is a type error, not a surprise at run time.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    from pydantic import ValidationError

CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Control characters but tab and line breaks, refused in every text a caller sends: written raw into
a record file, an escape sequence (``ESC [31m``) would be run by the terminal of whoever reads it
with ``cat`` or ``git diff``."""


def control_problem(text: str) -> str | None:
    """Why ``text`` is refused for a control character (the first, and where), or None: the one
    wording of the tools' check of every argument and of an item's text values."""
    hit = CONTROL_CHARACTER.search(text)
    if hit is None:
        return None
    if hit.group() == "\x00":
        return "must not hold a NUL character"
    where = f"U+{ord(hit.group()):04X} at character {hit.start() + 1}"
    return f"must not hold control characters ({where}); tabs and line breaks are fine"


NOT_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""What a one-line text (a name, a reason) must not hold: any control character, line breaks and
Unicode's line and paragraph separators included."""


def one_line_problem(text: str) -> str | None:
    """Why ``text`` is refused as a one-line text (a name, a label, a reason), or None: the one
    rule and wording of every such check."""
    return "must be one line of text, without control characters" if NOT_ONE_LINE.search(text) else None


ErrorCode = Literal[
    "ERR_INVALID_INPUT",
    "ERR_INVALID_SCOPE",
    "ERR_SCOPE_CONFLICT",
    "ERR_SESSION_NOT_FOUND",
    "ERR_RECORD_NOT_FOUND",
    "ERR_INVALID_STATE",
    "ERR_STORAGE_UNAVAILABLE",
    "ERR_WRITE_FAILED",
    "ERR_READ_FAILED",
    "ERR_AGENTS_WRITE_DENIED",
    "ERR_INVALID_TARGET",
    "ERR_VERSION_CONFLICT",
    "ERR_SECRET_DETECTED",
    "ERR_VALIDATION_FAILED",
    "ERR_IDEMPOTENCY_KEY_REUSED",
    "ERR_CURSOR_EXPIRED",
    "ERR_CHANNEL_NOT_FOUND",
]
ERROR_CODES: tuple[str, ...] = get_args(ErrorCode)

WarningCode = Literal[
    "WARN_NO_PRIOR_HANDOFF",
    "WARN_NO_PRIOR_NOTES",
    "WARN_SCOPE_AMBIGUOUS",
    "WARN_SCOPE_FALLBACK_USED",
    "WARN_RELATED_PROJECTS_SKIPPED",
    "WARN_RELATED_PROJECTS_EMPTY",
    "WARN_RECOVERY_HANDOFF_USED",
    "WARN_DEDUPE_APPLIED",
    "WARN_RELATED_REFERENCE_IGNORED",
    "WARN_HANDOFF_SPARSE",
    "WARN_EXISTING_AGENTS_SKIPPED",
    "WARN_PLACEHOLDERS_UNRESOLVED",
    "WARN_IMPORT_SUPPRESSED",
    "WARN_PRIVATE_NOT_STORED",
    "WARN_SECRET_REDACTED",
    "WARN_NO_CHANGE",
    "WARN_UNREADABLE_FILES",
    "WARN_SCHEMA_CUT",
    "WARN_VALUES_OUTDATED",
    "WARN_AGENTS_NOT_READ",
    "WARN_STORE_IGNORED",
    "WARN_MERGE_DRIVER_BROKEN",
    "WARN_SESSION_RECOVERED",
]
WARNING_CODES: tuple[str, ...] = get_args(WarningCode)


class CodexmemError(Exception):
    """A problem the caller can act on, carrying a stable ``ERR_...`` code.

    ``fields`` lists the offending inputs as ``{"field": ..., "message": ...}`` (memory tools) or
    the richer per-field dicts of record validation; ``extra`` holds further keys that belong in
    the error object (``current_version``, ``item`` ...).
    """

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        fields: list[dict[str, Any]] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields = fields
        self.extra = extra

    def to_dict(self) -> dict[str, Any]:
        """The ``error`` object of the envelope."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.fields:
            out["fields"] = self.fields
        out.update(self.extra)
        return out

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def invalid_input(field: str, message: str) -> CodexmemError:
    """The common case: one named input is wrong."""
    return CodexmemError("ERR_INVALID_INPUT", f"{field}: {message}", fields=[{"field": field, "message": message}])


class Warnings:
    """Warnings collected while serving one call, deduplicated in first-seen order."""

    def __init__(self) -> None:
        self._items: list[dict[str, str]] = []

    def add(self, code: WarningCode, message: str) -> None:
        entry = {"code": code, "message": message}
        if entry not in self._items:
            self._items.append(entry)

    def extend(self, other: Warnings) -> None:
        for w in other._items:
            self.add(w["code"], w["message"])  # type: ignore[arg-type]

    def codes(self) -> list[str]:
        return [w["code"] for w in self._items]

    def as_list(self) -> list[dict[str, str]]:
        return list(self._items)


def validation_fields(
    exc: ValidationError, *, unknown: str = "unknown key", root: str = "(record)"
) -> list[dict[str, str]]:
    """One ``{"field", "message"}`` per problem pydantic found, the field as a path (``fields[3].config.color``).

    The one translation of pydantic's errors into what codexmem says: every caller (tool arguments,
    record files, channel schemas, the store config) names fields the same way.
    """
    out: list[dict[str, str]] = []
    for err in exc.errors(include_url=False, include_input=False):
        out.append({"field": field_path(err["loc"]) or root, "message": _problem(err, unknown)})
    return out


def field_path(loc: tuple[int | str, ...]) -> str:
    """``("fields", 3, "config")`` -> ``fields[3].config``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _problem(err: Any, unknown: str) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return unknown
    if kind == "missing":
        return "required"
    message = str(err["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    # "a valid dictionary or instance of ProjectDecl": the class is the code's name, not the file's
    return re.sub(r" or instance of \w+", "", message)[:300]
