"""The channel table and item pages: cells, sort keys, filters, relation links, formula values."""

from __future__ import annotations

import json
from typing import Any

from codexmem.render.site.data import Rec, SiteData, texts_of, url_of
from codexmem.render.site.pieces import backlinks, history, shown_options
from codexmem.render.site.tables import Row, Table, param_of

TABLE_TEXT_CHARS = 100
SORT_CHARS = 40
WIDE_CHARS = 40
LONG_TEXT_CHARS = 80
UNKNOWN_RANK = 10_000
ELLIPSIS = "…"
NUMERIC = frozenset({"number", "currency", "percentage", "rating", "boolean", "select", "multi_select"})
FACT_TYPES = frozenset({"select", "multi_select", "number", "currency", "percentage", "rating", "boolean", "date"})


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


def _fields(data: SiteData, cid: str) -> list[Rec]:
    """The schema's fields as templates need them (options keyed by value, with chip classes)."""
    found = data.fields.get(cid)
    if found is None:
        found = data.fields[cid] = _make_fields(data.channels[cid])
    return found


def _make_fields(info: Rec) -> list[Rec]:
    return [
        {
            "key": f["key"],
            "label": f["label"],
            "type": f["type"],
            "result_type": (f.get("config") or {}).get("result_type"),
            "max_stars": (f.get("config") or {}).get("max_stars"),
            "options": {
                v: {"label": o["label"], "cls": chip_class(o["color"]), "rank": o["rank"]}
                for v, o in f["options"].items()
            },
            "option_list": f["option_list"],
        }
        for n, f in enumerate(info["fields"])
    ]


def chip_class(color: str) -> str:
    """A chip's class: one per colour (its text colour follows from it), not one per option."""
    return f"cc-{color.removeprefix('#')}"


def chip_styles(data: SiteData, cid: str) -> list[Rec]:
    """One CSS rule per colour the channel's options use (background, text colour): chips then
    carry a short class.

    Made once per channel and build (every item page of the channel carries the same rules).
    A rule per option made each page grow with the options: a field of 700 options (components,
    customers) added 28 KB to every item page; options share a few colours (the default palette
    has 8).
    """
    found = data.chips.get(cid)
    if found is None:
        found = data.chips[cid] = _make_chip_styles(data.channels[cid])
    return found


def _make_chip_styles(info: Rec) -> list[Rec]:
    colors = {chip_class(o["color"]): o for f in info["fields"] for o in f["options"].values()}
    return [{"cls": cls, "color": o["color"], "fg": o["fg"]} for cls, o in sorted(colors.items())]


def _relation_refs(data: SiteData, info: Rec, items: list[Rec]) -> dict[str, Rec]:
    keys = [f["key"] for f in info["fields"] if f["type"] == "relation"]
    refs: dict[str, Rec] = {}
    for item in items:
        for key in keys:
            for target in item["values"].get(key) or []:
                if isinstance(target, str):
                    ref = data.ref(target)
                    refs[target] = {"title": ref["title"], "url": ref["url"]}
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
        return int(field["options"][value]["rank"]) if value in field["options"] else UNKNOWN_RANK
    if kind == "multi_select":
        ranks = [int(field["options"][v]["rank"]) for v in value if v in field["options"]]
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


def _columns(info: Rec, fields: list[Rec]) -> list[Rec]:
    """Every field but the title (it names the row) and json (too bulky for a cell)."""
    return [
        {
            **f,
            "sort": "num" if f["type"] in NUMERIC or f.get("result_type") in ("number", "boolean") else "text",
            "cls": "c-key" if f["key"] == info["key_field"] else ("c-sel" if f["type"] == "select" else ""),
        }
        for f in fields
        if f["type"] != "json" and f["key"] != info["title_key"]
    ]


