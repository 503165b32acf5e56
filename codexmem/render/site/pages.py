"""Which pages the site has, and the context each is rendered from.

A context holds exactly what its page shows (titles and statuses of the records it links to,
not whole records), so that hashing it tells the builder whether the page can have changed:
editing a note's body re-renders the note page, not every list that shows its title.

:func:`plan` returns jobs, not pages: a job makes its page's context (and the chunks of the
page's lists) only when the builder runs it, so a build holds one page's data at a time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from codexmem.models.records import NOTE_TYPES
from codexmem.render.site.channel_pages import channel_list, channel_page, item_page, items_table
from codexmem.render.site.data import Rec, SiteData, file_slug, handoff_rank, newest_first, note_order
from codexmem.render.site.history_pages import TEMPLATE as HISTORY_TEMPLATE
from codexmem.render.site.history_pages import history_pages
from codexmem.render.site.link_pages import TEMPLATE as LINKS_TEMPLATE
from codexmem.render.site.link_pages import link_pages
from codexmem.render.site.pieces import (
    backlinks,
    event_row,
    file_links,
    handoff_row,
    history,
    note_row,
    project_ref,
    session_row,
)
from codexmem.render.site.tables import (
    CHUNK_ROWS,
    Row,
    Table,
    bucket_count,
    bucket_of,
    chunk_version,
    row_chunks,
    table_context,
)

HOME_EVENTS = 20
HOME_HANDOFFS = 12
HOME_PROJECTS = 15
"""Projects of a system on the home page; with more, a link to the list of all."""
PROJECT_HANDOFFS = 12
PROJECT_NOTES_PER_TYPE = 5
PROJECT_SESSIONS = 10
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
    """One HTML file: where it goes, its template and the data it shows."""

    path: str
    template: str
    context: dict[str, Any]


@dataclass(frozen=True)
class Chunk:
    """One JSON file of a list's rows, rendered with the row macro of the page that loads it."""

    path: str
    table: Table
    rows: list[Row]
    root: str
    version: str
    """The digest of its rows' data (see ``tables.chunk_version``)."""


Output = Page | Chunk
Job = Callable[[], list[Output]]


def plan(data: SiteData, salt: str) -> list[Job]:
    """Every page of the site as a job; ``salt`` (the generator's hash) versions the chunks."""
    jobs: list[Job] = []

    def page(path: str, template: str, make: Callable[[], dict[str, Any]]) -> None:
        def job() -> list[Output]:
            context = make()
            return [Page(path, template, context), *_spilled(path, context)]

        jobs.append(job)

    def listing(folder: str, template: str, make: Callable[[], tuple[dict[str, Any], Table]]) -> None:
        def job() -> list[Output]:
            context, table = make()
            root = "../" * folder.count("/")
            cut = row_chunks(table)
            # Each chunk's version (its data's digest) is made once: the page's URLs to the
            # chunks and the chunks' own inputs hashes both use it.
            versions = {name: chunk_version(salt, rows) for name, rows in cut.items()}
            context["table"] = table_context(table, versions)
            chunks: list[Output] = [
                Chunk(f"{folder}{table.id}-{name}.json", table, rows, root, versions[name])
                for name, rows in cut.items()
            ]
            path = f"{folder}index.html"
            return [Page(path, template, context), *_spilled(path, context), *chunks]

        jobs.append(job)

    # Record pages first, the largest kinds first: search indexes each kind's parts as soon as
    # its pages are written, so Pagefind works while the lists and summaries below render.
    notes, handoffs, sessions, imports = (data.records[k] for k in ("note", "handoff", "session", "import"))
    for nid, note in notes.items():
        page(f"notes/{nid}/index.html", "note.html", partial(_note, data, note))
    for cid in data.channels:
        listing(f"channels/{cid}/", "channel.html", partial(_channel, data, cid))
        for iid, item in data.items[cid].items():
            page(f"channels/{cid}/{iid}/index.html", "item.html", partial(item_page, data, cid, item))
    for hid, handoff in handoffs.items():
        page(f"handoffs/{hid}/index.html", "handoff.html", partial(_handoff, data, handoff))
    for sid, session in sessions.items():
        listing(f"sessions/{sid}/", "session.html", partial(_session, data, session))
    for iid, imp in imports.items():
        page(f"imports/{iid}/index.html", "import.html", partial(_import, data, imp))
    page("index.html", "home.html", partial(_home, data))
    page("search/index.html", "search.html", _search)
    for pid in data.projects:
        page(f"projects/{pid}/index.html", "project.html", partial(_project, data, pid))
        listing(f"projects/{pid}/notes/", "list.html", partial(_project_notes, data, pid))
        listing(f"projects/{pid}/sessions/", "list.html", partial(_project_sessions, data, pid))
        listing(f"projects/{pid}/handoffs/", "list.html", partial(_project_handoffs, data, pid))
    listing("projects/", "list.html", partial(_projects, data))
    page("channels/index.html", "channels.html", partial(_channels, data))
    listing("tags/", "list.html", partial(_tags, data))
    for tag in data.tags:
        listing(f"tags/{tag}/", "list.html", partial(_tag, data, tag))
    listing("files/", "list.html", partial(_files, data))
    for path, refs in data.files.items():
        page(f"files/{file_slug(path)}/index.html", "file.html", partial(_file, path, refs))
    listing("activity/", "list.html", partial(_activity, data))
    return jobs


