"""The channel table and item pages: cells, sort keys, filters, relation links, formula values."""

from __future__ import annotations

import json
from typing import Any

from codexmem.render.site.data import Rec, SiteData, url_of
from codexmem.render.site.pieces import backlinks, history

TABLE_TEXT_CHARS = 100
SORT_CHARS = 40
WIDE_CHARS = 40
UNKNOWN_RANK = 10_000
ELLIPSIS = "…"


def channel_list(data: SiteData) -> list[Rec]:
    return [
        {
            "id": cid,
            "name": info["name"],
            "url": url_of("channel", cid),
            "description": info.get("description", ""),
            "count": len(data.items[cid]),
        }
        for cid, info in data.channels.items()
    ]


def _fields(info: Rec) -> list[Rec]:
    """The schema's fields as templates need them (options keyed by value, with colours)."""
    return [
        {
            "key": f["key"],
            "label": f["label"],
            "type": f["type"],
            "result_type": (f.get("config") or {}).get("result_type"),
            "max_stars": (f.get("config") or {}).get("max_stars"),
            "options": f["options"],
            "option_list": f["option_list"],
        }
        for f in info["fields"]
    ]


def _relation_refs(data: SiteData, info: Rec, items: list[Rec]) -> dict[str, Rec]:
    keys = [f["key"] for f in info["fields"] if f["type"] == "relation"]
    refs: dict[str, Rec] = {}
    for item in items:
        for key in keys:
            for target in item["values"].get(key) or []:
                if isinstance(target, str):
                    refs[target] = data.ref(target)
    return dict(sorted(refs.items()))


def _cell_value(field: Rec, item: Rec) -> Any:
    if field["type"] == "formula":
        return item["computed"].get(field["key"])
    return item["values"].get(field["key"])


def _sort_key(field: Rec, value: Any, refs: dict[str, Rec]) -> str | int | float | None:
    """What the table sorts a cell by: option order for selects, numbers as numbers."""
    if value is None or value == [] or value == "":
        return None
    kind = field["type"]
    if kind == "select":
        return field["options"][value]["rank"] if value in field["options"] else UNKNOWN_RANK
    if kind == "multi_select":
        ranks = [field["options"][v]["rank"] for v in value if v in field["options"]]
        return min(ranks) if ranks else UNKNOWN_RANK
    if kind == "relation":
        return " ".join(str(refs.get(v, {}).get("title", v)) for v in value)[:SORT_CHARS].lower()
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        return value[:SORT_CHARS].lower()
    return json.dumps(value, sort_keys=True)[:SORT_CHARS]


def _short(field: Rec, value: Any) -> Any:
    if field["type"] in ("text", "url", "email", "file") and isinstance(value, str) and len(value) > TABLE_TEXT_CHARS:
        return value[:TABLE_TEXT_CHARS] + ELLIPSIS
    return value


def channel_page(data: SiteData, cid: str) -> dict[str, Any]:
    info = data.channels[cid]
    fields = _fields(info)
    items = list(data.items[cid].values())
    refs = _relation_refs(data, info, items)
    numeric = {"number", "currency", "percentage", "rating", "boolean", "select", "multi_select"}
    # The title field names the row (first column, a link); json is too bulky for a cell.
    columns = [
        {**f, "sort": "num" if f["type"] in numeric or f.get("result_type") in ("number", "boolean") else "text"}
        for f in fields
        if f["type"] != "json" and f["key"] != info["title_key"]
    ]
    title_label = next((f["label"] for f in fields if f["key"] == info["title_key"]), "Item")
    rows = []
    for item in items:
        cells = []
        filters: dict[str, list[str]] = {}
        for f in columns:
            value = _cell_value(f, item)
            cells.append({"value": _short(f, value), "sort": _sort_key(f, value, refs)})
            if f["type"] == "select":
                filters[f["key"]] = [value] if isinstance(value, str) else []
            elif f["type"] == "multi_select":
                filters[f["key"]] = [v for v in value or [] if isinstance(v, str)]
        rows.append(
            {
                "ref": data.ref(item["item_id"]),
                "cells": cells,
                "filters": filters,
                "version": item["version"],
                "updated_at": item["updated_at"],
            }
        )
    for n, column in enumerate(columns):
        # Columns of long texts wrap (and are clamped by the stylesheet); the rest stay on one line.
        column["wide"] = column["type"] == "relation" or any(
            isinstance(r["cells"][n]["value"], str) and len(r["cells"][n]["value"]) > WIDE_CHARS for r in rows
        )
    return {
        "title": info["name"],
        "crumbs": [{"label": "Channels", "url": "channels/"}],
        "channel": {"id": cid, "name": info["name"], "description": info.get("description", "")},
        "columns": columns,
        "title_label": title_label,
        "filters": [f for f in columns if f["type"] in ("select", "multi_select")],
        "rows": rows,
        "refs": refs,
        "history": history(data, cid),
        "backlinks": backlinks(data, cid),
    }


def item_page(data: SiteData, cid: str, item: Rec) -> dict[str, Any]:
    info = data.channels[cid]
    iid = item["item_id"]
    fields = _fields(info)
    known = {f["key"] for f in fields}
    return {
        "title": data.ref(iid)["title"],
        "crumbs": [{"label": "Channels", "url": "channels/"}, {"label": info["name"], "url": url_of("channel", cid)}],
        "channel": {"id": cid, "name": info["name"], "url": url_of("channel", cid)},
        "item": item,
        "fields": [{**f, "value": _cell_value(f, item)} for f in fields],
        "unknown": {k: v for k, v in sorted(item["values"].items()) if k not in known},
        "refs": _relation_refs(data, info, [item]),
        "history": history(data, iid),
        "backlinks": backlinks(data, iid),
    }
