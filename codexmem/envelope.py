"""One shape for every answer, sized to survive Codex's tool-output cap.

Codex cuts a tool result to about 10 KiB or 256 lines, removing the middle, so an answer that
is too long reaches the model as broken JSON. Every answer here is one line of compact JSON of
at most :data:`MAX_ANSWER_BYTES`; lists are filled item by item until the budget is reached.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from codexmem.errors import CodexmemError, Warnings, invalid_input

MAX_ANSWER_BYTES = 9000
RECORD_BUDGET = MAX_ANSWER_BYTES - 700
"""A stored record must fit whole in one answer, with room for the envelope and the warnings of a save."""
T = TypeVar("T")


def compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def size_of(obj: Any) -> int:
    return len(compact(obj).encode("utf-8"))


def ok(data: dict[str, Any], warnings: Warnings | None = None) -> dict[str, Any]:
    return {"ok": True, "data": data, "warnings": warnings.as_list() if warnings else []}


def fail(error: CodexmemError, warnings: Warnings | None = None) -> dict[str, Any]:
    return {"ok": False, "error": error.to_dict(), "warnings": warnings.as_list() if warnings else []}


def answer_size(data: dict[str, Any], warnings: Warnings | None = None) -> int:
    """Bytes of the success answer that would carry ``data`` (and the warnings so far)."""
    return size_of(ok(data, warnings))


def fits(data: dict[str, Any], warnings: Warnings | None = None, *, budget: int = MAX_ANSWER_BYTES) -> bool:
    return answer_size(data, warnings) <= budget


def fit(
    items: Sequence[T],
    render: Callable[[list[T]], dict[str, Any]],
    warnings: Warnings | None = None,
    *,
    budget: int = MAX_ANSWER_BYTES,
    envelope: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], int]:
    """The data for the largest prefix of ``items`` whose answer stays within ``budget`` bytes.

    The one way every list answer is sized, memory's and records' alike. ``render(kept)`` builds
    the answer's data for a prefix; the answer is ``ok(data, warnings)`` unless ``envelope`` wraps
    the data otherwise (an error's fields). Returns the data and how many items were kept. Sizes
    are additive in compact JSON, so each item is measured once.
    """

    def whole(kept: list[T]) -> dict[str, Any]:
        data = render(kept)
        return envelope(data) if envelope is not None else ok(data, warnings)

    base = size_of(whole([]))
    kept: list[T] = []
    used = base
    for item in items:
        cost = size_of(whole([item])) - base + (1 if kept else 0)
        if used + cost > budget:
            break
        kept.append(item)
        used += cost
    # Guard against a renderer whose size is not additive (never trust the arithmetic alone).
    while kept and size_of(whole(kept)) > budget:
        kept.pop()
    return render(kept), len(kept)


def shorten(text: str, limit: int = 300) -> tuple[str, bool]:
    """Cut ``text`` to about ``limit`` characters at a word boundary; (text, was_cut)."""
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip() + "…", True


def require_fits(view: dict[str, Any], fields: Sequence[str], what: str) -> None:
    """Refuse a record too large to return whole (multi-byte text counts in bytes), naming its largest field."""
    size = size_of(view)
    if size <= RECORD_BUDGET:
        return
    biggest = max(fields, key=lambda f: size_of(view.get(f)))
    raise invalid_input(
        biggest,
        f"the {what} would take {size} bytes as JSON, over the {RECORD_BUDGET} bytes one answer allows: "
        f"shorten {biggest} or split the {what}",
    )
