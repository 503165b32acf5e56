"""Record channels' part of ``codexmem check``: every item against its channel's schema.

Plain functions over what the store's check could read (:class:`~codexmem.store.check.StoreScan`),
composed with the others by codexmem/check.py. Uses the same field validation as an edit, so a
hand edit that an edit would refuse is an error here too.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from typing import Any

from codexmem.models.channel import ChannelSchema
from codexmem.records.fields import stored_item_problems, unique_keys
from codexmem.records.schema_diff import field_renames
from codexmem.store.check import Finding, StoreScan
from codexmem.store.index.schema import unique_marker
from codexmem.store.layout import CHANNEL, ITEM


def item_findings(scan: StoreScan) -> list[Finding]:
    """Items whose channel has no valid schema, whose values break it, or that repeat a unique value.

    Each schema is validated once and the items are grouped by channel once: per item and per
    unique field, a store of 10,000 items spent 1.2 s validating one schema again and again."""
    schemas = {data["record_channel_id"]: ChannelSchema.model_validate(data) for _, data in scan.of_kind(CHANNEL)}
    by_channel: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for rel, data in scan.of_kind(ITEM):
        by_channel[data["record_channel_id"]].append((rel, data))
    found: list[Finding] = []

    def item_in(channel: str, item_id: str) -> bool:
        item = scan.get(ITEM, item_id)
        return item is not None and item["record_channel_id"] == channel

    for channel, items in sorted(by_channel.items()):
        schema = schemas.get(channel)
        if schema is None:
            # Said once per channel: the schema's own error says what is wrong with it.
            count = "1 item" if len(items) == 1 else f"{len(items)} items"
            message = f"{count} not checked: channel {channel} has no valid schema.yaml (fix it first)"
            found.append(Finding(f"channels/{channel}/items", "error", message))
            continue
        keys = {f.key for f in schema.fields}
        renamed = _renames_of(scan, channel)
        for rel, data in items:
            values = data["values"]
            for problem in stored_item_problems(schema, values, item_in):
                message = str(problem.get("message"))
                key = problem.get("key")
                now = renamed.get(key) if isinstance(key, str) else None
                if isinstance(key, str) and key in keys:
                    message += f": {_edit_command(channel, data['item_id'], {key: '…'})} sets it"
                elif isinstance(key, str) and now in keys and now not in values:
                    # Renamed: null alone would drop the value the item still holds under the old key.
                    moved = {now: _shell_json(values[key]), key: "null"}
                    message += f": the field is {now} now: {_edit_command(channel, data['item_id'], moved)} moves it"
                elif isinstance(key, str):  # a field the schema no longer has: null drops it
                    message += f": {_edit_command(channel, data['item_id'], {key: 'null'})} drops it"
                found.append(Finding(rel, "error", message))
        found += _unique_findings(channel, schema, items)
    return found


def _edit_command(channel: str, item_id: str, values: dict[str, str]) -> str:
    """The command that gives fields of one item new values (the fix a finding names); ``values``
    are key -> JSON text."""
    sent = ", ".join(f'"{key}": {value}' for key, value in values.items())
    return f"`codexmem items edit {channel} {item_id} --json '{{{sent}}}'`"


def _shell_json(value: Any) -> str:
    """A value as JSON to paste between single quotes ("…" to fill in when it would not fit there)."""
    text = json.dumps(value, ensure_ascii=False)
    return "…" if "'" in text or len(text) > 80 else text


def _renames_of(scan: StoreScan, channel: str) -> dict[str, str]:
    """Old field key -> the key it has now, from the schemas the channel's events hold, in order
    (a rename is a field removed and one added with the same label and type, as reviews say it)."""
    schemas = [
        {f["key"]: f for f in e["set"]["fields"] if isinstance(f, dict) and isinstance(f.get("key"), str)}
        for e in sorted(scan.events.get((CHANNEL.name, channel), []), key=lambda e: (e["version"], e["at"]))
        if isinstance(e.get("set"), dict) and isinstance(e["set"].get("fields"), list)
    ]
    now: dict[str, str] = {}
    for before, after in itertools.pairwise(schemas):
        for new_key, old_key in field_renames(before, after).items():
            now = {k: new_key if v == old_key else v for k, v in now.items()}
            now[old_key] = new_key
    return now


def _unique_findings(channel: str, schema: ChannelSchema, items: list[tuple[str, dict[str, Any]]]) -> list[Finding]:
    found: list[Finding] = []
    for key in unique_keys(schema):
        seen: dict[str, tuple[str, str]] = {}
        for rel, data in items:
            value = data["values"].get(key)
            if value is None:
                continue
            marker = unique_marker(value)
            if marker in seen:
                other, _ = seen[marker]
                shown = json.dumps(value, ensure_ascii=False)
                shown = shown if len(shown) <= 60 else shown[:57] + "…"
                found.append(
                    Finding(
                        rel,
                        "error",
                        f"values.{key} {shown} must be unique in {channel}; {other} has it too (added on two "
                        f"branches?): give one of them another value, "
                        + _edit_command(channel, data["item_id"], {key: "…"}),
                    )
                )
            else:
                seen[marker] = (rel, data["item_id"])
    return found
