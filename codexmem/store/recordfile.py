"""A record's file: its bytes from the data, its data from the bytes, and whether it is usable.

:func:`read_record` is the one definition of a usable record file, shared by every reader: the
index (which keeps unusable files in ``bad_files``), the write path (``Store.read_file``) and
``codexmem check``, so none of them accepts what another refuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codexmem.errors import validation_fields
from codexmem.store.atomic import read_bytes_nofollow
from codexmem.store.ids import is_record_id, ulid_time
from codexmem.store.layout import ITEM, Kind
from codexmem.store.screen import credential_findings
from codexmem.store.yamlio import MAX_YAML_BYTES, YamlError, dump_flow, dump_yaml, load_yaml, split_front_matter
from codexmem.timeutil import format_ts


def read_record(path: Path, rel: str, kind: Kind, rid: str, channel: str | None) -> tuple[dict[str, Any], bytes]:
    """The record at ``path`` (``rel`` inside the store) and its bytes, or ValueError/OSError saying why not.

    Parsed strictly, validated against its model and its file name, and refused when one of its
    texts looks like a credential (typed in by hand: never served, never shown on the site).
    """
    raw = read_bytes_nofollow(path, MAX_YAML_BYTES)
    return usable_record(raw, rel, kind, rid, channel), raw


def usable_record(raw: bytes, rel: str, kind: Kind, rid: str, channel: str | None) -> dict[str, Any]:
    """:func:`read_record` for bytes already read."""
    data = validate_record(kind, parse(kind, raw, source=rel), rid, channel)
    found = credential_findings(data)
    if found:
        shown = "; ".join(f"{path} ({', '.join(kinds)})" for path, kinds in found[:3])
        raise ValueError(f"holds what looks like a credential: {shown}; remove it")
    return data


def validate_record(kind: Kind, data: dict[str, Any], rid: str, channel: str | None) -> dict[str, Any]:
    """Validate parsed file data against its model and its file name; return the canonical dump.

    What the file name already says (the id, an item's channel) and what the id encodes (the time
    of creation) is not repeated in the file: it is filled in here.
    """
    data = dict(data)
    data.setdefault(kind.id_field, rid)
    if kind is ITEM:
        data.setdefault("record_channel_id", channel)
    created = CREATED_FIELD.get(kind.name)
    if created is not None and created not in data and is_record_id(rid) and (moment := ulid_time(rid)):
        data[created] = format_ts(moment)
    try:
        model = kind.model.model_validate(data)
    except ValidationError as exc:
        problems = validation_fields(exc)
        text = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
        raise ValueError(text + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")) from None
    dumped: dict[str, Any] = model.model_dump(mode="json")
    if dumped.get(kind.id_field) != rid:
        raise ValueError(f"{kind.id_field} {dumped.get(kind.id_field)!r} does not match the file name ({rid})")
    if kind is ITEM and dumped.get("record_channel_id") != channel:
        raise ValueError(f"record_channel_id {dumped.get('record_channel_id')!r} does not match its folder ({channel})")
    return dumped


# ------------------------------------------------------------------ the file forms


@dataclass(frozen=True)
class FileForm:
    """How one kind of record lays out its file (format 2), so that git's text merge merges it.

    Git's three-way text merge conflicts when two changed lines touch, even in different fields,
    and merges changes that an unchanged line separates. So every field a person or a tool may
    change is written as its key on a line of its own with the value on the lines below it: the
    key line never changes, and separates each field's value from its neighbours'. ``content``
    lists those fields in the order a reviewer reads them; in a group, the first field is always
    written (``null`` and ``[]`` included: a field that appears later would be inserted next to a
    neighbour) and the others only when set (they change together with the first: a status and
    the note that superseded it). ``book`` is the bookkeeping written once at creation, one line
    each, left out when it says nothing the file name or the defaults do not; the version comes
    last, from version 2 on, after the first always-written bookkeeping line, so two branches that
    changed a record equally often write the same version lines.
    """

    content: tuple[tuple[str, ...], ...]
    book: tuple[str, ...]
    always: frozenset[str] = frozenset()


FORMS: dict[str, FileForm] = {
    "note": FileForm(
        content=(
            ("title",),
            ("type",),
            ("status", "superseded_by", "status_reason"),
            ("importance",),
            ("tags",),
            ("file_paths",),
        ),
        book=("scope", "session_id", "source", "related_project_ids", "created_at", "anchor"),
        always=frozenset({"scope"}),
    ),
    "handoff": FileForm(
        content=(
            ("task",),
            ("kind",),
            ("status", "status_reason"),
            ("next_steps",),
            ("completed",),
            ("open_questions",),
            ("risks",),
            ("files_touched",),
            ("related_note_ids",),
        ),
        book=("scope", "session_id", "source", "created_at"),
        always=frozenset({"scope"}),
    ),
    "session": FileForm(
        content=(("task",), ("status", "ended_at"), ("branch_name",)),
        book=("scope", "started_at"),
        always=frozenset({"scope"}),
    ),
    "import": FileForm(
        content=(
            ("source",),
            ("external_id",),
            ("payload_hash",),
            ("durable_memory_id",),
            ("suppressed", "suppression_reason"),
            ("content_changed",),
        ),
        book=("scope", "session_id", "imported_at"),
        always=frozenset({"scope"}),
    ),
    "item": FileForm(content=(("values",),), book=("created_at",), always=frozenset({"created_at"})),
}
CREATED_FIELD = {
    "session": "started_at",
    "note": "created_at",
    "handoff": "created_at",
    "import": "imported_at",
    "item": "created_at",
}
"""The time of creation, left out of a file when it is the time its id encodes (what codexmem writes)."""
NOT_IN_FILES = frozenset({"updated_at"})
"""Derived from the events, so no line changes on every write."""
LABELLED = frozenset({"superseded_by", "related_note_ids", "durable_memory_id"})
"""Fields that name notes: each id is followed by the note's title as a comment, for the reviewer."""
LABEL_CHARS = 80


