"""Everything the site shows, read from the index once into plain data.

Pages are cut from this one structure, so a record is parsed, and its formulas evaluated, once
per build however many pages show it. Backlinks, tags and file mentions are computed here in a
single pass over the records. Everything is plain dicts and lists (JSON-able): a page's context
can be hashed to decide whether it must be rendered again.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from codexmem.gitrepo import discover_repository, is_shallow
from codexmem.models.channel import COLOR_RE, ChannelSchema
from codexmem.models.records import HANDOFF_STATUSES, NOTE_STATUSES, NOTE_TYPES
from codexmem.render.markdown import RECORD_ID_RE, TOKEN_RE, mention_pattern
from codexmem.render.site.history import DETAILS_CACHE, git_versions, read_details, record_history
from codexmem.store.index import Index
from codexmem.store.layout import CHANNEL, HANDOFF, IMPORT, ITEM, KINDS, NOTE, SESSION
from codexmem.store.store import Store
from codexmem.timeutil import format_ts, utcnow

Rec = dict[str, Any]

ALL_EVENTS = 1_000_000_000
"""``events_after`` limit that means "all of them": the site reads the log in one query."""

MEMORY_FOLDERS = {"session": "sessions", "note": "notes", "handoff": "handoffs", "import": "imports"}
FALLBACK_COLOR = "#94a3b8"


def url_of(kind: str, rid: str, channel: str | None = None) -> str:
    """The permalink of a record, relative to the site root (a folder with index.html)."""
    if kind == "item":
        return f"channels/{channel}/{rid}/"
    if kind == "channel":
        return f"channels/{rid}/"
    return f"{MEMORY_FOLDERS[kind]}/{rid}/"


def file_slug(path: str) -> str:
    """A safe, stable folder name for a file path that anyone may have written."""
    readable = re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")[-60:].strip("-") or "file"
    digest = hashlib.sha256(path.encode("utf-8")).hexdigest()[:8]
    return f"{readable}-{digest}"


def text_color(hex_color: str) -> str:
    """Black or white, whichever reads better on ``hex_color`` (WCAG relative luminance)."""
    channels = [int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "#000000" if luminance > 0.179 else "#ffffff"


def safe_color(value: object) -> str:
    """The option's colour when it is a plain hex colour (it goes into a style attribute)."""
    return value.lower() if isinstance(value, str) and COLOR_RE.fullmatch(value) else FALLBACK_COLOR


@dataclass
class SiteData:
    """The whole store as the site sees it."""

    title: str
    now: datetime
    systems: list[Rec]
    projects: dict[str, Rec]
    records: dict[str, dict[str, Rec]]
    """kind name -> id -> record data (sessions, notes, handoffs, imports)."""
    channels: dict[str, Rec]
    """channel id -> public schema plus ``options`` lookups per field."""
    items: dict[str, dict[str, Rec]]
    """channel id -> item id -> item data with ``computed`` formula values."""
    events: list[Rec]
    """Every event, newest first."""
    history: dict[str, list[Rec]] = field(default_factory=dict)
    unknown_in_shallow: int = 0
    """Changes whose values nobody knows in a shallow clone: the full history may hold them."""
    backlinks: dict[str, list[Rec]] = field(default_factory=dict)
    tags: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, list[Rec]] = field(default_factory=dict)
    session_events: dict[str, list[Rec]] = field(default_factory=dict)
    refs: dict[str, Rec] = field(default_factory=dict)
    wrote: dict[str, dict[str, int]] = field(default_factory=dict)
    """session id -> how many notes and handoffs it wrote."""
    project_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    """project id -> its notes, sessions and handoffs, and its open handoffs (``open``)."""
    mention_urls: dict[str, str] = field(default_factory=dict)
    """Every record id and ticket a text may name -> its URL from the site root."""
    mention_re: re.Pattern[str] = RECORD_ID_RE
    mention_probes: tuple[str, ...] = ()
    """Substrings one of which every id or ticket contains: most texts hold none, and skip the search."""
    fields: dict[str, list[Rec]] = field(default_factory=dict)
    """channel id -> its fields as templates need them (made once per build)."""
    chips: dict[str, list[Rec]] = field(default_factory=dict)
    """channel id -> the CSS rules of its options' chips (made once per build)."""

    def mentions(self, *texts: str | None, root: str) -> dict[str, str]:
        """The ids and tickets ``texts`` name that the store holds, as URLs relative to a page.

        Part of a page's context, so a page that names a record is rendered again when that
        record appears or disappears.
        """
        found: dict[str, str] = {}
        for text in texts:
            if text and any(probe in text for probe in self.mention_probes):
                for word in self.mention_re.findall(text):
                    token = word.strip("._-")
                    url = self.mention_urls.get(token)
                    if url is not None:
                        found[token] = root + url
        return dict(sorted(found.items()))

    def ref(self, rid: str) -> Rec:
        """A small link to any record: kind, id, title, url; ``missing`` when it is not here."""
        found = self.refs.get(rid)
        if found is not None:
            return found
        return {
            "kind": rid.split("_", 1)[0],
            "id": rid,
            "title": rid,
            "url": None,
            "status": None,
            "project": None,
            "missing": True,
        }


