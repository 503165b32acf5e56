"""The share of field pairs that merge cleanly under git's plain text merge (a merge button's).

For a bug (every channel field) and a note (every field a person or a tool may change, the
Markdown body included), one side changes one field and the other side another: each pair is
three record files (base, ours, theirs) in codexmem's file form, merged by ``git merge-file``,
the same three-way text merge a hosting service's merge button applies. Both sides made one
change each, so their version lines agree.

    .venv/bin/python -m bench.merge_pairs
"""

from __future__ import annotations

import copy
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codexmem.store.layout import ITEM, NOTE, Kind
from codexmem.store.recordfile import serialize

Change = Callable[[dict[str, Any]], None]

BUG_KEYS = ["ticket", "title", "description", "status", "owner", "severity", "points", "area", "due", "reporter"]
BUG: dict[str, Any] = {
    "item_id": "item_01KE6T7Q1RJHAEB2VWR68JYV1C",
    "record_channel_id": "bugs",
    "version": 1,
    "created_at": "2026-01-05T10:11:24.856Z",
    "values": {
        "ticket": "BUG-0001",
        "title": "Coupon discount disappears after switching to Express",
        "description": "A customer applied WINTER10, then changed shipping.\n\nThe total lost the discount.",
        "status": "new",
        "severity": "s2",
        "points": 3,
        "due": "2026-01-19",
        "reporter": "priya@example.com",
    },
}
NOTE_BASE: dict[str, Any] = {
    "note_id": "note_01KJPYPEC0KNZT2D0F8NEJSX8E",
    "version": 1,
    "scope": {"system_id": "sys_shop", "project_id": "proj_shop", "workspace_id": "ws_shop_main"},
    "session_id": "sess_01KJPWPBK0HM76NSW5V2FJ88FH",
    "type": "decision",
    "title": "Payment method is a closed enum",
    "importance": 4,
    "status": "active",
    "source": "codex_explicit",
    "tags": ["api", "payments"],
    "file_paths": [],
    "related_project_ids": [],
    "created_at": "2026-03-02T09:40:00.000Z",
    "content": "Values are defined once.\n\nAnything else is a client bug.\n\nAliases are mapped on input.",
}


def _set(key: str, value: Any) -> Change:
    def change(data: dict[str, Any]) -> None:
        data[key] = value

    return change


def _value(key: str, value: Any) -> Change:
    def change(data: dict[str, Any]) -> None:
        if value is None:
            data["values"].pop(key, None)
        else:
            data["values"][key] = value

    return change


def _supersede(data: dict[str, Any]) -> None:
    data["status"] = "superseded"
    data["superseded_by"] = "note_01KJQ38XW0GQ1TPS1CNK4GBMMW"


def _retract(data: dict[str, Any]) -> None:
    data["status"] = "retracted"
    data["status_reason"] = "Wrong: the enum is open"


def _body(index: int) -> Change:
    def change(data: dict[str, Any]) -> None:
        parts = data["content"].split("\n\n")
        parts[index] = parts[index] + " (checked again)"
        data["content"] = "\n\n".join(parts)

    return change


BUG_CHANGES: dict[str, tuple[str, Change]] = {
    **{f"{k}: changed": (k, _value(k, f"changed {k}")) for k in ("ticket", "title", "description")},
    "status: changed": ("status", _value("status", "fixed")),
    "owner: set": ("owner", _value("owner", "aiko")),
    "severity: changed": ("severity", _value("severity", "s1")),
    "points: changed": ("points", _value("points", 5)),
    "area: set": ("area", _value("area", "ui")),
    "due: cleared": ("due", _value("due", None)),
    "reporter: changed": ("reporter", _value("reporter", "jonas@example.com")),
}
"""change name -> (the field it changes, how)."""
NOTE_CHANGES: dict[str, tuple[str, Change]] = {
    "title: changed": ("title", _set("title", "Payment method is a closed enum owned by order-api")),
    "type: changed": ("type", _set("type", "constraint")),
    "status: resolved": ("status", _set("status", "resolved")),
    "status: superseded (and by)": ("status", _supersede),
    "status: retracted (and why)": ("status", _retract),
    "importance: changed": ("importance", _set("importance", 5)),
    "tags: one added": ("tags", _set("tags", ["api", "payments", "enum"])),
    "tags: all removed": ("tags", _set("tags", [])),
    "file_paths: first added": ("file_paths", _set("file_paths", ["internal/order/payment_method.go"])),
    "content: first paragraph": ("content", _body(0)),
    "content: last paragraph": ("content", _body(2)),
}


@dataclass
class Pairs:
    total: int = 0
    conflicting: list[str] = field(default_factory=list)


def _variant(kind: Kind, base: dict[str, Any], change: Change, keys: list[str]) -> bytes:
    data = copy.deepcopy(base)
    change(data)
    data["version"] = 2
    return serialize(kind, data, value_keys=keys, labels={"note_01KJQ38XW0GQ1TPS1CNK4GBMMW": "The enum is open"})


def _merges_cleanly(base: bytes, ours: bytes, theirs: bytes, tmp: Path) -> bool:
    for name, raw in (("base", base), ("ours", ours), ("theirs", theirs)):
        (tmp / name).write_bytes(raw)
    done = subprocess.run(
        ["git", "merge-file", "-p", str(tmp / "ours"), str(tmp / "base"), str(tmp / "theirs")],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def field_pairs() -> Pairs:
    """Every ordered pair of changes to two different fields, for a bug and for a note."""
    pairs = Pairs()
    cases: list[tuple[Kind, dict[str, Any], dict[str, tuple[str, Change]], list[str]]] = [
        (ITEM, BUG, BUG_CHANGES, BUG_KEYS),
        (NOTE, NOTE_BASE, NOTE_CHANGES, []),
    ]
    with tempfile.TemporaryDirectory(prefix="codexmem-pairs-") as tmp:
        for kind, base, changes, keys in cases:
            original = serialize(kind, base, value_keys=keys)
            for ours_name, (ours_field, ours_change) in changes.items():
                for theirs_name, (theirs_field, theirs_change) in changes.items():
                    if ours_field == theirs_field:
                        continue
                    pairs.total += 1
                    ours = _variant(kind, base, ours_change, keys)
                    theirs = _variant(kind, base, theirs_change, keys)
                    if not _merges_cleanly(original, ours, theirs, Path(tmp)):
                        pairs.conflicting.append(f"{kind.name}: {ours_name} / {theirs_name}")
    return pairs


def main() -> int:
    pairs = field_pairs()
    clean = pairs.total - len(pairs.conflicting)
    share = 100 * clean / pairs.total
    print(f"field pairs merging cleanly under git's text merge: {clean} of {pairs.total} ({share:.1f}%)")
    for name in pairs.conflicting:
        print(f"  conflicts: {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
