"""One shape for every answer, sized to survive Codex's tool-output cap.

Codex cuts a tool result to about 10 KiB or 256 lines, removing the middle, so an answer that
is too long reaches the model as broken JSON. Every answer here is one line of compact JSON of
at most :data:`MAX_ANSWER_BYTES`; lists are filled item by item until the budget is reached.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from codexmem.errors import CodexmemError, Warnings

MAX_ANSWER_BYTES = 9000
T = TypeVar("T")


def compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def size_of(obj: Any) -> int:
    return len(compact(obj).encode("utf-8"))


def ok(data: dict[str, Any], warnings: Warnings | None = None) -> dict[str, Any]:
    return {"ok": True, "data": data, "warnings": warnings.as_list() if warnings else []}


def fail(error: CodexmemError, warnings: Warnings | None = None) -> dict[str, Any]:
    return {"ok": False, "error": error.to_dict(), "warnings": warnings.as_list() if warnings else []}


def fit(
    items: Sequence[T],
    render: Callable[[list[T]], dict[str, Any]],
    *,
    budget: int = MAX_ANSWER_BYTES,
) -> tuple[dict[str, Any], int]:
    """The largest prefix of ``items`` whose rendered envelope stays within ``budget`` bytes.

    ``render(kept)`` builds the whole envelope for a prefix; returns it and how many were kept.
    Sizes are additive in compact JSON, so this measures each item once.
    """
    base = size_of(render([]))
    kept: list[T] = []
    used = base
    for item in items:
        cost = size_of(render([item])) - base + (1 if kept else 0)
        if used + cost > budget:
            break
        kept.append(item)
        used += cost
    envelope = render(kept)
    # Guard against a renderer whose size is not additive (never trust the arithmetic alone).
    while kept and size_of(envelope) > budget:
        kept.pop()
        envelope = render(kept)
    return envelope, len(kept)


def shorten(text: str, limit: int = 300) -> tuple[str, bool]:
    """Cut ``text`` to about ``limit`` characters at a word boundary; (text, was_cut)."""
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…", True
