"""Items as answers show them, and the checks that need the channel's other items.

Stored values never hold formulas: they are computed here, at read time, against the ``now``
the caller passes (ServerState.now() in the server, a fixed time in renderers and tests), and
never cached, so ``age_days`` is right on every call.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from codexmem.errors import CodexmemError, field_path, validation_fields
from codexmem.models.channel import NEW_SCHEMA, ChannelSchema, FieldConfig, FieldDef, FieldOption, SchemaProblems
from codexmem.records.fields import preview_values, unique_keys
from codexmem.store.index import Index
from codexmem.store.index.schema import dedupe_keys, unique_marker
from codexmem.store.layout import ITEM


@functools.lru_cache(maxsize=64)
def schema_from_json(text: str) -> ChannelSchema:
    """A channel schema from stored JSON text (the index keeps it so), parsed once per distinct text.

    Keyed on the content, not the channel id: a hand edit that keeps the version still reparses.
    """
    return ChannelSchema.model_validate_json(text)


def validate_schema(data: Mapping[str, Any]) -> ChannelSchema:
    """A new schema, or ERR_INVALID_INPUT listing each problem once, with its path (``fields[3].type``)."""
    try:
        schema = ChannelSchema.model_validate(dict(data), context=NEW_SCHEMA)
    except ValidationError as exc:
        fields: list[dict[str, Any]] = []
        errors = exc.errors(include_url=False, include_input=False)
        for err, entry in zip(errors, validation_fields(exc, unknown=_UNKNOWN, root="schema"), strict=True):
            found = err.get("ctx", {}).get("error")
            if isinstance(found, SchemaProblems):
                fields.extend({"field": field_path(loc), "message": m} for loc, m in found.problems)
            elif entry["message"] == _UNKNOWN:
                fields.append({"field": entry["field"], "message": _unknown_key(err["loc"])})
            else:
                fields.append(entry)
        if len(fields) == 1:
            headline = f"the schema is not valid: {fields[0]['field']}: {fields[0]['message']}"
        else:
            headline = f"the schema has {len(fields)} problems, each listed with its path"
        raise CodexmemError(
            "ERR_INVALID_INPUT", f"{headline} (docs/channels.md shows every field type)", fields=fields[:50]
        ) from None
    for at, f in enumerate(schema.fields):
        if f.type == "relation" and f.is_required and f.config.channel == schema.record_channel_id:
            where = f"fields[{at}].is_required"
            message = (
                "a required relation to the channel's own items: its first item could never be made; make it optional"
            )
            raise CodexmemError(
                "ERR_INVALID_INPUT",
                f"the schema is not valid: {where}: {message}",
                fields=[{"field": where, "message": message}],
            )
    return schema


_UNKNOWN = "\0unknown key"
_KEYS_AT: dict[str, tuple[type[BaseModel], str]] = {
    "schema": (ChannelSchema, "a schema has"),
    "field": (FieldDef, "a field has"),
    "config": (FieldConfig, "config has"),
    "option": (FieldOption, "an option has"),
}


def _unknown_key(loc: tuple[int | str, ...]) -> str:
    """An unknown key, with the keys allowed where it stands (and where it belongs, if elsewhere)."""
    key = str(loc[-1])
    depth = {1: "schema", 3: "field", 4: "config", 6: "option"}.get(len(loc), "schema")
    model, has = _KEYS_AT[depth]
    allowed = [k for k in model.model_fields if k not in ("record_channel_id", "version")]
    hint = ""
    if depth == "field" and key in FieldConfig.model_fields:
        hint = f"; {key} goes under config (config: {{{key}: ...}})"
    return f"unknown key {key!r}: {has} {', '.join(allowed)}{hint}"


def in_schema_order(schema: ChannelSchema, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with the schema's keys first, in schema order, so files and answers read alike."""
    out = {f.key: values[f.key] for f in schema.fields if f.key in values}
    out.update({k: v for k, v in values.items() if k not in out})
    return out


def full_values(schema: ChannelSchema, data: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """Stored values plus every formula (None when it cannot be computed), in schema order."""
    stored: Mapping[str, Any] = data["values"]
    env = {**stored, "created_at": data["created_at"], "updated_at": data["updated_at"]}
    return in_schema_order(schema, {**stored, **schema.compute_formulas(env, now=now)})


def _shape(data: Mapping[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": data["item_id"],
        "version": data["version"],
        "created_at": data["created_at"],
        "updated_at": data["updated_at"],
        "values": values,
    }


def public_item(schema: ChannelSchema, data: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """``{id, version, created_at, updated_at, values}`` with formula values computed at ``now``."""
    return _shape(data, full_values(schema, data, now))


def preview_item(schema: ChannelSchema, data: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """The listing form: the same shape, text values cut to 120 characters."""
    return _shape(data, preview_values(schema, full_values(schema, data, now)))


def unique_failures(
    index: Index, schema: ChannelSchema, item_id: str, values: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """One rejection entry per ``is_unique`` field whose given value another item of the channel holds.

    Only keys present in ``values`` are checked: an edit that leaves a unique field alone cannot
    break it. Each is one probe of the index's unique-value keys, whatever the channel holds;
    values compare as ``check`` compares them.
    """
    keys = [k for k in unique_keys(schema) if values.get(k) is not None]
    if not keys:
        return []
    holder: dict[str, str] = {}
    channel = schema.record_channel_id
    for key in keys:
        # One probe of the index's unique-value keys, then the values compared as ``check`` does.
        probe = dedupe_keys(ITEM, {"record_channel_id": channel, "values": values}, (key,))
        rows = index.select(ITEM, keys=probe, where={"channel": channel}, order=[("id", False)])
        for other in rows:
            if other["item_id"] != item_id and unique_marker(other["values"].get(key)) == unique_marker(values[key]):
                holder[key] = other["item_id"]
                break
    return [
        {
            "key": key,
            "message": f"values.{key} must be unique in channel {channel}; {other_id} already has "
            f"{json.dumps(values[key], ensure_ascii=False)[:80]}",
            "given": values[key],
            "conflicts_with": other_id,
        }
        for key, other_id in holder.items()
    ]
