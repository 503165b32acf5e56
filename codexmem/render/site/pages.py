"""Which pages the site has, and the context each is rendered from.

A context holds exactly what its page shows (titles and statuses of the records it links to,
not whole records), so that hashing it tells the builder whether the page can have changed:
editing a note's body re-renders the note page, not every list that shows its title.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from codexmem.models import NOTE_TYPES
from codexmem.render.site.data import Rec, SiteData, file_slug, handoff_rank, newest_first, note_order, url_of

HOME_EVENTS = 20
HOME_HANDOFFS = 30
ACTIVITY_EVENTS = 500
TABLE_TEXT_CHARS = 100
SORT_CHARS = 40
WIDE_CHARS = 40
UNKNOWN_RANK = 10_000
ELLIPSIS = "…"
KIND_LABELS = {
    "note": "Note",
    "handoff": "Handoff",
    "session": "Session",
    "import": "Import",
    "item": "Item",
    "channel": "Channel",
}


@dataclass(frozen=True)
class Page:
    """One output file: where it goes, its template and the data it shows."""

    path: str
    template: str
    context: dict[str, Any]


def plan(data: SiteData) -> list[Page]:
    """Every page of the site, in path order."""
    pages = list(_all_pages(data))
    pages.sort(key=lambda p: p.path)
    return pages


def _all_pages(data: SiteData) -> Iterator[Page]:
    yield Page("index.html", "home.html", _home(data))
    yield Page("search/index.html", "search.html", {"title": "Search", "crumbs": []})
    for pid in data.projects:
        yield Page(f"projects/{pid}/index.html", "project.html", _project(data, pid))
    for nid, note in data.records["note"].items():
        yield Page(f"notes/{nid}/index.html", "note.html", _note(data, note))
    for hid, handoff in data.records["handoff"].items():
        yield Page(f"handoffs/{hid}/index.html", "handoff.html", _handoff(data, handoff))
    for sid, session in data.records["session"].items():
        yield Page(f"sessions/{sid}/index.html", "session.html", _session(data, session))
    for iid, imp in data.records["import"].items():
        yield Page(f"imports/{iid}/index.html", "import.html", _import(data, imp))
    yield Page("channels/index.html", "channels.html", _channels(data))
    for cid in data.channels:
        yield Page(f"channels/{cid}/index.html", "channel.html", _channel(data, cid))
        for item in data.items[cid].values():
            yield Page(f"channels/{cid}/{item['item_id']}/index.html", "item.html", _item(data, cid, item))
    yield Page("tags/index.html", "tags.html", _tags(data))
    for tag, ids in data.tags.items():
        yield Page(f"tags/{tag}/index.html", "tag.html", _tag(data, tag, ids))
    yield Page("files/index.html", "files.html", _files(data))
    for path, refs in data.files.items():
        yield Page(f"files/{file_slug(path)}/index.html", "file.html", _file(path, refs))
    months: dict[str, list[Rec]] = defaultdict(list)
    for event in data.events:
        months[event["at"][:7]].append(event)
    archive = [{"month": m, "url": f"activity/{m}/"} for m in months]
    latest = _activity(data, data.events[:ACTIVITY_EVENTS], archive, None)
    yield Page("activity/index.html", "activity.html", {**latest, "total": len(data.events)})
    for month, events in months.items():
        yield Page(f"activity/{month}/index.html", "activity.html", _activity(data, events, archive, month))


# ------------------------------------------------------------------ shared pieces


def _project_ref(data: SiteData, pid: str) -> Rec:
    project = data.projects.get(pid)
    if project is None:
        return {"id": pid, "name": pid, "url": None}
    return {"id": pid, "name": project["name"], "url": project["url"]}


def _note_row(note: Rec) -> Rec:
    return {
        "id": note["note_id"],
        "url": url_of("note", note["note_id"]),
        "title": note["title"],
        "type": note["type"],
        "status": note["status"],
        "importance": note["importance"],
        "tags": note["tags"],
        "updated_at": note["updated_at"],
    }


def _handoff_row(data: SiteData, handoff: Rec) -> Rec:
    return {
        "id": handoff["handoff_id"],
        "url": url_of("handoff", handoff["handoff_id"]),
        "task": handoff["task"],
        "kind": handoff["kind"],
        "status": handoff["status"],
        "next_steps": handoff["next_steps"][:3],
        "more_steps": max(len(handoff["next_steps"]) - 3, 0),
        "created_at": handoff["created_at"],
        "project": _project_ref(data, handoff["scope"]["project_id"]),
    }


def _actor(data: SiteData, actor: str) -> Rec:
    session = data.records["session"].get(actor)
    if session is not None:
        return {"label": data.ref(actor)["title"], "url": url_of("session", actor), "kind": "session"}
    kind = "cli" if actor.startswith("cli:") else ("git" if actor == "git" else "other")
    return {"label": actor, "url": None, "kind": kind}


def _event_row(data: SiteData, event: Rec) -> Rec:
    ref = data.ref(event["id"])
    if event["kind"] == "item" and ref.get("missing"):
        ref = {**ref, "kind": "item"}
    project = ref.get("project") or ""
    return {
        "id": event["event_id"],
        "at": event["at"],
        "actor": _actor(data, event["actor"]),
        "kind": event["kind"],
        "type": event["type"],
        "version": event["version"],
        "changed": event["changed"],
        "ref": ref,
        "project": project,
        "channel": event["channel"],
        "where": (data.projects[project]["name"] if project in data.projects else "")
        or (data.channels[event["channel"]]["name"] if event["channel"] in data.channels else ""),
    }


def _history(data: SiteData, rid: str) -> list[Rec]:
    return [
        {
            "at": e["at"],
            "actor": _actor(data, e["actor"]),
            "type": e["type"],
            "version": e["version"],
            "changed": e["changed"],
        }
        for e in data.history.get(rid, [])
    ]


def _backlinks(data: SiteData, rid: str) -> list[Rec]:
    """Backlinks grouped: ``[{"group": label, "refs": [...]}]``."""
    groups: dict[str, list[Rec]] = {}
    for link in data.backlinks.get(rid, []):
        groups.setdefault(link["group"], []).append({k: v for k, v in link.items() if k != "group"})
    return [{"group": g, "refs": refs} for g, refs in groups.items()]


def _file_links(paths: list[str]) -> list[Rec]:
    return [{"path": p, "url": f"files/{file_slug(p)}/"} for p in paths]


# ------------------------------------------------------------------ pages


def _home(data: SiteData) -> dict[str, Any]:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for kind in ("note", "session", "handoff"):
        for rec in data.records[kind].values():
            counts[rec["scope"]["project_id"]][kind] += 1
    for h in data.records["handoff"].values():
        if h["status"] == "open":
            counts[h["scope"]["project_id"]]["open"] += 1
    systems = [
        {
            "id": s["id"],
            "name": s["name"],
            "projects": [{**_project_ref(data, pid), "counts": dict(counts[pid])} for pid in s["projects"]],
        }
        for s in data.systems
        if s["projects"]
    ]
    open_handoffs = [h for h in data.records["handoff"].values() if h["status"] == "open"]
    return {
        "title": "Home",
        "crumbs": [],
        "systems": systems,
        "open_handoffs": [_handoff_row(data, h) for h in newest_first(open_handoffs, "created_at")][:HOME_HANDOFFS],
        "open_count": len(open_handoffs),
        "recent": [_event_row(data, e) for e in data.events[:HOME_EVENTS]],
        "channels": _channel_list(data),
        "as_of": data.now.strftime("%Y-%m-%d %H:%M UTC"),
    }


def _channel_list(data: SiteData) -> list[Rec]:
    return [
        {"id": cid, "name": info["name"], "url": url_of("channel", cid), "description": info.get("description", ""),
         "count": len(data.items[cid])}
        for cid, info in data.channels.items()
    ]  # fmt: skip


def _project(data: SiteData, pid: str) -> dict[str, Any]:
    project = data.projects[pid]
    mine = [n for n in data.records["note"].values() if n["scope"]["project_id"] == pid]
    notes = newest_first(mine, "updated_at", note_order)
    by_type: list[Rec] = []
    for note_type in NOTE_TYPES:
        rows = [_note_row(n) for n in notes if n["type"] == note_type]
        if rows:
            statuses: dict[str, int] = defaultdict(int)
            for r in rows:
                statuses[r["status"]] += 1
            by_type.append({"type": note_type, "notes": rows, "statuses": dict(statuses)})
    handoffs = newest_first(
        [h for h in data.records["handoff"].values() if h["scope"]["project_id"] == pid], "created_at", handoff_rank
    )
    sessions = newest_first(
        [s for s in data.records["session"].values() if s["scope"]["project_id"] == pid], "started_at"
    )
    wrote: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for kind in ("note", "handoff"):
        for rec in data.records[kind].values():
            wrote[rec["session_id"]][kind] += 1
    timeline: dict[str, list[Rec]] = {}
    for s in sessions:
        timeline.setdefault(s["started_at"][:10], []).append(
            {
                "id": s["session_id"],
                "url": url_of("session", s["session_id"]),
                "task": s["task"],
                "status": s["status"],
                "branch": s["branch_name"],
                "started_at": s["started_at"],
                "ended_at": s.get("ended_at"),
                "notes": wrote[s["session_id"]]["note"],
                "handoffs": wrote[s["session_id"]]["handoff"],
            }
        )
    relations = [
        {**r, "target": _project_ref(data, r["project"]) if r["project"] in data.projects else None}
        for r in project["relations"]
    ]
    return {
        "title": project["name"],
        "crumbs": [],
        "project": {**project, "relations": relations},
        "system": next((s["name"] for s in data.systems if s["id"] == project["system"]), project["system"]),
        "open_handoffs": [_handoff_row(data, h) for h in handoffs if h["status"] == "open"],
        "other_handoffs": [_handoff_row(data, h) for h in handoffs if h["status"] != "open"],
        "notes_by_type": by_type,
        "note_count": len(notes),
        "timeline": [{"day": day, "sessions": rows} for day, rows in timeline.items()],
        "backlinks": _backlinks(data, pid),
    }


def _record_crumbs(data: SiteData, rec: Rec) -> list[Rec]:
    ref = _project_ref(data, rec["scope"]["project_id"])
    return [{"label": ref["name"], "url": ref["url"]}]


def _note(data: SiteData, note: Rec) -> dict[str, Any]:
    superseded = data.ref(note["superseded_by"]) if note.get("superseded_by") else None
    return {
        "title": note["title"],
        "crumbs": _record_crumbs(data, note),
        "note": note,
        "project": _project_ref(data, note["scope"]["project_id"]),
        "session": data.ref(note["session_id"]),
        "superseded_by": superseded,
        "related_projects": [_project_ref(data, p) for p in note.get("related_project_ids") or []],
        "files": _file_links(note["file_paths"]),
        "history": _history(data, note["note_id"]),
        "backlinks": _backlinks(data, note["note_id"]),
    }


def _handoff(data: SiteData, handoff: Rec) -> dict[str, Any]:
    return {
        "title": handoff["task"],
        "crumbs": _record_crumbs(data, handoff),
        "handoff": handoff,
        "project": _project_ref(data, handoff["scope"]["project_id"]),
        "session": data.ref(handoff["session_id"]),
        "related_notes": [data.ref(n) for n in handoff["related_note_ids"]],
        "files": _file_links(handoff["files_touched"]),
        "history": _history(data, handoff["handoff_id"]),
        "backlinks": _backlinks(data, handoff["handoff_id"]),
    }


def _session(data: SiteData, session: Rec) -> dict[str, Any]:
    sid = session["session_id"]
    return {
        "title": data.ref(sid)["title"],
        "crumbs": _record_crumbs(data, session),
        "session": session,
        "project": _project_ref(data, session["scope"]["project_id"]),
        "events": [_event_row(data, e) for e in data.session_events.get(sid, [])],
        "history": _history(data, sid),
        "backlinks": _backlinks(data, sid),
    }


def _import(data: SiteData, imp: Rec) -> dict[str, Any]:
    durable = imp.get("durable_memory_id")
    return {
        "title": data.ref(imp["import_id"])["title"],
        "crumbs": _record_crumbs(data, imp),
        "imp": imp,
        "project": _project_ref(data, imp["scope"]["project_id"]),
        "session": data.ref(imp["session_id"]),
        "durable": data.ref(durable) if durable else None,
        "history": _history(data, imp["import_id"]),
        "backlinks": _backlinks(data, imp["import_id"]),
    }


def _channels(data: SiteData) -> dict[str, Any]:
    return {"title": "Channels", "crumbs": [], "channels": _channel_list(data)}


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


def _channel(data: SiteData, cid: str) -> dict[str, Any]:
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
        rows.append({"ref": data.ref(item["item_id"]), "cells": cells, "filters": filters,
                     "version": item["version"], "updated_at": item["updated_at"]})  # fmt: skip
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
        "backlinks": _backlinks(data, cid),
    }


def _item(data: SiteData, cid: str, item: Rec) -> dict[str, Any]:
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
        "history": _history(data, iid),
        "backlinks": _backlinks(data, iid),
    }


def _tags(data: SiteData) -> dict[str, Any]:
    tags = [{"tag": t, "url": f"tags/{t}/", "count": len(ids)} for t, ids in data.tags.items()]
    return {"title": "Tags", "crumbs": [], "tags": tags}


def _tag(data: SiteData, tag: str, ids: list[str]) -> dict[str, Any]:
    notes = newest_first([data.records["note"][i] for i in ids], "updated_at")
    return {
        "title": f"#{tag}",
        "crumbs": [{"label": "Tags", "url": "tags/"}],
        "tag": tag,
        "notes": [{**_note_row(n), "project": _project_ref(data, n["scope"]["project_id"])} for n in notes],
    }


def _files(data: SiteData) -> dict[str, Any]:
    files = [{"path": p, "url": f"files/{file_slug(p)}/", "count": len(refs)} for p, refs in data.files.items()]
    return {"title": "Files", "crumbs": [], "files": files}


def _file(path: str, refs: list[Rec]) -> dict[str, Any]:
    return {"title": path, "crumbs": [{"label": "Files", "url": "files/"}], "path": path, "refs": refs}


def _activity(data: SiteData, events: list[Rec], archive: list[Rec], month: str | None) -> dict[str, Any]:
    """The latest events, or one month of them (a new event leaves older months untouched)."""
    rows = [_event_row(data, e) for e in events]
    projects = sorted({(r["project"], r["where"]) for r in rows if r["project"]}, key=lambda p: (p[1], p[0]))
    return {
        "title": f"Activity {month}" if month else "Activity",
        "crumbs": [{"label": "Activity", "url": "activity/"}] if month else [],
        "month": month,
        "rows": rows,
        "total": len(rows),
        "months": archive,
        "projects": [{"id": p, "name": n} for p, n in projects],
        "kinds": sorted({r["kind"] for r in rows}),
        "kind_labels": KIND_LABELS,
    }
