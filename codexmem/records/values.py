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

from pydantic import ValidationError

from codexmem.errors import CodexmemError, validation_fields
from codexmem.models.channel import ChannelSchema
from codexmem.records.fields import preview_values, unique_keys
from codexmem.store.index import Index
from codexmem.store.layout import ITEM


@functools.lru_cache(maxsize=64)
def schema_from_json(text: str) -> ChannelSchema:
    """A channel schema from stored JSON text (the index keeps it so), parsed once per distinct text.

    Keyed on the content, not the channel id: a hand edit that keeps the version still reparses.
    """
    return ChannelSchema.model_validate_json(text)


def validate_schema(data: Mapping[str, Any]) -> ChannelSchema:
    """A new schema, or ERR_INVALID_INPUT naming every problem (formula errors included)."""
    try:
        return ChannelSchema.model_validate(dict(data))
    except ValidationError as exc:
        fields: list[dict[str, Any]] = []
        for problem in validation_fields(exc, root="schema"):
            # The whole-schema check joins its problems with "; ": one entry per problem reads better.
            parts = problem["message"].split("; fields.")
            fields.extend(
                {"field": problem["field"], "message": p if i == 0 else "fields." + p} for i, p in enumerate(parts)
            )
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            f"the schema is not valid: {fields[0]['message']}"
            + (f" (and {len(fields) - 1} more)" if len(fields) > 1 else ""),
            fields=fields[:50],
        ) from None


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
    break it, and the scan of the channel is skipped. Values compare as ``check`` compares them.
    """
    keys = [k for k in unique_keys(schema) if values.get(k) is not None]
    if not keys:
        return []
    wanted = {k: repr(values[k]) for k in keys}
    holder: dict[str, str] = {}
    channel = schema.record_channel_id
    for other in index.select(ITEM, where={"channel": channel}, order=[("id", False)]):
        if other["item_id"] == item_id:
            continue
        for key in keys:
            if key not in holder and repr(other["values"].get(key)) == wanted[key]:
                holder[key] = other["item_id"]
        if len(holder) == len(keys):
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
