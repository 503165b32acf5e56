"""The merge driver: a three-way merge of one record file, field by field.

Git's text merge already merges what nobody disagreed on in the file form (store/recordfile.py),
even at a hosting service's merge button. A local ``git merge``, ``rebase`` or ``pull`` can do
better with this driver (``codexmem setup`` registers it): fields changed on one side only are
taken from that side, the same change on both sides once, a Markdown body changed in different
places is merged as text, and the version is the higher of the two (what the history says:
``codexmem check`` expects the highest version of a record's heads). Only a true disagreement (one
field, two new values) is a conflict, written between git's markers around that field alone, and
the driver then exits non-zero as git requires.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codexmem.store.history import ABSENT, same, three_way
from codexmem.store.layout import CONFIG_FILE, ITEM, NOTE, Kind, identify_relpath
from codexmem.store.recordfile import FORMS, parse, serialize
from codexmem.store.textmerge import merge_text
from codexmem.store.yamlio import YamlError, load_yaml


@dataclass(frozen=True)
class Merged:
    data: dict[str, Any]
    conflicts: dict[str, tuple[Any, Any]]
    """Field (an item's value key) -> (ours, theirs) where the two sides disagree."""
    body_conflict: bool = False


def merge_file(base: Path, ours: Path, theirs: Path, name: str) -> int:
    """``codexmem merge-file %O %A %B %P``: merge into ``ours``; 0 when clean, 1 on a conflict.

    A file that is not a record of a store (or that cannot be read as one) gets git's own text
    merge, so the driver never does worse than git would.
    """
    located = _locate(name)
    if located is None:
        return _text_merge(ours, base, theirs)
    store_root, kind, rid, channel = located
    try:
        sides = [_read(kind, path, name) for path in (base, ours, theirs)]
    except (OSError, YamlError, ValueError):
        return _text_merge(ours, base, theirs)
    merged = merge_records(kind, sides[0], sides[1], sides[2])
    data = {**merged.data, kind.id_field: rid}
    raw = serialize(
        kind,
        data,
        labels=_titles(store_root, data),
        value_keys=_value_keys(store_root, channel) if kind is ITEM else (),
        conflicts=merged.conflicts,
    )
    ours.write_bytes(raw)
    return 1 if merged.conflicts or merged.body_conflict else 0


def merge_records(kind: Kind, base: Mapping[str, Any], ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> Merged:
    """The field-by-field merge of three parsed record files (an item's values one by one; the
    version: the higher one)."""
    base = _created_copy(base, ours, theirs)
    data, conflicts, body_conflict = _merge_fields(base, ours, theirs, kind.body_field, skip={"version", "values"})
    _whole_groups(kind, (base, ours, theirs), data, conflicts)
    if kind is ITEM:
        values, value_conflicts, _ = _merge_fields(
            _mapping(base.get("values")), _mapping(ours.get("values")), _mapping(theirs.get("values")), None
        )
        data["values"] = values
        conflicts.update(value_conflicts)
    data["version"] = max(int(ours.get("version", 1)), int(theirs.get("version", 1)))
    return Merged(data, conflicts, body_conflict)


def _created_copy(base: Mapping[str, Any], ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> Mapping[str, Any]:
    """The base of a record both sides added (git's add/add: no common ancestor holds it).

    A record made on a branch that was squash-merged has no ancestor on ``main``: the branch's next
    merge meets main's copy as a file both sides added. When one copy is still at version 1, it is
    the creation the other changed from (the same ``created_at``), so it is the base, and only
    what the other side changed since is merged; otherwise there is none, as git says.
    """
    if base or not ours or not theirs or ours.get("created_at") != theirs.get("created_at"):
        return base
    versions = int(ours.get("version", 1)), int(theirs.get("version", 1))
    if versions[0] == 1 and versions[1] > 1:
        return ours
    if versions[1] == 1 and versions[0] > 1:
        return theirs
    return base


def _whole_groups(
    kind: Kind,
    sides: tuple[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]],
    data: dict[str, Any],
    conflicts: dict[str, Any],
) -> None:
    """Fields that change together (a note's status with its superseded_by and status_reason) merge
    as one: when both sides changed the group differently, each side's group is kept whole between
    the markers, so a person who picks a side never gets a status with the other side's reason."""
    base, ours, theirs = sides
    for group in FORMS[kind.name].content if kind.name in FORMS else ():
        if len(group) < 2:
            continue
        o, a, b = ([side.get(name) for name in group] for side in (base, ours, theirs))
        if same(a, o) or same(b, o) or same(a, b):
            continue
        for name in group:
            if name not in conflicts and not same(ours.get(name, ABSENT), theirs.get(name, ABSENT)):
                conflicts[name] = (ours.get(name), theirs.get(name))
                data[name] = ours.get(name)


def _merge_fields(
    base: Mapping[str, Any],
    ours: Mapping[str, Any],
    theirs: Mapping[str, Any],
    body_field: str | None,
    skip: frozenset[str] | set[str] = frozenset(),
) -> tuple[dict[str, Any], dict[str, tuple[Any, Any]], bool]:
    """(merged fields, disagreements, whether the body text merge conflicted)."""
    out: dict[str, Any] = {}
    conflicts: dict[str, tuple[Any, Any]] = {}
    body_conflict = False
    for key in _keys(base, ours, theirs):
        if key in skip:
            continue
        o, a, b = base.get(key, ABSENT), ours.get(key, ABSENT), theirs.get(key, ABSENT)
        value, clash = three_way(o, a, b)
        if clash and key == body_field:
            text, clean = merge_text(str(_or_none(o) or ""), str(_or_none(a) or ""), str(_or_none(b) or ""))
            value, clash, body_conflict = text, False, not clean
        if clash:
            conflicts[key] = (_or_none(a), _or_none(b))
        if value is not ABSENT:
            out[key] = value
    return out, conflicts, body_conflict


def _or_none(value: Any) -> Any:
    return None if value is ABSENT else value


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _keys(*sides: Mapping[str, Any]) -> list[str]:
    seen: dict[str, None] = {}
    for side in sides:
        seen.update(dict.fromkeys(side))
    return list(seen)


def _read(kind: Kind, path: Path, name: str) -> dict[str, Any]:
    raw = path.read_bytes()
    return parse(kind, raw, source=name) if raw.strip() else {}


def _text_merge(ours: Path, base: Path, theirs: Path) -> int:
    done = subprocess.run(["git", "merge-file", str(ours), str(base), str(theirs)], check=False)
    return 0 if done.returncode == 0 else 1


def _locate(name: str) -> tuple[Path, Kind, str, str | None] | None:
    """(store folder, kind, id, channel) of a record path git names (relative to the work tree)."""
    parts = Path(name).as_posix().split("/")
    for start in range(len(parts)):
        found = identify_relpath("/".join(parts[start:]))
        if found is not None:
            root = Path(os.getcwd(), *parts[:start])
            if (root / CONFIG_FILE).is_file() and found[0].name != "channel":
                return root, *found
    return None


def _titles(store_root: Path, data: Mapping[str, Any]) -> dict[str, str]:
    """Titles of the notes a record names, as the work tree holds them (for the comments beside ids)."""
    named = [data.get("superseded_by"), data.get("durable_memory_id"), *(data.get("related_note_ids") or [])]
    titles: dict[str, str] = {}
    for note_id in (n for n in named if isinstance(n, str)):
        try:
            note = parse(NOTE, (store_root / "notes" / f"{note_id}.md").read_bytes(), source=note_id)
        except (OSError, ValueError):
            continue
        if isinstance(note.get("title"), str):
            titles[note_id] = note["title"]
    return titles


def _value_keys(store_root: Path, channel: str | None) -> list[str]:
    try:
        schema = load_yaml((store_root / "channels" / str(channel) / "schema.yaml").read_bytes(), source="schema")
    except (OSError, ValueError):
        return []
    fields = schema.get("fields", []) if isinstance(schema, dict) else []
    return [
        f["key"] for f in fields if isinstance(f, dict) and isinstance(f.get("key"), str) and f.get("type") != "formula"
    ]