# ------------------------------------------------------------------ loading


def build_day(moment: datetime | None = None) -> datetime:
    """The start (00:00 UTC) of the build's day: formulas move at most once a day."""
    current = (moment or utcnow()).astimezone(UTC)
    return current.replace(hour=0, minute=0, second=0, microsecond=0)


def load(store: Store, index: Index, *, now: datetime | None = None, cached: bool = True) -> SiteData:
    """Read every record and event once; compute refs, formulas, history and backlinks.

    ``index`` is the store's, brought up to date by the caller (``store.fresh_index(full=True)``:
    a full stat scan, run once per build). ``now`` (the time formulas are computed at) defaults
    to the start of the build's UTC day, never to the latest change: one change must not move
    every item's age. ``cached``: the events' values of unchanged shards come from
    ``.cache/site/`` (else every shard is read).
    """
    config = store.config
    records = {
        kind.name: {r[kind.id_field]: r for r in index.select(kind, order=[("id", False)])}
        for kind in (SESSION, NOTE, HANDOFF, IMPORT)
    }
    schemas = [ChannelSchema.model_validate(raw) for raw in index.select(CHANNEL, order=[("id", False)])]
    raw_items = {
        s.record_channel_id: index.select(ITEM, where={"channel": s.record_channel_id}, order=[("id", False)])
        for s in schemas
    }
    events = sorted(
        (_plain_event(e) for e in index.events_after(0, limit=ALL_EVENTS, present=True)),
        key=lambda e: (e["at"], e["event_id"]),
        reverse=True,
    )
    moment = now or build_day()
    data = SiteData(
        title=config.site.title or _default_title(store),
        now=moment,
        systems=[],
        projects={},
        records=records,
        channels={s.record_channel_id: _channel_info(s) for s in schemas},
        items={
            s.record_channel_id: {
                row["item_id"]: _with_formulas(s, row, moment) for row in raw_items[s.record_channel_id]
            }
            for s in schemas
        },
        events=events,
    )
    _collect_projects(data, store)
    _collect_refs(data)
    _collect_mentions(data)
    _collect_history(data, store, cached)
    _collect_links(data)
    return data


def _default_title(store: Store) -> str:
    config = store.config
    if config.system is not None:
        return f"{config.system.name} memory"
    if len(config.projects) == 1:
        return f"{config.projects[0].name} memory"
    return "codexmem"


def _plain_event(event: Rec) -> Rec:
    """An event without the index-local sequence (it differs between clones and rebuilds)."""
    return {
        "event_id": event["event_id"],
        "at": event["at"],
        "actor": event["actor"],
        "kind": event["kind"],
        "id": event["id"],
        "channel": event.get("record_channel_id"),
        "type": event["type"],
        "version": event["version"],
        "changed": list(event.get("changed") or []),
        "author": event.get("author") or "",
    }


