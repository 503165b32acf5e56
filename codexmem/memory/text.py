"""Normalization of what callers write: required texts, tags, file paths, string lists.

Stored memory is compared and searched later (dedupe, filters, the startup brief), so spelling
variants are folded once, on the way in. Every refusal names the offending field.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from codexmem.errors import CodexmemError, invalid_input
from codexmem.store.recordfile import CONFLICT_MARKER

MAX_TAG_CHARS = 64  # the Tag pattern in codexmem.models
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_DRIVE = re.compile(r"^[A-Za-z]:")


def required_text(value: str, field: str) -> str:
    """The trimmed text; a blank one is refused (a schema's minLength cannot see whitespace)."""
    text = value.strip()
    if not text:
        raise invalid_input(field, "must not be blank")
    return text


def markdown_body(value: str, field: str) -> str:
    """:func:`required_text` for a Markdown body, which a record file holds from the first column:
    a line opening as git's conflict markers do would make the file read as an unsettled merge
    (``check`` fails it), so it is refused, naming the line, before anything is written."""
    text = required_text(value, field)
    found = CONFLICT_MARKER.search(text)
    if found is not None:
        line = text.count("\n", 0, found.start()) + 1
        raise invalid_input(
            field,
            f"line {line} starts with {found.group().strip()!r}, as git's conflict markers do, so the saved file "
            "would read as an unsettled merge: indent that line (4 spaces make a code block that shows it as "
            "written) or quote it with '> '",
        )
    return text


def slug_tag(tag: str) -> str:
    """``"Frontend API"`` -> ``"frontend-api"``; accents are folded, other symbols become ``-``."""
    folded = unicodedata.normalize("NFKD", tag).encode("ascii", "ignore").decode("ascii")
    return _NOT_SLUG.sub("-", folded.lower()).strip("-")[:MAX_TAG_CHARS].rstrip("-")


def normalize_tags(tags: Iterable[str]) -> list[str]:
    """Slugs in first-seen order; a tag with nothing left after slugging is dropped."""
    return unique(slug_tag(t) for t in tags)


def normalize_strings(items: Iterable[str]) -> list[str]:
    """Trimmed, non-blank, exact duplicates removed, order kept."""
    return unique(item.strip() for item in items)


def normalize_paths(paths: Sequence[str], field: str) -> list[str]:
    """Repository-relative paths: ``src\\a.ts``, ``./src/a.ts`` and ``src//a.ts`` all give ``src/a.ts``.

    Absolute paths (the services first make one inside the project's work tree relative:
    ``anchors.in_work_tree``) and paths climbing out of the repository with ``..`` are refused,
    naming each offending ``field[i]``, because a path is only meaningful relative to every checkout.
    """
    out: list[str] = []
    bad: list[dict[str, Any]] = []
    for i, raw in enumerate(paths):
        path = raw.strip().replace("\\", "/")
        if not path:
            continue
        if "\0" in path:
            bad.append({"field": f"{field}[{i}]", "message": "must not hold a NUL character (no file's path can)"})
            continue
        if path.startswith("/") or _DRIVE.match(path):
            bad.append(
                {
                    "field": f"{field}[{i}]",
                    "message": "must be relative to the repository root (an absolute path is taken only inside the "
                    "project's work tree)",
                }
            )
            continue
        clean = posixpath.normpath(path)
        if clean == ".." or clean.startswith("../"):
            bad.append({"field": f"{field}[{i}]", "message": "must not climb out of the repository with .."})
            continue
        if clean != ".":
            out.append(clean)
    if bad:
        first = bad[0]
        raise CodexmemError("ERR_INVALID_INPUT", f"{first['field']}: {first['message']}", fields=bad)
    return unique(out)


def unique(items: Iterable[str]) -> list[str]:
    """Non-empty items, first occurrence kept."""
    return list(dict.fromkeys(item for item in items if item))