# ------------------------------------------------------------------ contexts


def _search() -> dict[str, Any]:
    return {"title": "Search", "section": "search", "crumbs": []}


def _home(data: SiteData) -> dict[str, Any]:
    systems = [
        {
            "id": s["id"],
            "name": s["name"],
            "projects": [
                {**project_ref(data, pid), "counts": data.project_counts.get(pid, {})}
                for pid in s["projects"][:HOME_PROJECTS]
            ],
            "more": max(len(s["projects"]) - HOME_PROJECTS, 0),
        }
        for s in data.systems
        if s["projects"]
    ]
    open_handoffs = [h for h in data.records["handoff"].values() if h["status"] == "open"]
    return {
        "title": "Home",
        "section": "home",
        "crumbs": [],
        "systems": systems,
        "open_handoffs": [handoff_row(data, h) for h in newest_first(open_handoffs, "created_at")][:HOME_HANDOFFS],
        "open_count": len(open_handoffs),
        "recent": [event_row(data, e) for e in data.events[:HOME_EVENTS]],
        "channels": channel_list(data),
        "as_of": data.now.strftime("%Y-%m-%d"),
    }


def _project_crumbs(data: SiteData, pid: str) -> list[Rec]:
    ref = project_ref(data, pid)
    return [{"label": ref["name"], "url": ref["url"]}]


def _notes_of(data: SiteData, pid: str) -> list[Rec]:
    mine = [n for n in data.records["note"].values() if n["scope"]["project_id"] == pid]
    return newest_first(mine, "updated_at", note_order)


def _project(data: SiteData, pid: str) -> dict[str, Any]:
    """A summary whose size does not grow with the project: the lists have pages of their own."""
    project = data.projects[pid]
    notes = _notes_of(data, pid)
    by_type: list[Rec] = []
    for note_type in NOTE_TYPES:
        of_type = [n for n in notes if n["type"] == note_type]
        if of_type:
            statuses: dict[str, int] = defaultdict(int)
            for n in of_type:
                statuses[n["status"]] += 1
            by_type.append(
                {
                    "type": note_type,
                    "count": len(of_type),
                    "statuses": dict(statuses),
                    "notes": [note_row(n) for n in of_type[:PROJECT_NOTES_PER_TYPE]],
                }
            )
    handoffs = newest_first(
        [h for h in data.records["handoff"].values() if h["scope"]["project_id"] == pid], "created_at"
    )
    open_handoffs = [h for h in handoffs if h["status"] == "open"]
    sessions = newest_first(
        [s for s in data.records["session"].values() if s["scope"]["project_id"] == pid], "started_at"
    )
    days: dict[str, list[Rec]] = {}
    for s in sessions[:PROJECT_SESSIONS]:
        days.setdefault(s["started_at"][:10], []).append(session_row(data, s))
    relations = [
        {**r, "target": project_ref(data, r["project"]) if r["project"] in data.projects else None}
        for r in project["relations"]
    ]
    return {
        "title": project["name"],
        "section": "projects",
        "project_id": pid,
        "crumbs": [{"label": "Projects", "url": "projects/"}],
        "project": {**project, "relations": relations},
        "system": next((s["name"] for s in data.systems if s["id"] == project["system"]), project["system"]),
        "open_handoffs": [handoff_row(data, h) for h in open_handoffs[:PROJECT_HANDOFFS]],
        "open_count": len(open_handoffs),
        "handoff_count": len(handoffs),
        "notes_by_type": by_type,
        "note_count": len(notes),
        "recent_sessions": [{"day": day, "sessions": rows} for day, rows in days.items()],
        "session_count": len(sessions),
        "backlinks": backlinks(data, pid),
    }


