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
WORD_MATCH_CELLS = 250_000
"""Words of one block times words of the other above which a block is checked for a rewrite."""
REWRITTEN_BELOW = 0.5
"""The share of words two blocks have in common (difflib's quick ratio) below which a long block
reads as rewritten: a word diff of it would be mostly noise, and is the slowest to make."""
_TOKENS = re.compile(r"\S+\s*|\s+")
"""A word with the spaces after it (or the spaces a text starts with)."""


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
    """``[{"op": "eq"|"del"|"ins", "text": ...}]``: words removed and added; long unchanged runs
    keep only their ends, so a one-word edit of a long note stays short."""
    ops = word_ops(old, new)
    last = len(ops) - 1
    return [
        {"op": op, "text": _shorten_equal(text, first=i == 0, last=i == last) if op == "eq" else text}
        for i, (op, text) in enumerate(ops)
    ]


def word_ops(old: str, new: str) -> list[tuple[str, str]]:
    """The whole runs of a word diff: the ``eq`` and ``del`` texts join to ``old``, ``eq`` and
    ``ins`` to ``new``, and no two neighbours have the same op.

    The site diffs every change of every record on each build, so this must stay cheap for long
    texts changed many times (a one-word edit of a 6,000-character note took 75 ms when every
    word and space was matched against every other). The unchanged words at both ends are set
    aside first; lines are matched next, and words only inside the lines that changed; a long
    block that shares too few words to read as edited shows as removed and added whole.
    """
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    limit = min(len(a), len(b))
    start = 0
    while start < limit and a[start] == b[start]:
        start += 1
    end = 0
    while end < limit - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    runs: list[tuple[str, str]] = [("eq", "".join(a[:start]))]
    lines_a = "".join(a[start : len(a) - end]).splitlines(keepends=True)
    lines_b = "".join(b[start : len(b) - end]).splitlines(keepends=True)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, lines_a, lines_b, autojunk=False).get_opcodes():
        removed, added = "".join(lines_a[i1:i2]), "".join(lines_b[j1:j2])
        if op == "equal":
            runs.append(("eq", removed))
        elif op == "replace":
            runs += _word_runs(removed, added)
        else:
            runs += [("del", removed), ("ins", added)]
    runs.append(("eq", "".join(a[len(a) - end :])))
    merged: list[tuple[str, str]] = []
    for kind, text in _kept_ends(runs):
        if not text:
            continue
        if merged and merged[-1][0] == kind:
            merged[-1] = (kind, merged[-1][1] + text)
        else:
            merged.append((kind, text))
    return merged


def _kept_ends(runs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A removal followed by an addition that starts with the same words keeps those words:
    words are cut with the spaces after them, so "hand." and "hand.\n\nMore." differ as tokens,
    and text added after a last word showed that word as removed and added again."""
    out: list[tuple[str, str]] = []
    for kind, text in runs:
        if kind == "ins" and out and out[-1][0] == "del" and out[-1][1]:
            removed = out.pop()[1]
            # Only whole words are kept: "omega" to "omega!" stays a changed word.
            if text.startswith(removed) and text[len(removed) : len(removed) + 1].isspace():
                out += [("eq", removed), ("ins", text[len(removed) :])]
            elif removed.startswith(text) and removed[len(text) : len(text) + 1].isspace():
                out += [("eq", text), ("del", removed[len(text) :])]
            else:
                out += [("del", removed), ("ins", text)]
        else:
            out.append((kind, text))
    return out


def _word_runs(old: str, new: str) -> list[tuple[str, str]]:
    """Words removed and added between two blocks of lines."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if len(a) * len(b) > WORD_MATCH_CELLS and matcher.quick_ratio() < REWRITTEN_BELOW:
        return [("del", old), ("ins", new)]
    runs: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            runs.append(("eq", "".join(a[i1:i2])))
            continue
        removed, added = "".join(a[i1:i2]), "".join(b[j1:j2])
        # "retry " replaced by "retries ": the space both keep is not part of the change.
        space = _common_space_suffix(removed, added)
        runs += [("del", removed[: len(removed) - space]), ("ins", added[: len(added) - space])]
        runs.append(("eq", added[len(added) - space :]))
    return runs


def _common_space_suffix(x: str, y: str) -> int:
    """How many characters of whitespace both texts end with."""
    n = 0
    while n < len(x) and n < len(y) and x[-1 - n] == y[-1 - n] and x[-1 - n].isspace():
        n += 1
    return n


def _shorten_equal(text: str, *, first: bool, last: bool) -> str:
    tokens = _TOKENS.findall(text)
    if len(tokens) <= 2 * KEPT_EQUAL_WORDS:
        return text
    head = "" if first else "".join(tokens[:KEPT_EQUAL_WORDS]).rstrip() + " "
    tail = "" if last else " " + "".join(tokens[-KEPT_EQUAL_WORDS:]).lstrip()
    return f"{head}…{tail}"
