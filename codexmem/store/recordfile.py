"""A record's file: its bytes from the data, its data from the bytes, and whether it is usable.

:func:`read_record` is the one definition of a usable record file, shared by every reader: the
index (which keeps unusable files in ``bad_files``), the write path (``Store.read_file``) and
``codexmem check``, so none of them accepts what another refuses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from codexmem.errors import validation_fields
from codexmem.store.atomic import read_bytes_nofollow
from codexmem.store.layout import ITEM, Kind
from codexmem.store.screen import credential_findings
from codexmem.store.yamlio import MAX_YAML_BYTES, YamlError, dump_yaml, join_front_matter, load_yaml, split_front_matter


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
    """Validate parsed file data against its model and its file name; return the canonical dump."""
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


def serialize(kind: Kind, data: dict[str, Any]) -> bytes:
    """The exact bytes of a record file. ``data`` is the model dump in field order."""
    # Unset keys are left out; a schema's nested config too, so a reviewer reads only what is set.
    # (Items keep nested nulls: a json field may hold them.)
    clean = _drop_none(data) if kind.name == "channel" else {k: v for k, v in data.items() if v is not None}
    if kind.body_field:
        body = str(clean.pop(kind.body_field, ""))
        return join_front_matter(clean, body).encode("utf-8")
    return dump_yaml(clean).encode("utf-8")


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def parse(kind: Kind, raw: bytes, *, source: str) -> dict[str, Any]:
    """Read a record file into plain data (not yet validated against the model)."""
    if kind.body_field:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise YamlError(f"{source}: not valid UTF-8 (byte {exc.start})") from None
        front, body = split_front_matter(text, source=source)
        if not isinstance(front, dict):
            raise YamlError(f"{source}: front matter must be a mapping")
        if kind.body_field in front:
            raise YamlError(f"{source}: {kind.body_field} belongs in the body, not the front matter")
        front[kind.body_field] = body
        return front
    data = load_yaml(raw, source=source)
    if not isinstance(data, dict):
        raise YamlError(f"{source}: a record file must hold a YAML mapping")
    return data
