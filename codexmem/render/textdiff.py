"""Changes to texts and values shown to people: a word diff, and a value as short plain text.

Shared by the site's history rows and ``codexmem diff``; kept apart from the site so the command
does not load the site's templates and Markdown engine.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

Rec = dict[str, Any]
KEPT_EQUAL_WORDS = 8
"""In a word diff, unchanged runs longer than this show only their ends around an ellipsis."""
PLAIN_VALUE_CHARS = 200
"""A short value in a history row; longer texts are shown as a word diff instead."""
_WORDS = re.compile(r"\s+|[^\s]+")


def plain_value(value: Any) -> str:
    """A field's value as short text, for records without a schema (notes, handoffs, sessions)."""
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
    text = str(value)
    return text if len(text) <= PLAIN_VALUE_CHARS else text[: PLAIN_VALUE_CHARS - 1] + "…"


def word_diff(old: str, new: str) -> list[Rec]:
    """``[{"op": "eq"|"del"|"ins", "text": ...}]``: words (and the spaces between them) removed and
    added; long unchanged runs keep only their ends, so a one-word edit of a long note stays short."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    out: list[Rec] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append({"op": "eq", "text": _shorten_equal(a[i1:i2], first=not out, last=i2 == len(a))})
            continue
        if i2 > i1:
            out.append({"op": "del", "text": "".join(a[i1:i2])})
        if j2 > j1:
            out.append({"op": "ins", "text": "".join(b[j1:j2])})
    return out


def _shorten_equal(tokens: list[str], *, first: bool, last: bool) -> str:
    keep = 2 * KEPT_EQUAL_WORDS  # words and the spaces between them
    if len(tokens) <= 2 * keep:
        return "".join(tokens)
    head = "" if first else "".join(tokens[:keep]).rstrip() + " "
    tail = "" if last else " " + "".join(tokens[-keep:]).lstrip()
    return f"{head}…{tail}"