def _channel_info(schema: ChannelSchema) -> Rec:
    info = schema.to_public()
    for f in info["fields"]:
        options = (f.get("config") or {}).get("options") or []
        f["options"] = {
            o["value"]: {
                "label": o["label"],
                "color": safe_color(o.get("color")),
                "fg": text_color(safe_color(o.get("color"))),
                "rank": rank,
            }
            for rank, o in enumerate(options)
        }
        f["option_list"] = [o["value"] for o in options]
    text_keys = [f["key"] for f in info["fields"] if f["type"] == "text"]
    unique = [f["key"] for f in info["fields"] if f["type"] == "text" and f.get("is_unique")]
    # The ticket: a unique text field names an item to people (``BUG-0012``).
    info["key_field"] = unique[0] if unique else None
    titles = [k for k in text_keys if k != info["key_field"]]
    info["title_key"] = "title" if "title" in titles else (titles[0] if titles else info["key_field"])
    selects = [f["key"] for f in info["fields"] if f["type"] == "select"]
    info["status_key"] = "status" if "status" in selects else None
    return info


def _with_formulas(schema: ChannelSchema, item: Rec, now: datetime) -> Rec:
    env = {**item.get("values", {}), "created_at": item["created_at"], "updated_at": item["updated_at"]}
    return {**item, "computed": schema.compute_formulas(env, now=now)}


def _collect_projects(data: SiteData, store: Store) -> None:
    """Projects and systems from the config, plus any the records name (a shared store)."""
    config = store.config
    systems: dict[str, Rec] = {}
    if config.system is not None:
        systems[config.system.id] = {"id": config.system.id, "name": config.system.name, "projects": []}
    for decl in config.projects:
        data.projects[decl.id] = {
            "id": decl.id,
            "name": decl.name,
            "system": decl.system,
            "remotes": list(decl.remotes),
            "relations": [r.model_dump(mode="json") for r in decl.relations],
        }
    for kind in ("session", "note", "handoff", "import"):
        for rec in data.records[kind].values():
            scope = rec["scope"]
            sid, pid = scope["system_id"], scope["project_id"]
            systems.setdefault(sid, {"id": sid, "name": sid, "projects": []})
            project = data.projects.setdefault(
                pid, {"id": pid, "name": pid, "system": None, "remotes": [], "relations": []}
            )
            if project["system"] is None:
                project["system"] = scope["system_id"]
    for pid in sorted(data.projects):
        project = data.projects[pid]
        project["url"] = f"projects/{pid}/"
        sid = project["system"] or ""
        systems.setdefault(sid, {"id": sid, "name": sid or "(no system)", "projects": []})
        systems[sid]["projects"].append(pid)
    data.systems = [systems[k] for k in sorted(systems, key=lambda s: (systems[s]["name"], s))]


def _collect_refs(data: SiteData) -> None:
    for note in data.records["note"].values():
        data.refs[note["note_id"]] = _ref("note", note["note_id"], note["title"], note["status"], note)
    for h in data.records["handoff"].values():
        data.refs[h["handoff_id"]] = _ref("handoff", h["handoff_id"], h["task"], h["status"], h)
    for s in data.records["session"].values():
        title = s["task"] or f"Session {s['started_at'][:10]}"
        data.refs[s["session_id"]] = _ref("session", s["session_id"], title, s["status"], s)
    for imp in data.records["import"].values():
        title = f"{imp['source'].replace('_', ' ')} {imp.get('external_id') or imp['import_id']}"
        status = "suppressed" if imp["suppressed"] else "imported"
        data.refs[imp["import_id"]] = _ref("import", imp["import_id"], title, status, imp)
    for cid, info in data.channels.items():
        data.refs[cid] = {
            "kind": "channel",
            "id": cid,
            "title": info["name"],
            "url": url_of("channel", cid),
            "status": None,
            "project": None,
        }
        key, ticket_key, status_key = info["title_key"], info["key_field"], info["status_key"]
        status_field = next((f for f in info["fields"] if f["key"] == status_key), None)
        for iid, item in data.items[cid].items():
            value = item["values"].get(key) if key else None
            title = str(value) if isinstance(value, str) and value.strip() else iid
            ticket = item["values"].get(ticket_key) if ticket_key else None
            state = item["values"].get(status_key) if status_key else None
            data.refs[iid] = {
                "kind": "item",
                "id": iid,
                "title": title,
                "url": url_of("item", iid, cid),
                "status": None,
                "status_label": _option_label(status_field, state),
                "ticket": ticket if isinstance(ticket, str) and ticket != title else None,
                "channel": info["name"],
                "project": None,
            }


