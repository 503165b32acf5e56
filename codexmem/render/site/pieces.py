"""Context pieces several pages share: links to records and projects, event rows, history, backlinks.

Each returns plain data holding only what a page shows of the records it links to.
"""

from __future__ import annotations

import re
from typing import Any

from codexmem.records.schema_diff import change_line, schema_changes
from codexmem.render.markdown import RECORD_ID_RE
from codexmem.render.site.data import Rec, SiteData, file_slug, url_of
from codexmem.render.site.templating import format_dt
from codexmem.render.textdiff import plain_value


def project_ref(data: SiteData, pid: str) -> Rec:
    project = data.projects.get(pid)
    if project is None:
        return {"id": pid, "name": pid, "url": None}
    return {"id": pid, "name": project["name"], "url": project["url"]}


def note_row(note: Rec) -> Rec:
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


def session_row(data: SiteData, session: Rec) -> Rec:
    """A session in a list: when, what, where it ran, and how much it wrote."""
    sid = session["session_id"]
    return {
        "id": sid,
        "url": url_of("session", sid),
        "task": session["task"],
        "status": session["status"],
        "branch": session["branch_name"],
        "started_at": session["started_at"],
        "ended_at": session.get("ended_at"),
        "notes": data.wrote.get(sid, {}).get("note", 0),
        "handoffs": data.wrote.get(sid, {}).get("handoff", 0),
    }


def handoff_row(data: SiteData, handoff: Rec) -> Rec:
    return {
        "id": handoff["handoff_id"],
        "url": url_of("handoff", handoff["handoff_id"]),
        "task": handoff["task"],
        "kind": handoff["kind"],
        "status": handoff["status"],
        "next_steps": handoff["next_steps"][:3],
        "more_steps": max(len(handoff["next_steps"]) - 3, 0),
        "created_at": handoff["created_at"],
        "project": project_ref(data, handoff["scope"]["project_id"]),
    }


def actor(data: SiteData, name: str) -> Rec:
    """Who made a change: a session (linked, shown by its task), ``cli:<user>`` or ``git``."""
    if name in data.records["session"]:
        return {"label": data.ref(name)["title"], "url": url_of("session", name), "kind": "session"}
    kind = "cli" if name.startswith("cli:") else ("git" if name == "git" else "other")
    return {"label": name, "url": None, "kind": kind}


def event_row(data: SiteData, event: Rec) -> Rec:
    """One line of an activity list: when, who, what happened to which record, and where."""
    ref = data.ref(event["id"])
    project = ref.get("project") or ""
    return {
        "id": event["event_id"],
        "at": event["at"],
        "actor": actor(data, event["actor"]),
        "author": event.get("author") or "",  # the person behind "cli" or a session, as history shows
        "kind": event["kind"],
        "type": event["type"],
        "version": event["version"],
        "changed": event["changed"],
        "ref": {"title": ref["title"], "url": ref["url"]},
        "project": project,
        "channel": event["channel"],
        "where": (data.projects[project]["name"] if project in data.projects else "")
        or (data.channels[event["channel"]]["name"] if event["channel"] in data.channels else ""),
    }


def history(data: SiteData, rid: str, fields: list[Rec] | None = None, *, schema: bool = False) -> Rec:
    """The history of one record, oldest first: the one place a page's history comes from.

    ``rows``: each change is old -> new (``fields``, an item's schema fields, shows them as the
    table does: option labels and chips), a word diff for long texts, or "not recorded" where
    neither the events nor git know the values (see :mod:`codexmem.render.site.history`). A
    channel's (``schema``) change of its fields is one line per change, as ``codexmem diff``
    says it (an option removed, a field renamed), not two dumps of the whole list.
    ``earlier``: the pages older rows moved to (``history_pages``); ``total``: all events.
    """
    spec = {f["key"]: f for f in fields or []}
    rows = [
        {
            "at": e["at"],
            "actor": actor(data, e["actor"]),
            "author": e["author"],
            "type": e["type"],
            "version": e["version"],
            "parallel": e["parallel"],
            "changes": [
                _schema_view(c) if schema else _linked_ids(data, _change_view(c, spec.get(c["key"])))
                for c in e["changes"]
            ],
            "snapshot": e["snapshot"],
        }
        for e in data.history.get(rid, [])
    ]
    return {"rows": rows, "earlier": [], "total": len(rows)}


def _change_view(change: Rec, f: Rec | None) -> Rec:
    shown = shown_options(f, change.get("old"), change.get("new")) if f else None
    label = f["label"] if f else change["key"].replace("_", " ").capitalize()  # "Ended at", as items' labels read
    view = {**change, "label": label, "f": shown}
    if change["kind"] in ("value", "unknown") and f is None:
        view["old"], view["new"] = _plain(change.get("old")), _plain(change.get("new"))
    return view


def _linked_ids(data: SiteData, view: Rec) -> Rec:
    """A value that is a record's id (a note's ``superseded_by``) links to that record, as the page's
    own banner does; ``old_ref`` and ``new_ref`` carry the links."""
    for side in ("old", "new"):
        value = view.get(side)
        is_id = view.get("f") is None and isinstance(value, str) and RECORD_ID_RE.fullmatch(value)
        view[f"{side}_ref"] = data.ref(str(value)) if is_id else None
    return view


_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")


def _plain(value: Any) -> str:
    """A record's value as the page shows it elsewhere: a time as ``2026-03-13 10:52``, not its ISO form."""
    if isinstance(value, str) and _TIMESTAMP.fullmatch(value):
        return format_dt(value)
    return plain_value(value)


def _schema_view(change: Rec) -> Rec:
    old, new = change.get("old"), change.get("new")
    if change["key"] != "fields" or change["kind"] != "value" or not (isinstance(old, list) and isinstance(new, list)):
        return _change_view(change, None)
    lines = [change_line(c) for c in schema_changes({"fields": old}, {"fields": new})]
    return {"key": "fields", "kind": "schema", "label": "fields", "lines": lines, "f": None}


def shown_options(field: Rec, *values: Any) -> Rec:
    """An item's field with only the options ``values`` show (a value, or a list of them).

    A page's context is hashed every build and carried to its worker: the whole option list in
    each fact and each change made a no-change build of 2,000 items twice as long at 700 options.
    """
    if not field.get("options"):
        return field
    shown = [v for value in values for v in (value if isinstance(value, list) else [value])]
    options = {v: field["options"][v] for v in shown if isinstance(v, str) and v in field["options"]}
    return {**{k: v for k, v in field.items() if k != "option_list"}, "options": options}


def backlinks(data: SiteData, rid: str) -> list[Rec]:
    """Backlinks grouped: ``[{"group": label, "refs": [...]}]``."""
    groups: dict[str, list[Rec]] = {}
    for link in data.backlinks.get(rid, []):
        groups.setdefault(link["group"], []).append({k: v for k, v in link.items() if k != "group"})
    return [{"group": g, "refs": refs} for g, refs in groups.items()]


def file_links(paths: list[str]) -> list[Rec]:
    return [{"path": p, "url": f"files/{file_slug(p)}/"} for p in paths]


def beside(context: Rec, folder: str, title: str) -> Rec:
    """The frame of a page that goes on from a record's page (its older history, its full list of
    links): its title, section and project, breadcrumbs that end at the record, and the record."""
    page: Rec = {
        "title": title,
        "section": context.get("section"),
        "crumbs": [*context.get("crumbs", []), {"label": context["title"], "url": folder}],
        "record": {"title": context["title"], "url": folder},
    }
    if "project_id" in context:
        page["project_id"] = context["project_id"]
    return page