def _note_table(data: SiteData, notes: list[Rec], *, show_project: bool) -> Table:
    """Notes in the given order; chunks cut in creation (id) order."""
    by_id = sorted(n["note_id"] for n in notes)
    slot = {nid: n // CHUNK_ROWS for n, nid in enumerate(by_id)}
    types: set[str] = set()
    statuses: set[str] = set()
    rows = []
    for position, note in enumerate(notes):
        ctx = note_row(note)
        if show_project:
            ctx["project"] = project_ref(data, note["scope"]["project_id"])
        types.add(note["type"])
        statuses.add(note["status"])
        keys: list[Any] = [
            note["title"][:40].lower(),
            NOTE_TYPES.index(note["type"]),
            note["status"],
            note["importance"],
        ]
        if show_project:
            keys.append(ctx["project"]["name"].lower())
        keys.append(note["updated_at"])
        rows.append(
            Row(
                ctx=ctx,
                order=position,
                chunk=f"{slot[note['note_id']]:04d}",
                keys=keys,
                filters={"type": [note["type"]], "status": [note["status"]]},
            )
        )
    columns = [
        {"key": "title", "label": "Title", "sort": "text", "cls": "c-title"},
        {"key": "type", "label": "Type", "sort": "num", "cls": "c-sel"},
        {"key": "status", "label": "Status", "sort": "text", "cls": "c-sel"},
        {"key": "importance", "label": "Importance", "sort": "num", "cls": "c-sel"},
    ]
    if show_project:
        columns.append({"key": "project", "label": "Project", "sort": "text", "cls": ""})
    columns.append({"key": "updated", "label": "Updated", "sort": "text", "cls": "c-date"})
    return Table(
        id="notes",
        macro="note_row",
        columns=columns,
        filters=[
            {"param": "type", "label": "Type", "options": [{"value": t, "label": t} for t in NOTE_TYPES if t in types]},
            {"param": "status", "label": "Status", "options": [{"value": s, "label": s} for s in sorted(statuses)]},
        ],
        rows=rows,
        text_filter=True,
        noun="note",
        extra={"show_project": show_project},
    )


def _project_notes(data: SiteData, pid: str) -> tuple[dict[str, Any], Table]:
    name = project_ref(data, pid)["name"]
    context = {
        "title": f"Notes of {name}",
        "section": "projects",
        "project_id": pid,
        "crumbs": _project_crumbs(data, pid),
        "lead": "By type, then status, then importance; sort by any column.",
    }
    return context, _note_table(data, _notes_of(data, pid), show_project=False)


def _project_sessions(data: SiteData, pid: str) -> tuple[dict[str, Any], Table]:
    sessions = sorted(
        (s for s in data.records["session"].values() if s["scope"]["project_id"] == pid),
        key=lambda s: (s["started_at"], s["session_id"]),
    )
    statuses = sorted({s["status"] for s in sessions})
    rows = [
        Row(
            ctx=session_row(data, s),
            order=-position,
            chunk=f"{position // CHUNK_ROWS:04d}",
            keys=[s["started_at"], (s["task"] or "")[:40].lower(), s["status"], s["branch_name"] or None],
            filters={"status": [s["status"]]},
        )
        for position, s in enumerate(sessions)
    ]
    table = Table(
        id="sessions",
        macro="session_row",
        columns=[
            {"key": "started", "label": "Started (UTC)", "sort": "text", "cls": "c-date"},
            {"key": "task", "label": "Task", "sort": "text", "cls": "c-title"},
            {"key": "status", "label": "Status", "sort": "text", "cls": "c-sel"},
            {"key": "branch", "label": "Branch", "sort": "text", "cls": ""},
            {"key": "wrote", "label": "Wrote", "sort": None, "cls": ""},
        ],
        filters=[{"param": "status", "label": "Status", "options": [{"value": s, "label": s} for s in statuses]}],
        rows=rows,
        text_filter=True,
        noun="session",
    )
    name = project_ref(data, pid)["name"]
    context = {
        "title": f"Sessions of {name}",
        "section": "projects",
        "project_id": pid,
        "crumbs": _project_crumbs(data, pid),
        "lead": "Newest first.",
    }
    return context, table


def _project_handoffs(data: SiteData, pid: str) -> tuple[dict[str, Any], Table]:
    handoffs = sorted(
        (h for h in data.records["handoff"].values() if h["scope"]["project_id"] == pid),
        key=lambda h: (h["created_at"], h["handoff_id"]),
    )
    shown = newest_first(handoffs, "created_at", handoff_rank)
    position = {h["handoff_id"]: n for n, h in enumerate(handoffs)}
    rows = [
        Row(
            ctx=handoff_row(data, h),
            order=rank,
            chunk=f"{position[h['handoff_id']] // CHUNK_ROWS:04d}",
            keys=[h["task"][:40].lower(), h["status"], h["kind"], h["created_at"]],
            filters={"status": [h["status"]], "kind": [h["kind"]]},
        )
        for rank, h in enumerate(shown)
    ]
    statuses = sorted({h["status"] for h in handoffs})
    kinds = sorted({h["kind"] for h in handoffs})
    table = Table(
        id="handoffs",
        macro="handoff_row",
        columns=[
            {"key": "task", "label": "Task", "sort": "text", "cls": "c-title"},
            {"key": "status", "label": "Status", "sort": "text", "cls": "c-sel"},
            {"key": "kind", "label": "Kind", "sort": "text", "cls": "c-sel"},
            {"key": "created", "label": "Created", "sort": "text", "cls": "c-date"},
        ],
        filters=[
            {"param": "status", "label": "Status", "options": [{"value": s, "label": s} for s in statuses]},
            {"param": "kind", "label": "Kind", "options": [{"value": k, "label": k} for k in kinds]},
        ],
        rows=rows,
        text_filter=True,
        noun="handoff",
    )
    name = project_ref(data, pid)["name"]
    context = {
        "title": f"Handoffs of {name}",
        "section": "projects",
        "project_id": pid,
        "crumbs": _project_crumbs(data, pid),
        "lead": "Open ones first, then newest first.",
    }
    return context, table


def _spilled(path: str, context: dict[str, Any]) -> list[Output]:
    """The pages a long history or a long list of links moves to, beside the page at ``path``."""
    return [
        *(Page(at, HISTORY_TEMPLATE, page) for at, page in history_pages(path, context)),
        *(Page(at, LINKS_TEMPLATE, page) for at, page in link_pages(path, context)),
    ]


def _note(data: SiteData, note: Rec) -> dict[str, Any]:
    superseded = data.ref(note["superseded_by"]) if note.get("superseded_by") else None
    pid = note["scope"]["project_id"]
    return {
        "title": note["title"],
        "section": "projects",
        "project_id": pid,
        "crumbs": [*_project_crumbs(data, pid), {"label": "Notes", "url": f"projects/{pid}/notes/"}],
        "note": note,
        "project": project_ref(data, pid),
        "session": data.ref(note["session_id"]),
        "superseded_by": superseded,
        "related_projects": [project_ref(data, p) for p in note.get("related_project_ids") or []],
        "files": file_links(note["file_paths"]),
        "mentions": data.mentions(note["content"], root="../../"),
        "history": history(data, note["note_id"]),
        "backlinks": backlinks(data, note["note_id"]),
    }


def _handoff(data: SiteData, handoff: Rec) -> dict[str, Any]:
    pid = handoff["scope"]["project_id"]
    texts = [
        handoff["summary"],
        *handoff["next_steps"],
        *handoff.get("completed", []),
        *handoff.get("open_questions", []),
        *handoff.get("risks", []),
    ]
    return {
        "title": handoff["task"],
        "section": "projects",
        "project_id": pid,
        "crumbs": [*_project_crumbs(data, pid), {"label": "Handoffs", "url": f"projects/{pid}/handoffs/"}],
        "handoff": handoff,
        "project": project_ref(data, pid),
        "session": data.ref(handoff["session_id"]),
        "related_notes": [data.ref(n) for n in handoff["related_note_ids"]],
        "files": file_links(handoff["files_touched"]),
        "mentions": data.mentions(*texts, root="../../"),
        "history": history(data, handoff["handoff_id"]),
        "backlinks": backlinks(data, handoff["handoff_id"]),
    }


def _events_table(data: SiteData, events: list[Rec], *, table_id: str, show_where: bool, show_actor: bool) -> Table:
    """Events newest first (``events`` is newest first); chunks by month, then by slices of a month."""
    months: dict[str, int] = defaultdict(int)
    rows = []
    for position, event in enumerate(reversed(events)):
        month = event["at"][:7]
        slot = months[month] // CHUNK_ROWS
        months[month] += 1
        ctx = event_row(data, event)
        rows.append(
            Row(
                ctx=ctx,
                order=-position,  # newest first; stable when events are appended
                chunk=f"{month}-{slot:02d}",
                keys=[event["at"], event["kind"], str(ctx["ref"]["title"])[:40].lower(), ctx["where"].lower() or None],
                filters={
                    "kind": [event["kind"]],
                    "project": [ctx["project"]] if ctx["project"] else [],
                    "month": [month],
                },
            )
        )
    projects = sorted(
        {(r.ctx["project"], r.ctx["where"]) for r in rows if r.ctx["project"]}, key=lambda p: (p[1], p[0])
    )
    kinds = sorted({r.ctx["kind"] for r in rows})
    columns: list[Rec] = [
        {"key": "when", "label": "When (UTC)", "sort": "text", "cls": "c-date"},
        {"key": "what", "label": "What", "sort": "text", "cls": "c-sel"},
        {"key": "record", "label": "Record", "sort": "text", "cls": "c-title"},
    ]
    if show_where:
        columns.append({"key": "where", "label": "Where", "sort": "text", "cls": ""})
    if show_actor:
        columns.append({"key": "who", "label": "Who", "sort": None, "cls": ""})
    filters: list[Rec] = [
        {"param": "kind", "label": "Kind", "options": [{"value": k, "label": KIND_LABELS.get(k, k)} for k in kinds]},
    ]
    if show_where:
        filters.insert(
            0, {"param": "project", "label": "Project", "options": [{"value": p, "label": n} for p, n in projects]}
        )
    month_names = sorted(months, reverse=True)
    if len(month_names) > 1:
        filters.append({"param": "month", "label": "Month", "options": [{"value": m, "label": m} for m in month_names]})
    return Table(
        id=table_id,
        macro="event_row",
        columns=columns,
        filters=filters,
        rows=rows,
        noun="event",
        extra={"show_where": show_where, "show_actor": show_actor},
    )


def _session(data: SiteData, session: Rec) -> tuple[dict[str, Any], Table]:
    sid = session["session_id"]
    pid = session["scope"]["project_id"]
    context = {
        "title": data.ref(sid)["title"],
        "section": "projects",
        "project_id": pid,
        "crumbs": [*_project_crumbs(data, pid), {"label": "Sessions", "url": f"projects/{pid}/sessions/"}],
        "session": session,
        "project": project_ref(data, pid),
        "history": history(data, sid),
        "backlinks": backlinks(data, sid),
    }
    events = data.session_events.get(sid, [])
    # Every row's actor is this session: the table leaves the Who column out.
    return context, _events_table(data, events, table_id="changes", show_where=False, show_actor=False)


def _import(data: SiteData, imp: Rec) -> dict[str, Any]:
    durable = imp.get("durable_memory_id")
    pid = imp["scope"]["project_id"]
    return {
        "title": data.ref(imp["import_id"])["title"],
        "section": "projects",
        "project_id": pid,
        "crumbs": _project_crumbs(data, pid),
        "imp": imp,
        "project": project_ref(data, pid),
        "session": data.ref(imp["session_id"]),
        "durable": data.ref(durable) if durable else None,
        "history": history(data, imp["import_id"]),
        "backlinks": backlinks(data, imp["import_id"]),
    }


def _channel(data: SiteData, cid: str) -> tuple[dict[str, Any], Table]:
    return channel_page(data, cid), items_table(data, cid)


def _channels(data: SiteData) -> dict[str, Any]:
    return {"title": "Channels", "section": "channels", "crumbs": [], "channels": channel_list(data)}


def _projects(data: SiteData) -> tuple[dict[str, Any], Table]:
    context = {"title": "Projects", "section": "projects", "crumbs": [], "lead": "Every project, by name."}
    named = [(p["name"], p["url"], data.project_counts.get(pid, {}).get("note", 0)) for pid, p in data.projects.items()]
    return context, _names_table("projects", named, name_label="Project", count_label="Notes", noun="project")


def _tags(data: SiteData) -> tuple[dict[str, Any], Table]:
    context = {"title": "Tags", "section": "tags", "crumbs": [], "lead": "Tags of notes, by name."}
    named = [(f"#{t}", f"tags/{t}/", len(ids)) for t, ids in data.tags.items()]
    return context, _names_table("tags", named, name_label="Tag", count_label="Notes", noun="tag")


def _tag(data: SiteData, tag: str) -> tuple[dict[str, Any], Table]:
    notes = newest_first([data.records["note"][i] for i in data.tags[tag]], "updated_at")
    context = {
        "title": f"#{tag}",
        "section": "tags",
        "crumbs": [{"label": "Tags", "url": "tags/"}],
        "lead": "Notes with this tag, newest first.",
    }
    return context, _note_table(data, notes, show_project=True)


def _files(data: SiteData) -> tuple[dict[str, Any], Table]:
    context = {
        "title": "Files",
        "section": "files",
        "crumbs": [],
        "lead": "Paths named by notes (file_paths) and handoffs (files_touched), by path.",
    }
    named = [(p, f"files/{file_slug(p)}/", len(refs)) for p, refs in data.files.items()]
    return context, _names_table("files", named, name_label="Path", count_label="Named by", noun="file", code=True)


def _names_table(
    table_id: str,
    named: list[tuple[str, str, int]],
    *,
    name_label: str,
    count_label: str,
    noun: str,
    code: bool = False,
) -> Table:
    """Names (a tag, a path) with the records that use them, by name: a list however many there are.

    Chunks are buckets of a hash of the name (their number doubles with the list), so a count
    that changes rewrites the chunk that holds its row, and a new name rarely moves others.
    """
    buckets = bucket_count(len(named), CHUNK_ROWS)
    rows = [
        Row(
            ctx={"name": name, "url": url, "count": count},
            order=position,
            chunk=f"{bucket_of(name, buckets):04d}",
            keys=[name.lower(), count],
        )
        for position, (name, url, count) in enumerate(sorted(named))
    ]
    return Table(
        id=table_id,
        macro="name_row",
        columns=[
            {"key": "name", "label": name_label, "sort": "text", "cls": "c-title"},
            {"key": "count", "label": count_label, "sort": "num", "cls": "c-sel"},
        ],
        filters=[],
        rows=rows,
        text_filter=True,
        noun=noun,
        extra={"code": code, "count_label": count_label},
    )


def _file(path: str, refs: list[Rec]) -> dict[str, Any]:
    return {
        "title": path,
        "section": "files",
        "crumbs": [{"label": "Files", "url": "files/"}],
        "file_path": path,  # not "path": the build sets that to the page's own path
        "backlinks": [{"group": "Notes and handoffs that name it", "refs": refs}],
    }


def _activity(data: SiteData) -> tuple[dict[str, Any], Table]:
    context = {
        "title": "Activity",
        "section": "activity",
        "crumbs": [],
        "lead": "Every change, newest first. Every record's page has its history.",
    }
    return context, _events_table(data, data.events, table_id="events", show_where=True, show_actor=True)
