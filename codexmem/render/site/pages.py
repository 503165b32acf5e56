"""Which pages the site has, and the context each is rendered from.

A context holds exactly what its page shows (titles and statuses of the records it links to,
not whole records), so that hashing it tells the builder whether the page can have changed:
editing a note's body re-renders the note page, not every list that shows its title.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from codexmem.models.records import NOTE_TYPES
from codexmem.render.site.channel_pages import channel_list, channel_page, item_page
from codexmem.render.site.data import Rec, SiteData, file_slug, handoff_rank, newest_first, note_order, url_of
from codexmem.render.site.pieces import (
    backlinks,
    event_row,
    file_links,
    handoff_row,
    history,
    note_row,
    project_ref,
)

HOME_EVENTS = 20
HOME_HANDOFFS = 30
ACTIVITY_EVENTS = 500
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
        yield Page(f"channels/{cid}/index.html", "channel.html", channel_page(data, cid))
        for item in data.items[cid].values():
            yield Page(f"channels/{cid}/{item['item_id']}/index.html", "item.html", item_page(data, cid, item))
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


# ------------------------------------------------------------------ contexts


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
            "projects": [{**project_ref(data, pid), "counts": dict(counts[pid])} for pid in s["projects"]],
        }
        for s in data.systems
        if s["projects"]
    ]
    open_handoffs = [h for h in data.records["handoff"].values() if h["status"] == "open"]
    return {
        "title": "Home",
        "crumbs": [],
        "systems": systems,
        "open_handoffs": [handoff_row(data, h) for h in newest_first(open_handoffs, "created_at")][:HOME_HANDOFFS],
        "open_count": len(open_handoffs),
        "recent": [event_row(data, e) for e in data.events[:HOME_EVENTS]],
        "channels": channel_list(data),
        "as_of": data.now.strftime("%Y-%m-%d %H:%M UTC"),
    }


def _project(data: SiteData, pid: str) -> dict[str, Any]:
    project = data.projects[pid]
    mine = [n for n in data.records["note"].values() if n["scope"]["project_id"] == pid]
    notes = newest_first(mine, "updated_at", note_order)
    by_type: list[Rec] = []
    for note_type in NOTE_TYPES:
        rows = [note_row(n) for n in notes if n["type"] == note_type]
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
        {**r, "target": project_ref(data, r["project"]) if r["project"] in data.projects else None}
        for r in project["relations"]
    ]
    return {
        "title": project["name"],
        "crumbs": [],
        "project": {**project, "relations": relations},
        "system": next((s["name"] for s in data.systems if s["id"] == project["system"]), project["system"]),
        "open_handoffs": [handoff_row(data, h) for h in handoffs if h["status"] == "open"],
        "other_handoffs": [handoff_row(data, h) for h in handoffs if h["status"] != "open"],
        "notes_by_type": by_type,
        "note_count": len(notes),
        "timeline": [{"day": day, "sessions": rows} for day, rows in timeline.items()],
        "backlinks": backlinks(data, pid),
    }


def _record_crumbs(data: SiteData, rec: Rec) -> list[Rec]:
    ref = project_ref(data, rec["scope"]["project_id"])
    return [{"label": ref["name"], "url": ref["url"]}]


def _note(data: SiteData, note: Rec) -> dict[str, Any]:
    superseded = data.ref(note["superseded_by"]) if note.get("superseded_by") else None
    return {
        "title": note["title"],
        "crumbs": _record_crumbs(data, note),
        "note": note,
        "project": project_ref(data, note["scope"]["project_id"]),
        "session": data.ref(note["session_id"]),
        "superseded_by": superseded,
        "related_projects": [project_ref(data, p) for p in note.get("related_project_ids") or []],
        "files": file_links(note["file_paths"]),
        "history": history(data, note["note_id"]),
        "backlinks": backlinks(data, note["note_id"]),
    }


def _handoff(data: SiteData, handoff: Rec) -> dict[str, Any]:
    return {
        "title": handoff["task"],
        "crumbs": _record_crumbs(data, handoff),
        "handoff": handoff,
        "project": project_ref(data, handoff["scope"]["project_id"]),
        "session": data.ref(handoff["session_id"]),
        "related_notes": [data.ref(n) for n in handoff["related_note_ids"]],
        "files": file_links(handoff["files_touched"]),
        "history": history(data, handoff["handoff_id"]),
        "backlinks": backlinks(data, handoff["handoff_id"]),
    }


def _session(data: SiteData, session: Rec) -> dict[str, Any]:
    sid = session["session_id"]
    return {
        "title": data.ref(sid)["title"],
        "crumbs": _record_crumbs(data, session),
        "session": session,
        "project": project_ref(data, session["scope"]["project_id"]),
        "events": [event_row(data, e) for e in data.session_events.get(sid, [])],
        "history": history(data, sid),
        "backlinks": backlinks(data, sid),
    }


def _import(data: SiteData, imp: Rec) -> dict[str, Any]:
    durable = imp.get("durable_memory_id")
    return {
        "title": data.ref(imp["import_id"])["title"],
        "crumbs": _record_crumbs(data, imp),
        "imp": imp,
        "project": project_ref(data, imp["scope"]["project_id"]),
        "session": data.ref(imp["session_id"]),
        "durable": data.ref(durable) if durable else None,
        "history": history(data, imp["import_id"]),
        "backlinks": backlinks(data, imp["import_id"]),
    }


def _channels(data: SiteData) -> dict[str, Any]:
    return {"title": "Channels", "crumbs": [], "channels": channel_list(data)}


def _tags(data: SiteData) -> dict[str, Any]:
    tags = [{"tag": t, "url": f"tags/{t}/", "count": len(ids)} for t, ids in data.tags.items()]
    return {"title": "Tags", "crumbs": [], "tags": tags}


def _tag(data: SiteData, tag: str, ids: list[str]) -> dict[str, Any]:
    notes = newest_first([data.records["note"][i] for i in ids], "updated_at")
    return {
        "title": f"#{tag}",
        "crumbs": [{"label": "Tags", "url": "tags/"}],
        "tag": tag,
        "notes": [{**note_row(n), "project": project_ref(data, n["scope"]["project_id"])} for n in notes],
    }


def _files(data: SiteData) -> dict[str, Any]:
    files = [{"path": p, "url": f"files/{file_slug(p)}/", "count": len(refs)} for p, refs in data.files.items()]
    return {"title": "Files", "crumbs": [], "files": files}


def _file(path: str, refs: list[Rec]) -> dict[str, Any]:
    return {"title": path, "crumbs": [{"label": "Files", "url": "files/"}], "path": path, "refs": refs}


def _activity(data: SiteData, events: list[Rec], archive: list[Rec], month: str | None) -> dict[str, Any]:
    """The latest events, or one month of them (a new event leaves older months untouched)."""
    rows = [event_row(data, e) for e in events]
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