def serialize(
    kind: Kind,
    data: Mapping[str, Any],
    *,
    labels: Mapping[str, str] | None = None,
    value_keys: Sequence[str] = (),
    conflicts: Mapping[str, tuple[Any, Any]] | None = None,
) -> bytes:
    """The exact bytes of a record file, in its :class:`FileForm`.

    ``labels`` maps note ids to titles (shown as comments after the ids of LABELLED fields);
    ``value_keys`` are an item's channel fields in schema order (each written, ``null`` when unset);
    ``conflicts`` (the merge driver's) maps a field (an item's value key) to the two values two
    branches gave it: the field is written twice between git's conflict markers, so a person reads
    and settles exactly that field.
    """
    clash = conflicts or {}
    if kind.name == "channel":
        return dump_yaml(_drop_none(dict(data))).encode("utf-8")
    form = FORMS[kind.name]
    out: list[str] = []
    for group in form.content:
        for position, key in enumerate(group):
            value = data.get(key)
            if position and value in (None, [], "") and key not in clash:
                continue
            if key == "values":
                out.append(_values_block(value or {}, value_keys, clash))
            else:
                label = (labels or {}) if key in LABELLED else None
                out.append(_either(key, value, clash, partial(_field, indent=0, labels=label)))
    for key in form.book:
        value = data.get(key)
        if key in clash or key in form.always or not _is_default(kind, key, value, data):
            out.append(_either(key, value, clash, _book_line))
    if int(data.get("version", 1)) != 1:
        out.append(f"version:\n  {int(data['version'])}\n")
    front = "".join(out)
    if kind.body_field:
        return f"---\n{front}---\n{data.get(kind.body_field, '')}\n".encode()
    return front.encode("utf-8")


def _field(key: str, value: Any, *, indent: int, labels: Mapping[str, str] | None) -> str:
    """``key:`` on a line of its own, the value below it (lists at the key's indentation, as YAML allows)."""
    pad = " " * indent
    if isinstance(value, list) and value:
        lines = _dump_value(value).removesuffix("\n").split("\n")
        if labels is not None:
            lines = [_labelled(line, labels) for line in lines]
        return f"{pad}{dump_flow(key)}:\n" + "".join(f"{pad}{line}\n" if line else "\n" for line in lines)
    text = "[]\n" if isinstance(value, list) else "{}\n" if value == {} else _dump_value(value)
    lines = text.removesuffix("\n").split("\n")
    if labels is not None and len(lines) == 1:
        lines = [_labelled(lines[0], labels)]
    return f"{pad}{dump_flow(key)}:\n" + "".join(f"{pad}  {line}\n" if line else "\n" for line in lines)