def _option_label(field: Rec | None, value: object) -> str | None:
    if field is None or not isinstance(value, str):
        return None
    option = field["options"].get(value)
    return str(option["label"]) if option else value


def _collect_mentions(data: SiteData) -> None:
    """Ids of every record, and tickets that name exactly one item across the channels."""
    urls = {rid: ref["url"] for rid, ref in data.refs.items() if ref["kind"] != "channel"}
    seen: dict[str, int] = defaultdict(int)
    tickets: dict[str, str] = {}
    for cid, info in data.channels.items():
        key = info["key_field"]
        if key is None:
            continue
        for iid, item in data.items[cid].items():
            value = item["values"].get(key)
            if isinstance(value, str) and TOKEN_RE.fullmatch(value):
                seen[value] += 1
                tickets[value] = url_of("item", iid, cid)
    unique = {t: u for t, u in tickets.items() if seen[t] == 1 and t not in urls}
    urls.update(unique)
    data.mention_urls = urls
    data.mention_re, data.mention_probes = mention_pattern(unique)


def texts_of(values: Iterable[object]) -> list[str]:
    """The strings among values (and in lists of them), for :meth:`SiteData.mentions`."""
    out: list[str] = []
    for value in values:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, str))
    return out


def _ref(kind: str, rid: str, title: str, status: str, rec: Rec) -> Rec:
    return {
        "kind": kind,
        "id": rid,
        "title": title,
        "status": status,
        "url": url_of(kind, rid),
        "project": rec["scope"]["project_id"],
    }


def _collect_history(data: SiteData, store: Store, cached: bool = True) -> None:
    """Each record's events, oldest first, with the values each change set (the shards read once;
    git fills in events from before values were recorded); sessions also get the events they caused."""
    by_record: dict[str, list[Rec]] = defaultdict(list)
    by_session: dict[str, list[Rec]] = defaultdict(list)
    sessions = data.records["session"]
    for event in reversed(data.events):
        by_record[event["id"]].append(event)
        if event["actor"] in sessions:
            by_session[event["actor"]].append(event)
    cache = store.layout.cache / "site" / DETAILS_CACHE
    details = read_details(store.layout, cache, use=cached)
    lacking = {(e["kind"], e["id"]) for e in data.events if e["event_id"] not in details.values}
    from_git = git_versions(store.layout, lacking)
    shallow = bool(lacking) and is_shallow(discover_repository(store.root))
    for rid, events in by_record.items():
        events.sort(key=lambda e: (e["version"], e["at"], e["event_id"]))
        kind = KINDS[events[0]["kind"]]
        channel = events[0]["channel"]
        current = (
            data.items.get(channel or "", {}).get(rid) if kind is ITEM else data.records.get(kind.name, {}).get(rid)
        )
        versions = from_git.get((kind.name, rid), {})
        data.history[rid] = record_history(kind, events, details, versions, current, shallow)
        if shallow:
            data.unknown_in_shallow += sum(
                1 for row in data.history[rid] for change in row["changes"] if change["kind"] == "unknown"
            )
    data.session_events = {sid: list(reversed(evs)) for sid, evs in by_session.items()}