def items_table(data: SiteData, cid: str) -> Table:
    """The channel's items, newest first; chunks cut in creation order."""
    info = data.channels[cid]
    fields = _fields(data, cid)
    items = list(data.items[cid].values())
    refs = _relation_refs(data, info, items)
    columns = _columns(info, fields)
    rows: list[Row] = []
    for position, item in enumerate(items):
        ref = data.ref(item["item_id"])
        cells = []
        keys: list[Any] = [str(ref["title"])[:SORT_CHARS].lower()]
        filters: dict[str, list[str]] = {}
        for f in columns:
            value = _cell_value(f, item)
            cells.append(_short(f, value))
            keys.append(_sort_key(f, value, refs))
            if f["type"] == "select":
                filters[param_of(f["key"])] = [value] if isinstance(value, str) else []
            elif f["type"] == "multi_select":
                filters[param_of(f["key"])] = [v for v in value or [] if isinstance(v, str)]
        keys.append(item["updated_at"])
        ctx = {"ref": {"title": ref["title"], "url": ref["url"]}, "cells": cells, "updated_at": item["updated_at"]}
        rows.append(Row(ctx=ctx, order=-position, chunk=f"{position // 1000:04d}", keys=keys, filters=filters))
    for n, column in enumerate(columns):
        # Columns of long texts wrap (and are clamped by the stylesheet); the rest stay on one line.
        column["wide"] = column["type"] == "relation" or any(
            isinstance(r.ctx["cells"][n], str) and len(r.ctx["cells"][n]) > WIDE_CHARS for r in rows
        )
    title_label = next((f["label"] for f in fields if f["key"] == info["title_key"]), "Item")
    header = [{"key": "title", "label": title_label, "sort": "text", "cls": "c-title"}]
    header += [{"key": c["key"], "label": c["label"], "sort": c["sort"], "cls": c["cls"]} for c in columns]
    header.append({"key": "updated", "label": "Updated", "sort": "text", "cls": "c-date"})
    return Table(
        id="items",
        macro="item_row",
        columns=header,
        filters=[
            {
                "param": param_of(f["key"]),
                "label": f["label"],
                "options": [{"value": v, "label": f["options"][v]["label"]} for v in f["option_list"]],
            }
            for f in columns
            if f["type"] in ("select", "multi_select")
        ],
        rows=rows,
        text_filter=True,
        noun="item",
        extra={"columns": columns, "refs": refs},
    )


def channel_page(data: SiteData, cid: str) -> dict[str, Any]:
    info = data.channels[cid]
    return {
        "title": info["name"],
        "section": "channels",
        "crumbs": [{"label": "Channels", "url": "channels/"}],
        "channel": {"id": cid, "name": info["name"], "description": info.get("description", "")},
        "chips": chip_styles(data, cid),
        "has_formulas": any(f["type"] == "formula" for f in info["fields"]),
        "as_of": data.now.strftime("%Y-%m-%d"),
        "history": history(data, cid, schema=True),
        "backlinks": backlinks(data, cid),
    }


def item_page(data: SiteData, cid: str, item: Rec) -> dict[str, Any]:
    """Status, owner, numbers and dates on top; long texts below (a phone reads the facts first)."""
    info = data.channels[cid]
    iid = item["item_id"]
    fields = _fields(data, cid)
    known = {f["key"] for f in fields}
    ref = data.ref(iid)
    facts: list[Rec] = []
    texts: list[Rec] = []
    for f in fields:
        value = _cell_value(f, item)
        if f["key"] in (info["title_key"], info["key_field"]):
            continue
        entry = {**shown_options(f, value), "value": value}
        long_text = isinstance(value, str) and (len(value) > LONG_TEXT_CHARS or "\n" in value)
        if f["type"] == "json" or (f["type"] == "text" and long_text):
            texts.append(entry)
        else:
            facts.append(entry)
    facts.sort(key=lambda e: 0 if e["type"] in FACT_TYPES or e["type"] == "formula" else 1)
    crumbs = [{"label": "Channels", "url": "channels/"}, {"label": info["name"], "url": url_of("channel", cid)}]
    mention_texts = texts_of(e["value"] for e in texts + facts if e["type"] == "text")
    return {
        "title": f"{ref['ticket']} {ref['title']}" if ref.get("ticket") else ref["title"],
        "section": "channels",
        "crumbs": crumbs,
        "channel": {"id": cid, "name": info["name"], "url": url_of("channel", cid)},
        "ticket": ref.get("ticket"),
        "heading": ref["title"],
        "item": {k: item[k] for k in ("item_id", "version", "created_at", "updated_at")},
        "chips": chip_styles(data, cid),
        "facts": facts,
        "texts": texts,
        "has_formulas": any(f["type"] == "formula" for f in fields),
        "as_of": data.now.strftime("%Y-%m-%d"),
        "status_label": ref.get("status_label"),
        "unknown": {k: v for k, v in sorted(item["values"].items()) if k not in known},
        "refs": _relation_refs(data, info, [item]),
        "mentions": data.mentions(*mention_texts, root="../../../"),
        "history": history(data, iid, fields),
        "backlinks": backlinks(data, iid),
    }