def _dump_value(value: Any) -> str:
    """A value as a YAML document of its own, to be indented two spaces under its key's line.

    Without the end marker (``...``) a kept trailing newline makes the dumper add: the value sits
    inside a mapping, where the next key ends it. A block scalar's explicit indentation (``|2-``,
    written for a text that starts with a space or a newline) counts from its parent's
    indentation, which the key line puts two spaces further out: it grows by two.
    """
    text = dump_yaml(value)
    if text.endswith("\n...\n"):  # the marker is a line of its own; a plain value may end in dots
        text = text[:-4]
    header, sep, rest = text.partition("\n")
    if (m := _BLOCK_HEADER.match(header)) is not None:
        return f"{m['style']}{int(m['indent']) + 2}{m['chomp']}{sep}{rest}"
    return text


_BLOCK_HEADER = re.compile(r"^(?P<style>[|>])(?P<indent>[1-9])(?P<chomp>[+-]?)$")


def _values_block(values: Mapping[str, Any], keys: Sequence[str], clash: Mapping[str, tuple[Any, Any]]) -> str:
    """An item's values: every channel field in schema order (``null`` when unset), then any others."""
    others = [k for k in values if k not in keys and values[k] is not None]  # unset and unknown: nothing to write
    ordered = [*keys, *others, *(k for k in clash if k not in keys and k not in others)]
    if not ordered:
        return "values:\n  {}\n"
    render = partial(_field, indent=2, labels=None)
    return "values:\n" + "".join(_either(k, values.get(k), clash, render) for k in ordered)


def _either(key: str, value: Any, clash: Mapping[str, tuple[Any, Any]], render: Callable[[str, Any], str]) -> str:
    """A field's lines, or, when the two sides of a merge disagree on it, both versions between markers."""
    if key not in clash:
        return render(key, value)
    ours, theirs = clash[key]
    return f"<<<<<<< ours\n{render(key, ours)}=======\n{render(key, theirs)}>>>>>>> theirs\n"


def _book_line(key: str, value: Any) -> str:
    return f"{key}: {dump_flow(value)}\n"


def _labelled(line: str, labels: Mapping[str, str]) -> str:
    """``- note_X`` -> ``- note_X  # Its title``, when the title is known."""
    rid = line.removeprefix("- ").strip()
    title = labels.get(rid)
    if not title or not is_record_id(rid, "note"):
        return line
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in title).split())
    if len(text) > LABEL_CHARS:
        text = text[: LABEL_CHARS - 1].rstrip() + "…"
    return f"{line}  # {text}"


def _is_default(kind: Kind, key: str, value: Any, data: Mapping[str, Any]) -> bool:
    if value in (None, [], {}, ""):
        return True
    if key == CREATED_FIELD.get(kind.name):
        rid = str(data.get(kind.id_field, ""))
        moment = ulid_time(rid) if is_record_id(rid) else None
        return moment is not None and value == format_ts(moment)
    field = kind.model.model_fields.get(key)
    return field is not None and not field.is_required() and value == field.default


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def parse(kind: Kind, raw: bytes, *, source: str) -> dict[str, Any]:
    """Read a record file into plain data (not yet validated against the model).

    Reads format 2 and format 1 alike (both are plain YAML); an item's ``null`` values are unset.
    """
    if kind.body_field:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise YamlError(f"{source}: not valid UTF-8 (byte {exc.start})") from None
        if CONFLICT_MARKER.search(text):
            raise YamlError(f"{source}: {CONFLICT_MESSAGE}")
        front, body = split_front_matter(text, source=source)
        if not isinstance(front, dict):
            raise YamlError(f"{source}: front matter must be a mapping")
        if kind.body_field in front:
            raise YamlError(f"{source}: {kind.body_field} belongs in the body, not the front matter")
        front[kind.body_field] = body
        return front
    if CONFLICT_MARKER.search(raw.decode("utf-8", "replace")):
        raise YamlError(f"{source}: {CONFLICT_MESSAGE}")
    data = load_yaml(raw, source=source)
    if not isinstance(data, dict):
        raise YamlError(f"{source}: a record file must hold a YAML mapping")
    if kind is ITEM and isinstance(data.get("values"), dict):
        data["values"] = {k: v for k, v in data["values"].items() if v is not None}
    return data


CONFLICT_MARKER = re.compile(r"^(?:<{7}|>{7})(?: |\r?$)", re.M)
"""The lines that open and close every hunk git leaves. Its middle line, ``=======``, is not one:
alone it is Markdown's underline of a heading, and a note with one failed ``check`` as conflicted."""
CONFLICT_MESSAGE = (
    "merge conflict markers (<<<<<<<, =======, >>>>>>>) are left in the file: keep the value you want "
    "for each field, delete the markers, then run `codexmem resolve` to record the resolution"
)