def _collect_links(data: SiteData) -> None:
    """Backlinks, tags and file mentions in one pass over the records."""
    links: dict[str, set[tuple[str, str]]] = defaultdict(set)
    tags: dict[str, set[str]] = defaultdict(set)
    files: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for nid, note in data.records["note"].items():
        links[note["session_id"]].add(("Notes it wrote", nid))
        if note.get("superseded_by"):
            links[note["superseded_by"]].add(("Supersedes", nid))
        for pid in note.get("related_project_ids") or []:
            links[pid].add(("Notes of other projects that relate to it", nid))
        for tag in note.get("tags") or []:
            tags[tag].add(nid)
        for path in note.get("file_paths") or []:
            files[path].add(("note", nid))
    for hid, handoff in data.records["handoff"].items():
        links[handoff["session_id"]].add(("Handoffs it wrote", hid))
        for nid in handoff.get("related_note_ids") or []:
            links[nid].add(("Handoffs that list it", hid))
        for path in handoff.get("files_touched") or []:
            files[path].add(("handoff", hid))
    for iid, imp in data.records["import"].items():
        links[imp["session_id"]].add(("Imports it recorded", iid))
        if imp.get("durable_memory_id"):
            links[imp["durable_memory_id"]].add(("Imports that materialized it", iid))
    for cid, info in data.channels.items():
        relations = [f for f in info["fields"] if f["type"] == "relation"]
        for f in relations:
            target_channel = (f.get("config") or {}).get("channel")
            if target_channel and target_channel != cid:
                links[target_channel].add(("Channels that relate to it", cid))
        for item_id, item in data.items[cid].items():
            for f in relations:
                for target in item["values"].get(f["key"]) or []:
                    if isinstance(target, str):
                        links[target].add((f"{info['name']} · {f['label']}", item_id))
    data.backlinks = {
        rid: [{"group": group, **data.ref(src)} for group, src in sorted(pairs, key=lambda p: (p[0], p[1]))]
        for rid, pairs in links.items()
    }
    data.tags = {tag: sorted(ids) for tag, ids in sorted(tags.items())}
    wrote: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for kind in ("note", "handoff"):
        for rec in data.records[kind].values():
            wrote[rec["session_id"]][kind] += 1
    data.wrote = {sid: dict(counts) for sid, counts in wrote.items()}
    in_project: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for kind in ("note", "session", "handoff"):
        for rec in data.records[kind].values():
            in_project[rec["scope"]["project_id"]][kind] += 1
            if kind == "handoff" and rec["status"] == "open":
                in_project[rec["scope"]["project_id"]]["open"] += 1
    data.project_counts = {pid: dict(counts) for pid, counts in in_project.items()}
    data.files = {path: [data.ref(rid) for _kind, rid in sorted(refs)] for path, refs in sorted(files.items())}


# ------------------------------------------------------------------ ordering helpers


def note_order(note: Rec) -> tuple[int, int, int]:
    """Type, then status (active first), then importance (high first)."""
    return NOTE_TYPES.index(note["type"]), NOTE_STATUSES.index(note["status"]), -int(note["importance"])


def handoff_rank(handoff: Rec) -> int:
    """Open handoffs first."""
    return HANDOFF_STATUSES.index(handoff["status"])


def newest_first(records: list[Rec], key: str, *then: Any) -> list[Rec]:
    """Sorted newest first on ``key`` (ties: larger id first), then stably by each ``then`` key."""
    out = sorted(records, key=lambda r: (str(r.get(key) or ""), _id_of(r)), reverse=True)
    for order in reversed(then):
        out.sort(key=order)
    return out


def _id_of(rec: Rec) -> str:
    for name in ("note_id", "handoff_id", "session_id", "import_id", "item_id", "event_id", "id"):
        if name in rec:
            return str(rec[name])
    return ""


def iso(moment: datetime) -> str:
    return format_ts(moment)
