"""Record channels' part of ``codexmem check``: every item against its channel's schema.

Plain functions over what the store's check could read (:class:`~codexmem.store.check.StoreScan`),
composed with the others by codexmem/check.py. Uses the same field validation as an edit, so a
hand edit that an edit would refuse is an error here too.
"""

from __future__ import annotations

from typing import Any

from codexmem.models.channel import ChannelSchema
from codexmem.records.fields import stored_item_problems
from codexmem.store.check import Finding, StoreScan
from codexmem.store.layout import CHANNEL, ITEM


def item_findings(scan: StoreScan) -> list[Finding]:
    """Items whose channel has no valid schema, whose values break it, or that repeat a unique value."""
    schemas = {data["record_channel_id"]: data for _, data in scan.of_kind(CHANNEL)}
    found: list[Finding] = []
    unchecked: dict[str, int] = {}

    def item_in(channel: str, item_id: str) -> bool:
        item = scan.get(ITEM, item_id)
        return item is not None and item["record_channel_id"] == channel

    for rel, data in scan.of_kind(ITEM):
        channel = data["record_channel_id"]
        if channel not in schemas:
            unchecked[channel] = unchecked.get(channel, 0) + 1
            continue
        schema = ChannelSchema.model_validate(schemas[channel])
        for problem in stored_item_problems(schema, data["values"], item_in):
            found.append(Finding(rel, "error", str(problem.get("message"))))
    for channel, count in sorted(unchecked.items()):
        # Said once per channel: the schema's own error says what is wrong with it.
        items = "1 item" if count == 1 else f"{count} items"
        message = f"{items} not checked: channel {channel} has no valid schema.yaml (fix it first)"
        found.append(Finding(f"channels/{channel}/items", "error", message))
    for channel, schema_data in schemas.items():
        found += _unique_findings(scan, channel, schema_data)
    return found


def _unique_findings(scan: StoreScan, channel: str, schema: dict[str, Any]) -> list[Finding]:
    found: list[Finding] = []
    for key in (f["key"] for f in schema["fields"] if f.get("is_unique")):
        seen: dict[str, str] = {}
        for rel, data in scan.of_kind(ITEM):
            value = data["values"].get(key) if data["record_channel_id"] == channel else None
            if value is None:
                continue
            marker = repr(value)
            if marker in seen:
                found.append(
                    Finding(rel, "error", f"values.{key} must be unique in {channel}; {seen[marker]} has it too")
                )
            else:
                seen[marker] = rel
    return found
